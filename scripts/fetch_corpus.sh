#!/usr/bin/env bash
# Writes the default training corpus: the King James Bible (1611, public domain) as plain prose,
# one chapter per paragraph, from Debian's bible-kjv package (its `bible` command reads the text
# of bible-kjv-text; the packages' licence, and the text's, are in docs/DATA.md). About 4.1 MB.
# Idempotent: does nothing when the file is there. Usage: scripts/fetch_corpus.sh DEST_DIR
set -euo pipefail
dest=${1:?usage: fetch_corpus.sh DEST_DIR}
out=$dest/kjv.txt
[[ -s $out ]] && exit 0
command -v bible >/dev/null 2>&1 || { echo "fetch_corpus: the bible command is missing: run scripts/setup.sh (Debian package bible-kjv)" >&2; exit 1; }
mkdir -p "$dest"
tmp=$(mktemp "$dest/.kjv.XXXXXX")
trap 'rm -f "$tmp"' EXIT
# `bible -f` prints one verse a line, "Ge1:1 In the beginning ...": drop the reference, join a
# chapter's verses with spaces and end each chapter with a blank line.
bible -f "Gen1:1-Rev22:21" | awk '
  { split($1, ref, ":"); sub(/^[^ ]+ /, "")
    if (NR > 1) printf (ref[1] != chapter ? "\n\n" : " ")
    printf "%s", $0; chapter = ref[1] }
  END { print "" }' > "$tmp"
size=$(wc -c < "$tmp")
((size > 4000000)) || { echo "fetch_corpus: $out would have only $size bytes; is bible-kjv-text complete?" >&2; exit 1; }
mv "$tmp" "$out"
trap - EXIT
