#!/usr/bin/env bash
# The main job, as `make demo` runs it: the default corpus (the King James Bible, docs/DATA.md)
# tokenized, a small GPT-2 trained on it for a few minutes on the CPU with checkpoints, its loss
# curve drawn, the trained model compiled into an ANE package, and text generated from one
# prompt on the CPU and on ane-sim (the ANE's emulator; `--device ane` on a Mac), compared; then
# a few more training steps on ane-sim's kernels beside the same steps on the CPU.
# Every step is an `orion` command, printed before it runs, so it can be repeated by hand.
# Run again, it resumes: a finished training run is not repeated.
# Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
orion=$build/bin/orion
work=$build/demo
steps=${ORION_DEMO_STEPS:-1000}
mkdir -p "$work"

say() { printf '\n== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "The corpus: the King James Bible from Debian's bible-kjv (public domain)"
scripts/fetch_corpus.sh "$build/corpus"
books=("$build"/corpus/kjv-books/*.txt)
echo "$build/corpus/kjv-books: ${#books[@]} books, $(cat "${books[@]}" | wc -c) bytes"

say "A new GPT-2 (4 layers of 256, byte-level vocabulary) and the corpus as tokens (5% of each book held out)"
run "$orion" init --out "$work/model" --layers 4 --dim 256 --heads 4 --context 256 --seed 1 --force
[[ -s $work/kjv-books.tokens ]] || run "$orion" data prepare -m "$work/model" --in "${books[@]}" --out "$work/kjv-books.tokens"

say "Training on the CPU: $steps steps of 8 x 128 tokens, AdamW, warm-up and cosine"
run "$orion" train -m "$work/model" --data "$work/kjv-books.tokens" --out "$work/run" --steps "$steps" --batch 8 --seq 128 \
  --lr 2e-3 --warmup 30 --eval-every 100 --save-every 250 --resume
final=$(printf '%s/run/step-%08d' "$work" "$steps")

say "The loss curves"
run "$orion" plot "$work/run/metrics.jsonl" --out "$work/loss.svg" --title "GPT-2 4x256 on the King James Bible"

say "The trained model compiled for the ANE"
run "$orion" compile -m "$final" --target ane -o "$work/model.anepkg" --seq 64 --force

say "Generating from one prompt, greedily, on the CPU and on ane-sim"
prompt="And God said"
generate() { printf '$ %s\n' "$orion generate -m $final -p \"$prompt\" -n 96 --temp 0 $*" >&2; "$orion" generate -m "$final" -p "$prompt" -n 96 --temp 0 "$@"; }
cpu=$(generate --device cpu)
echo "$cpu"
sim=$(generate --device ane-sim --package "$work/model.anepkg")
echo "$sim"
if [[ $cpu == "$sim" ]]; then
  echo "cpu and ane-sim generated the same text"
else
  same=0
  while [[ ${cpu:same:1} == "${sim:same:1}" && $same -lt ${#cpu} ]]; do same=$((same + 1)); done
  echo "cpu and ane-sim agree on the first $same characters; then fp16 rounding tipped a near-tie the other way"
fi

say "Training on ane-sim: 20 more steps with the forward and backward passes as kernels on the emulated ANE, beside the same steps on the CPU in the ANE's fp16 numerics"
tune=(--data "$work/kjv-books.tokens" --steps 20 --batch 4 --seq 128 --lr 1e-4 --warmup 0 --eval-every 20 --resume)
run "$orion" train -m "$final" "${tune[@]}" --out "$work/tune-cpu" --precision f16
run "$orion" train -m "$final" "${tune[@]}" --out "$work/tune-ane-sim" --device ane-sim
echo "ane-sim, weights as kernel inputs (each kernel compiled once, the weights written each step): $work/tune-ane-sim/summary.json"
cat "$work/tune-ane-sim/summary.json"
run "$orion" plot "$work/tune-cpu/metrics.jsonl" "$work/tune-ane-sim/metrics.jsonl" --label "cpu f16" --label "ane-sim" \
  --out "$work/tune.svg" --title "20 steps on the CPU (fp16 numerics) and on ane-sim"
echo
echo "model: $final    loss plot: $work/loss.svg    metrics: $work/run/metrics.jsonl    ane-sim run: $work/tune.svg"
