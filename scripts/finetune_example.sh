#!/usr/bin/env bash
# The worked example of fine-tuning on your own chat data (README.md, "Fine-tuning on your own
# data"): a Qwen3-shaped model folder with the real tokenizer and chat template
# (make_hf_folder.sh), a generated chat dataset in the JSONL layout (make_chat_dataset.py),
# a LoRA adapter trained on the assistant's answers only, then a question to the result.
#
# Usage: scripts/finetune_example.sh [WORK_DIR] [DEVICE]
#   WORK_DIR  where the model, data and run go (default: a new folder under /tmp)
#   DEVICE    cpu (default) or ane-sim
# ORION (default build/bin/orion) may be set. The model is 2 layers of width 128 with random
# weights, so the run takes a minute on two cores; give your own model folder to
# `orion train -m` to fine-tune a real one the same way.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/orion-finetune-XXXXXX)}
device=${2:-cpu}
orion=${ORION:-$here/build/bin/orion}
mkdir -p "$work"

ORION=$orion "$here/scripts/make_hf_folder.sh" qwen3 "$work/model"
python3 "$here/scripts/make_chat_dataset.py" "$work/chat" --records 400
"$orion" data stats "$work/chat" -m "$work/model" --mask-prompt --seq 64

"$orion" train -m "$work/model" --data "$work/chat" --lora 8 --mask-prompt --device "$device" \
  --steps 60 --batch 8 --seq 64 --lr 5e-3 --eval-every 20 --test --out "$work/run"
adapter=$(ls -d "$work"/run/step-* | tail -1)
"$orion" perplexity -m "$work/model" --lora "$adapter" --data "$work/chat/test.jsonl" --mask-prompt
echo "What is the capital of Peru?" | "$orion" chat -m "$work/model" --lora "$adapter" -n 16 --temp 0
echo "finetune_example: the model, data and run are in $work"
