#!/usr/bin/env python3
"""What a token file's validation split costs under count-based models of its training split:
the cross-entropy (nats per token) of a unigram model (add-0.01 smoothing) and of a bigram model
interpolated with it (lambda 0.8). A yardstick for a trained model's validation loss
(docs/RESULTS.md): a model below the unigram figure has learned more than token frequencies,
one near the bigram figure about as much as the previous token tells.

Usage: scripts/ngram_baseline.py TOKEN_FILE   (the format of docs/FORMATS.md, "Token files")
"""
import array
import collections
import math
import struct
import sys


def read_tokens(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"ORIONTOK":
        sys.exit(f"{path}: not an Orion token file (no ORIONTOK magic)")
    width, = struct.unpack_from("<I", data, 12)
    vocab, n_train, n_val = struct.unpack_from("<QQQ", data, 16)
    tokens = array.array("H" if width == 2 else "I")
    tokens.frombytes(data[64:64 + width * (n_train + n_val)])
    if sys.byteorder != "little":
        tokens.byteswap()
    return vocab, tokens[:n_train], tokens[n_train:]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    vocab, train, val = read_tokens(sys.argv[1])
    counts = collections.Counter(train)
    total = len(train) + 0.01 * vocab

    def unigram(t):
        return (counts.get(t, 0) + 0.01) / total

    pairs = collections.Counter(zip(train[:-1], train[1:]))
    firsts = collections.Counter(train[:-1])
    lam = 0.8
    uni = sum(-math.log(unigram(t)) for t in val) / len(val)
    bi = 0.0
    for a, b in zip(val[:-1], val[1:]):
        p = pairs.get((a, b), 0) / firsts[a] if firsts.get(a) else 0.0
        bi -= math.log(lam * p + (1 - lam) * unigram(b))
    bi /= len(val) - 1
    print(f"{sys.argv[1]}: {len(train)} training and {len(val)} validation tokens, vocabulary {vocab}")
    print(f"uniform:  {math.log(vocab):.3f} nats per token")
    print(f"unigram:  {uni:.3f}")
    print(f"bigram:   {bi:.3f} (interpolated with the unigram, lambda {lam})")


if __name__ == "__main__":
    main()
