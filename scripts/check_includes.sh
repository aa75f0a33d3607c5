#!/usr/bin/env bash
# Compiles every source file and header of src/ and tools/ on its own, for syntax only, with
# clang and libc++: each must include what it uses. The builds compile files sixteen or seven to
# a unit (docs/RELIABILITY.md), where one file's includes serve the next, and libstdc++'s headers
# include more of the library than the standard promises; libc++, Apple's, includes less, so a
# missing <algorithm> or <cstring> shows here, as it would on a Mac.
# The Apple half of the ane bridge is left to scripts/check_ane_bridge.sh, which compiles it
# against the declarations in tests/apple_sdk.
# Usage: scripts/check_includes.sh LIBCXX_DEPS   (the prefix scripts/libcxx_deps.sh filled)
set -euo pipefail
deps=${1:?usage: check_includes.sh LIBCXX_DEPS}
cd "$(dirname "$0")/.."
[[ -d $deps/include ]] || { echo "check_includes: $deps/include: no such folder (scripts/libcxx_deps.sh fills it)" >&2; exit 2; }
deps=$(cd "$deps" && pwd)
# The C libraries' and header-only libraries' flags, as the build has them.
# A header compiled alone is a main file: its unused constants are no news there.
flags=(-std=c++20 -stdlib=libc++ -fsyntax-only -Wall -Wextra -Werror -Wno-pragma-once-outside-header
       -Wno-unused-const-variable -fopenmp=libomp -DORION_GEMM_CBLAS=0
       -Isrc -Itools/orion -isystem "$deps/include"
       $(PKG_CONFIG_PATH=$deps/lib/pkgconfig pkg-config --cflags libutf8proc libpcre2-8 libxxhash cpp-httplib))
# Every .cpp file, and the headers no .cpp file includes first (a .cpp file's first include is its
# own header, so compiling the .cpp checks the header too). Not the q8 and q4 kernels' bodies, which
# their including files complete with a target attribute and a lane-sum type.
files=$(git ls-files 'src/*.cpp' 'tools/*.cpp' | grep -v '^src/device/ane_bridge_apple')
for h in $(git ls-files 'src/*.h' 'tools/*.h' | grep -v -e '^src/device/ane_bridge_apple' -e '^src/exec/cpu/gemv_q[48]_[a-z0-9]*\.h$'); do
  c=${h%.h}.cpp name=${h#src/}
  name=${name#tools/orion/}
  [[ -f $c ]] && head -c 4096 "$c" | grep -m1 '^#include' | grep -qF "\"$name\"" && continue
  files+=$'\n'$h
done
count=$(wc -l <<<"$files")
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# One clang a file, as many at once as there are cores; a file's errors stay together.
if ! xargs -P "$(nproc)" -I{} sh -c 'out=$(clang++ "$@" -x c++ "{}" 2>&1) || { printf "%s\n" "$out"; exit 1; }' sh "${flags[@]}" \
    <<<"$files" >"$log" 2>&1; then
  cat "$log" >&2
  echo "check_includes: some of the $count files do not compile on their own with libc++ (above)" >&2
  exit 1
fi
echo "check_includes: each of the $count files of src/ and tools/ compiles on its own with libc++"
