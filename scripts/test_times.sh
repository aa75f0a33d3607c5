#!/usr/bin/env bash
# Prints the slowest tests of a build's last ctest run, with their seconds as ctest itself
# measured them (Testing/Temporary/CTestCostData.txt: each test's mean over its runs), and the
# sum of all tests' seconds, which is the suite's cost on one core.
# Usage: scripts/test_times.sh [BUILD_DIR (build)] [COUNT (25)]
set -euo pipefail
build=${1:-build}
count=${2:-25}
cost=$build/Testing/Temporary/CTestCostData.txt
[[ -f $cost ]] || { echo "test_times: $cost: no such file (run ctest in $build first)" >&2; exit 2; }
[[ $count =~ ^[0-9]+$ ]] || { echo "test_times: COUNT must be a whole number, not '$count'" >&2; exit 2; }
# The file lists "NAME RUNS MEAN_SECONDS" a line (a parameterized test's NAME has spaces), then a
# line "---" and the failed tests' names.
awk '/^---$/ {exit} NF >= 3 {cost = $NF; NF -= 2; print cost, $0}' "$cost" | sort -rn |
  awk -v n="$count" '{sum += $1; tests++; if (NR <= n) rows[NR] = sprintf("%8.1f  %s", $1, $2)}
       END {printf "%8s  %s\n", "seconds", "test (slowest " (n < tests ? n : tests) " of " tests ")";
            for (i = 1; i <= (n < tests ? n : tests); i++) print rows[i];
            printf "%8.1f  all %d tests, one after another\n", sum, tests}'
