#!/usr/bin/env bash
# Writes the default training corpus: the King James Bible (1611, public domain) as plain prose,
# one chapter per paragraph, from Debian's bible-kjv package (its `bible` command reads the text
# of bible-kjv-text; the packages' licence, and the text's, are in docs/DATA.md). About 4.1 MB,
# twice: DEST/kjv-books/NN-Book.txt, its 66 books one file each (documents for `orion data
# prepare`, whose validation split then samples every book), and DEST/kjv.txt, the whole text.
# Idempotent: does nothing when both are there. Usage: scripts/fetch_corpus.sh DEST_DIR
set -euo pipefail
dest=${1:?usage: fetch_corpus.sh DEST_DIR}
out=$dest/kjv.txt
books=$dest/kjv-books
[[ -s $out && $(ls "$books" 2>/dev/null | wc -l) -eq 66 ]] && exit 0
command -v bible >/dev/null 2>&1 || { echo "fetch_corpus: the bible command is missing: run scripts/setup.sh (Debian package bible-kjv)" >&2; exit 1; }
mkdir -p "$dest"
tmp=$(mktemp -d "$dest/.kjv.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# `bible -f` prints one verse a line, "Ge1:1 In the beginning ...": drop the reference, join a
# chapter's verses with spaces, end each chapter with a blank line and start a file per book
# (the reference's letters: Ge, Exo, ... Rev).
mkdir "$tmp/books"
bible -f "Gen1:1-Rev22:21" | awk -v dir="$tmp/books" '
  { split($1, ref, ":"); book = ref[1]; sub(/[0-9]+$/, "", book); sub(/^[^ ]+ /, "")
    if (book != current) {
      if (file != "") { print "" > file; close(file) }
      file = sprintf("%s/%02d-%s.txt", dir, ++n, book); current = book
    } else {
      printf (ref[1] != chapter ? "\n\n" : " ") > file
    }
    printf "%s", $0 > file; chapter = ref[1] }
  END { print "" > file }'
count=$(ls "$tmp/books" | wc -l)
((count == 66)) || { echo "fetch_corpus: the text has $count books, not 66; is bible-kjv-text complete?" >&2; exit 1; }
# The whole text: the books with a blank line between them, as between chapters.
first=1
for f in "$tmp"/books/*.txt; do
  ((first)) || printf '\n'
  cat "$f"; first=0
done > "$tmp/kjv.txt"
size=$(wc -c < "$tmp/kjv.txt")
((size > 4000000)) || { echo "fetch_corpus: $out would have only $size bytes; is bible-kjv-text complete?" >&2; exit 1; }
rm -rf "$books"
mv "$tmp/books" "$books"
mv "$tmp/kjv.txt" "$out"
