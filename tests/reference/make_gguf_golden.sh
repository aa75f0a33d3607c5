#!/usr/bin/env bash
# Regenerates the golden logits of GGUF files (tests/reference/golden/gguf_*.json) over
# golden_gguf_models.txt: each folder made by orion init, its GGUF file by make_gguf.py, the
# logits by gguf_reference.py (numpy's reader and dequantisers, torch in float64). Run by
# make_golden.sh; alone: tests/reference/make_gguf_golden.sh [BUILD_DIR].
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
orion=$build/bin/orion
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
while IFS='|' read -r head init; do
  [[ -z ${head// } || $head == \#* ]] && continue
  read -r name seed gguf_options <<<"$head"
  # shellcheck disable=SC2086  # the options are words
  $orion init --out "$tmp/$name" --seed "$seed" $init >/dev/null
  # shellcheck disable=SC2086
  sha=$($py tests/reference/make_gguf.py "$tmp/$name" "$tmp/$name.gguf" $gguf_options | sed -n 's/^sha256 //p')
  vocab=$($py -c "import json; print(json.load(open('$tmp/$name/config.json'))['vocab_size'])")
  tokens=$($py -c "print(','.join(str((i * 7919 + 13) % $vocab) for i in range(40)))")
  (cd tests/reference && $py gguf_reference.py "$tmp/$name.gguf" "$seed" "$tokens" "golden/gguf_$name.json" \
    "$tmp/$name/config.json" "$gguf_options" "$sha")
  rm -rf "${tmp:?}/$name" "$tmp/$name.gguf"
  echo "wrote tests/reference/golden/gguf_$name.json"
done < tests/reference/golden_gguf_models.txt
