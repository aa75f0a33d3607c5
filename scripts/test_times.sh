#!/usr/bin/env bash
# Prints the slowest tests of a build's last ctest run with their seconds, as ctest measured
# them (Testing/Temporary/LastTest.log: "N/M Testing: NAME", then "Test time = S sec"), and the
# sum of all the run's tests, which is the suite's cost on one core.
# Usage: scripts/test_times.sh [BUILD_DIR (build)] [COUNT (25)]
set -euo pipefail
build=${1:-build}
count=${2:-25}
log=$build/Testing/Temporary/LastTest.log
[[ -f $log ]] || { echo "test_times: $log: no such file (run ctest in $build first)" >&2; exit 2; }
[[ $count =~ ^[0-9]+$ ]] || { echo "test_times: COUNT must be a whole number, not '$count'" >&2; exit 2; }
awk '/^[0-9]+\/[0-9]+ Testing: / {sub(/^[0-9]+\/[0-9]+ Testing: /, ""); name = $0}
     /^Test time = / {print $4, name}' "$log" | sort -rn |
  awk -v n="$count" '{sum += $1; tests++; if (NR <= n) rows[NR] = $0}
       END {shown = n < tests ? n : tests
            printf "%8s  %s\n", "seconds", "test (slowest " shown " of " tests ")"
            for (i = 1; i <= shown; i++) {s = rows[i]; sub(/ .*/, "", s); t = rows[i]; sub(/^[^ ]* /, "", t); printf "%8.1f  %s\n", s, t}
            printf "%8.1f  all %d tests, one after another\n", sum, tests}'
