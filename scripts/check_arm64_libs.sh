#!/usr/bin/env bash
# Checks that every shared library the arm64 build's binaries load is one that scripts/setup.sh
# provides: qemu-aarch64 runs them with the arm64 loader, which looks in the multiarch folders
# (and a binary's RUNPATH) only, and a library that was there on one machine because something
# else had installed it fails every test on a fresh one.
# For each ELF file under BUILD/bin and BUILD/lib, each DT_NEEDED library, followed through the
# libraries it loads in turn, must
#   1. be found where the arm64 loader looks, and
#   2. belong to a package of `setup.sh --print --arm64`, or to one they depend on (recursively),
#      or lie under BUILD/sysroot, where setup.sh unpacks the packages it cannot install.
# Usage: scripts/check_arm64_libs.sh BUILD     (exit 1 and a line per problem otherwise)
set -euo pipefail
build=${1:?usage: check_arm64_libs.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
[[ -d $build/bin ]] || { echo "check_arm64_libs: $build/bin: no such folder (build it first)" >&2; exit 2; }
sysroot=$(cd "$build" && pwd)/sysroot
loader_dirs=(/lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)

# The packages setup.sh installs, and everything they depend on, as name:arch.
declare -A provided=()
queue=()
native=$(dpkg --print-architecture)
while read -r p; do
  [[ $p == *:* ]] || p=$p:$native
  queue+=("$p")
done < <("$here/setup.sh" --print --arm64)
while ((${#queue[@]})); do
  p=${queue[0]}; queue=("${queue[@]:1}")
  [[ -n ${provided[$p]:-} ]] && continue
  provided[$p]=1
  arch=${p#*:}
  deps=$(dpkg-query -W -f='${Depends}, ${Pre-Depends}' "$p" 2>/dev/null) || continue
  # "a (>= 1), b | c, d:any": every alternative that is installed counts.
  while read -r d; do
    d=${d%%(*}; d=${d// /}; d=${d%:any}
    [[ -z $d ]] && continue
    for cand in "$d:$arch" "$d:$native" "$d:all"; do
      if dpkg-query -W -f='${db:Status-Status}' "$cand" 2>/dev/null | grep -qx installed; then
        queue+=("$cand"); break
      fi
    done
  done < <(tr ',|' '\n\n' <<<"$deps")
done

problems=0
declare -A seen=()
# check FILE WHO: resolves FILE's needed libraries, then theirs.
check() {
  local file=$1 who=$2 runpath lib path owner dir
  runpath=$(readelf -d "$file" | sed -n 's/.*(RUN\?PATH).*\[\(.*\)\]/\1/p' | tr ':' ' ')
  for lib in $(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [[ -n ${seen[$lib]:-} ]] && continue
    seen[$lib]=1
    path=
    for dir in $runpath "${loader_dirs[@]}"; do
      [[ -e $dir/$lib ]] && { path=$(readlink -f "$dir/$lib"); break; }
    done
    if [[ -z $path ]]; then
      echo "check_arm64_libs: $who needs $lib, which is in none of: ${runpath:+$runpath }${loader_dirs[*]}" >&2
      problems=$((problems + 1)); continue
    fi
    if [[ $path != "$sysroot"/* ]]; then
      # dpkg knows the path it unpacked, which may differ from the resolved one by /usr merge.
      owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "${path#/usr}" 2>/dev/null || true)
      owner=${owner%%: *}
      if [[ -z $owner ]]; then
        echo "check_arm64_libs: $who needs $lib ($path), which no package installed" >&2
        problems=$((problems + 1))
      elif [[ -z ${provided[$owner]:-} ]]; then
        echo "check_arm64_libs: $who needs $lib from $owner, which scripts/setup.sh --arm64 does not install (add it to its list)" >&2
        problems=$((problems + 1))
      fi
    fi
    check "$path" "$who (through $lib)"
  done
}

count=0
while IFS= read -r -d '' f; do
  [[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] || continue
  check "$f" "${f#"$build"/}"
  count=$((count + 1))
done < <(find "$build/bin" "$build/lib" -maxdepth 1 -type f -print0 2>/dev/null)
((count)) || { echo "check_arm64_libs: no ELF files under $build/bin" >&2; exit 2; }
if ((problems)); then
  echo "check_arm64_libs: $problems libraries the arm64 binaries load are not provided by scripts/setup.sh" >&2
  exit 1
fi
echo "check_arm64_libs: ${#seen[@]} libraries of $count arm64 binaries, each from a package setup.sh installs"
