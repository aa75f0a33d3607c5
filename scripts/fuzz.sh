#!/usr/bin/env bash
# Runs every fuzz target (FUZZ_BUILD/bin/*_fuzz, or the ones named) for SECONDS each, as many at
# a time as FUZZ_JOBS (default: the number of CPUs), each in one process (libFuzzer's default;
# -jobs would fork workers that log to ./fuzz-N.log), and prints each one's executions. Each
# target starts from its seeds (scripts/fuzz_seeds.sh, made with ORION) plus what earlier runs
# added to its corpus in FUZZ_BUILD/corpus/NAME. A crash, hang (-timeout), leak or sanitizer
# report leaves the input in FUZZ_BUILD/artifacts/ and makes the script exit 1 after the
# remaining targets have run.
# Usage: scripts/fuzz.sh ORION FUZZ_BUILD SECONDS [NAME...]   (NAME as in fuzz/NAME_fuzz.cpp)
set -uo pipefail
orion=$1 build=$(realpath "$2") seconds=$3
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/fuzz_seeds.sh" "$orion" "$build/seeds" || exit 1
mkdir -p "$build/artifacts" "$build/logs"
export ORION_FUZZ_MIL_FOLDER=$build/seeds/mil_folder
export ORION_FUZZ_CHECKPOINT_FOLDER=$build/seeds/checkpoint_folder
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

names=("$@")
if ((${#names[@]} == 0)); then
  for f in "$build"/bin/*_fuzz; do n=$(basename "$f"); names+=("${n%_fuzz}"); done
fi
# One target: its status goes to logs/NAME.status for the report below.
fuzz_one() {
  local name=$1 corpus=$build/corpus/$1 log=$build/logs/$1.log
  mkdir -p "$corpus"
  # -timeout: an input that takes over 30 s of wall time is a hang (every seed takes milliseconds;
  # 10 s tripped on a starved run on a loaded machine, docs/RELIABILITY.md); -rss_limit_mb: one
  # over 2 GB is a finding.
  "$build/bin/${name}_fuzz" "$corpus" "$build/seeds/$name" -max_total_time="$seconds" -timeout=30 \
    -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$name-" >"$log" 2>&1
  echo $? >"$build/logs/$name.status"
}

parallel=${FUZZ_JOBS:-$(nproc)}
for name in "${names[@]}"; do
  rm -f "$build/logs/$name.status"
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n; done
  fuzz_one "$name" &
done
wait

failed=()
for name in "${names[@]}"; do
  log=$build/logs/$name.log
  status=$(cat "$build/logs/$name.status" 2>/dev/null || echo "?")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [[ $status != 0 ]]; then
    failed+=("$name")
    echo "fuzz $name: FAILED (exit $status) after ${execs:-?} executions; log $log:" >&2
    grep -m 20 -E 'ERROR|SUMMARY|runtime error|Test unit written|==[0-9]+==' "$log" >&2
  else
    echo "fuzz $name: ${execs:-?} executions in $seconds s, no crash, hang, leak or sanitizer report"
  fi
done
if ((${#failed[@]} > 0)); then
  echo "fuzz: failures in ${failed[*]}" >&2
  exit 1
fi
