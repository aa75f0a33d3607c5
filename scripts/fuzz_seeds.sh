#!/usr/bin/env bash
# Writes the fuzzers' seed corpora: valid files that Orion itself writes, made fresh with the
# built `orion` (so they follow the formats as they are today), plus the small hand-written
# text seeds in fuzz/seeds/NAME/. One folder per fuzz target: OUT/NAME/ for fuzz/NAME_fuzz.cpp.
# A new target adds its files here. Usage: scripts/fuzz_seeds.sh ORION_BINARY OUT
set -euo pipefail
orion=$(realpath "$1")
out=$2
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$out"
mkdir -p "$out"
for d in "$here"/fuzz/seeds/*/; do mkdir -p "$out/$(basename "$d")" && cp "$d"/* "$out/$(basename "$d")/"; done

# Runs orion quietly, showing its output only when it fails.
quiet() { "$orion" "$@" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }; }

# A tiny model (byte-level tokenizer), its f16 and q8 conversions, and its ANE package.
quiet init -o "$work/m" --layers 1 --dim 32 --heads 2 --context 16
quiet convert -m "$work/m" --dtype f16 -o "$work/m16"
quiet convert -m "$work/m" --dtype q8 -o "$work/m8"
quiet compile -m "$work/m" --target ane --seq 8 -o "$work/pkg"
quiet compile -m "$work/m" --target ane --seq 8 --weights lut4 --weight-block 0 -o "$work/pkg4"
# A token file of a short text and two training steps on it: a checkpoint and a metrics file.
printf 'In the beginning God created the heaven and the earth. And the earth was without form.\n' >"$work/text.txt"
quiet data prepare -m "$work/m" --in "$work/text.txt" --out "$work/tokens.bin" --val-fraction 0.3
quiet train -m "$work/m" --data "$work/tokens.bin" --out "$work/run" --steps 2 --batch 1 --seq 8 --save-every 2 \
  --eval-every 1 --eval-batches 1
# A record file (token file version 2) of JSONL prompt/completion records, the prompt masked.
mkdir -p "$work/jsonl"
for split in train valid test; do
  printf '{"prompt": "In the beginning ", "completion": "God created the heaven."}\n{"prompt": "And the earth ", "completion": "was without form."}\n' \
    >"$work/jsonl/$split.jsonl"
done
quiet data prepare -m "$work/m" --in "$work/jsonl" --out "$work/records.tok" --mask-prompt
# A SentencePiece vocabulary of the same text and a Llama model using it.
quiet tokenizer train --vocab 64 --in "$work/text.txt" --out "$work/spm" --threads 1
quiet init --arch llama -o "$work/llama" --layers 1 --dim 32 --heads 2 --kv-heads 1 --context 16 --tokenizer "$work/spm"

mkdir -p "$out"/{safetensors,gpt2_config,bpe_tokenizer,ir_parser,mil,weight_blob,ane_manifest,token_file,checkpoint,metrics,llama_config,sentencepiece,npy}
for m in m m16 m8; do
  cp "$work/$m/model.safetensors" "$out/safetensors/$m.safetensors"
  cp "$work/$m/config.json" "$out/gpt2_config/$m.json"
done
# The tokenizer target reads vocab.json, a NUL byte, then merges.txt. init's tokenizer has no
# merges, so a second seed adds three (and their tokens) to it.
{ cat "$work/m/vocab.json"; printf '\0'; cat "$work/m/merges.txt"; } >"$out/bpe_tokenizer/byte_level"
{ sed '$d' "$work/m/vocab.json" | sed '$s/$/,/'
  printf '  "\\u0120t": 257,\n  "he": 258,\n  "\\u0120the": 259\n}\n\0#version: 0.2\n\xc4\xa0 t\nh e\n\xc4\xa0t he\n'
} >"$out/bpe_tokenizer/three_merges"
for f in "$work"/pkg/*/graph.ir; do cp "$f" "$out/ir_parser/$(basename "$(dirname "$f")").ir"; done
for f in "$work"/pkg/*/model.mil; do cp "$f" "$out/mil/$(basename "$(dirname "$f")").mil"; done
# The prefill kernel's weights (over 1 MB) would slow every mutation; the others are small.
for f in "$work"/pkg/decode_*/weights/weight.bin; do cp "$f" "$out/weight_blob/$(basename "$(dirname "$(dirname "$f")")").bin"; done
cp "$work/pkg/host_weights.bin" "$out/weight_blob/host_weights.bin"
# A kernel's 4-bit weights: uint4 codes and fp16 tables (model.mil's text is the hand-written seeds').
cp "$work/pkg4/decode_ane0/weights/weight.bin" "$out/weight_blob/decode_ane0_lut4.bin"
# .npy files as `orion mil run` writes them: a kernel's inputs and outputs.
quiet mil run "$work/pkg/decode_ane0" --out "$work/mil-run"
cp "$work"/mil-run/*.npy "$work"/mil-run/inputs/*.npy "$out/npy/"
cp "$work/pkg/manifest.json" "$out/ane_manifest/manifest.json"
# The MIL target resolves BLOBFILE paths in this kernel folder (scripts/fuzz.sh sets it).
rm -rf "$out/mil_folder" && cp -r "$work/pkg/decode_ane1" "$out/mil_folder"
cp "$work/tokens.bin" "$out/token_file/tokens.bin"
cp "$work/records.tok" "$out/token_file/records.tok"
cp "$work/run/metrics.jsonl" "$out/metrics/metrics.jsonl"
# The checkpoint target writes its input as checkpoint.json into a copy of this folder.
cp "$work/run/step-00000002/checkpoint.json" "$out/checkpoint/checkpoint.json"
rm -rf "$out/checkpoint_folder" && cp -r "$work/run/step-00000002" "$out/checkpoint_folder"
cp "$work/llama/config.json" "$out/llama_config/llama.json"
cp "$work/spm/tokenizer.model" "$out/sentencepiece/tokenizer.model"
# GGUF files (tests/reference/make_gguf.py): the SentencePiece Llama in Q4_0 with a Q8_0
# embedding; a Qwen3 of width 256 (the K-quants' rows), one layer, GPT-2's byte-level vocabulary,
# in Q4_K with a Q6_K embedding and a Q5_K head; its tokenizer alone.
mkdir -p "$out/gguf"
make_gguf() { /usr/bin/python3 "$here/tests/reference/make_gguf.py" "$@" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }; }
quiet init --arch qwen3 -o "$work/qwen3" --layers 1 --dim 256 --heads 2 --kv-heads 1 --head-dim 128 --hidden 256 --context 16 --vocab 260
make_gguf "$work/llama" "$out/gguf/llama_spm_q4_0.gguf" --matrices Q4_0 --embed Q8_0
make_gguf "$work/qwen3" "$out/gguf/qwen3_k.gguf" --matrices Q4_K --embed Q6_K --output Q5_K
make_gguf "$work/qwen3" "$out/gguf/tokenizer.gguf" --tokenizer-only
