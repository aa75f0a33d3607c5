#!/usr/bin/env bash
# Compile-only check of the Apple bridge (src/device/ane_bridge_apple.cpp) on a machine without
# the macOS SDK: its syntax and every Apple call's types, against the declarations in
# tests/apple_sdk, with the warnings CI turns into errors. CTest runs it as
# ane_bridge_apple_compiles. Usage: scripts/check_ane_bridge.sh [C++ COMPILER] (default: $CXX or c++).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cxx="${1:-${CXX:-c++}}"
"$cxx" -fsyntax-only -std=c++20 -Wall -Wextra -Wpedantic -Werror \
  -I "$root/tests/apple_sdk" -I "$root/src" "$root/src/device/ane_bridge_apple.cpp"
echo "src/device/ane_bridge_apple.cpp compiles with $cxx against tests/apple_sdk"
