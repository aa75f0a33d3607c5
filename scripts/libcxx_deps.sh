#!/usr/bin/env bash
# Builds the C++ libraries Orion links, against LLVM's libc++ instead of GCC's libstdc++, into
# PREFIX: the libc++ build (make test-sanitize, docs/PLATFORMS.md) is the nearest this machine
# comes to Apple's toolchain, and a C++ library's interface (std::string, std::vector) differs
# between the two standard libraries, so Debian's binaries of these cannot be linked there.
#   GoogleTest     from /usr/src/googletest (libgtest-dev, the version installed)
#   SentencePiece  from Debian's source package of the version installed, its patches applied,
#                  with its bundled protobuf-lite
#   cpp-httplib    from Debian's source package likewise, header-only (Debian's binary package
#                  is the compiled split form)
# C libraries (oneDNN's C API, OpenBLAS, PCRE2, utf8proc, xxHash, expat) need nothing.
# Debian's source packages are fetched through a private deb-src list built from the system's
# own sources; the system's apt configuration is not changed.
# Idempotent: PREFIX/.built records the versions and flags it built with.
# Usage: scripts/libcxx_deps.sh PREFIX [COMPILER FLAGS...]   (e.g. -fsanitize=address)
set -euo pipefail
prefix=${1:?usage: libcxx_deps.sh PREFIX [COMPILER FLAGS...]}
shift
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
flags="-stdlib=libc++ $*"
spm_version=$(dpkg-query -W -f='${source:Version}' libsentencepiece-dev)
httplib_version=$(dpkg-query -W -f='${source:Version}' libcpp-httplib-dev:"$(dpkg --print-architecture)")
gtest_version=$(dpkg-query -W -f='${Version}' libgtest-dev:"$(dpkg --print-architecture)")
want="googletest $gtest_version, sentencepiece $spm_version, cpp-httplib $httplib_version, flags $flags"
if [[ -f $prefix/.built && $(<"$prefix/.built") == "$want" ]]; then exit 0; fi
echo "libcxx_deps: building GoogleTest, SentencePiece and cpp-httplib against libc++ into $prefix"
for cmd in clang++ dpkg-source; do
  command -v "$cmd" >/dev/null || { echo "libcxx_deps: $cmd is missing (scripts/setup.sh installs it)" >&2; exit 1; }
done
[[ -d /usr/src/googletest ]] || { echo "libcxx_deps: /usr/src/googletest is missing (libgtest-dev)" >&2; exit 1; }
work=$prefix/work
rm -rf "$work" "$prefix/include" "$prefix/lib"
mkdir -p "$work/apt/lists/partial" "$work/apt/sources.list.d" "$work/apt/archives/partial"
export CC=clang CXX=clang++ CXXFLAGS="$flags" LDFLAGS="-stdlib=libc++ $*"
jobs=$(nproc)
cmake_build() {  # SRC BUILD [CMAKE OPTIONS...]
  local src=$1 build=$2; shift 2
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_POSITION_INDEPENDENT_CODE=ON -Wno-dev "$@" >"$build.log" 2>&1 ||
    { tail -20 "$build.log" >&2; exit 1; }
  cmake --build "$build" -j "$jobs" >>"$build.log" 2>&1 && cmake --install "$build" >>"$build.log" 2>&1 ||
    { tail -30 "$build.log" >&2; exit 1; }
}

# GoogleTest without GoogleMock, which no test uses.
cmake_build /usr/src/googletest "$work/googletest" -DBUILD_GMOCK=OFF

# The system's package sources, as source-package sources.
for f in /etc/apt/sources.list.d/*.sources; do
  [[ -f $f ]] && sed 's/^Types:.*/Types: deb-src/' "$f" >"$work/apt/sources.list.d/$(basename "$f")"
done
if [[ -f /etc/apt/sources.list ]]; then
  sed -n 's/^deb \(.*\)/deb-src \1/p' /etc/apt/sources.list >"$work/apt/sources.list"
else
  : >"$work/apt/sources.list"
fi
apt_opts=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o "Dir::Etc::SourceParts=$work/apt/sources.list.d"
          -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache::Archives=$work/apt/archives" -o "APT::Sandbox::User=root")
apt-get "${apt_opts[@]}" -qq update
(cd "$work" && apt-get "${apt_opts[@]}" -qq source "sentencepiece=$spm_version" "cpp-httplib=$httplib_version" >apt-source.log 2>&1) ||
  { tail -20 "$work/apt-source.log" >&2; exit 1; }

spm_src=$(find "$work" -maxdepth 1 -type d -name 'sentencepiece-*' | head -1)
# The two shared libraries only, as Debian installs them (the build tree's run-time path finds
# them): its default targets compile every source a second time for the static libraries, and
# link the spm_* programs, none of which Orion uses. Installed by hand, as `cmake --install`
# wants every target built; without the build tree's run-time path, which goes with the tree.
spm_build=$work/sentencepiece
cmake -S "$spm_src" -B "$spm_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPM_ENABLE_TCMALLOC=OFF -DCMAKE_SKIP_BUILD_RPATH=ON -Wno-dev \
  >"$spm_build.log" 2>&1 || { tail -20 "$spm_build.log" >&2; exit 1; }
cmake --build "$spm_build" -j "$jobs" --target sentencepiece sentencepiece_train >>"$spm_build.log" 2>&1 ||
  { tail -30 "$spm_build.log" >&2; exit 1; }
mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
install -m 644 "$spm_src/src/sentencepiece_processor.h" "$spm_src/src/sentencepiece_trainer.h" "$prefix/include/"
cp -P "$spm_build"/src/libsentencepiece.so* "$spm_build"/src/libsentencepiece_train.so* "$prefix/lib/"
sed "s|^prefix=.*|prefix=$prefix|" "$spm_build/sentencepiece.pc" >"$prefix/lib/pkgconfig/sentencepiece.pc"
[[ -f $prefix/lib/libsentencepiece.so && -f $prefix/lib/libsentencepiece_train.so ]] ||
  { echo "libcxx_deps: SentencePiece built no library into $spm_build/src" >&2; exit 1; }

httplib_src=$(find "$work" -maxdepth 1 -type d -name 'cpp-httplib-*' | head -1)
install -m 644 "$httplib_src/httplib.h" "$prefix/include/httplib.h"
# Debian's package config, less the library: the header holds the implementation.
sed -e '/^Libs:/d' -e 's/^Libs.private:/Libs:/' -e 's/^Requires.private:/Requires:/' -e "s|^prefix=.*|prefix=$prefix|" -e 's|^libdir=.*|libdir=${prefix}/lib|' \
  /usr/lib/"$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)"/pkgconfig/cpp-httplib.pc \
  >"$prefix/lib/pkgconfig/cpp-httplib.pc"

rm -rf "$work"
echo "$want" >"$prefix/.built"
echo "libcxx_deps: done"
