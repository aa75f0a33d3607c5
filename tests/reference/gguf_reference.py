#!/usr/bin/env python3
"""Independent reference for Orion's GGUF reading: a GGUF file read and dequantised by
gguf_numpy.py (numpy, written from ggml's specification and dequantize_row_* functions, not
from Orion's reader), its model run by llama_reference.py's forward pass (torch, float64), and a
golden file of logits written as the other references write theirs (golden_io.py).

Usage: gguf_reference.py FILE.gguf SEED TOKENS_CSV OUT_JSON FOLDER_CONFIG MAKE_GGUF_OPTIONS SHA256
  FOLDER_CONFIG      the config.json of the folder the file was made from (the test rebuilds
                     that folder from it and the seed)
  MAKE_GGUF_OPTIONS  make_gguf.py's options that made the file (the test runs them again)
  SHA256             make_gguf.py's hash of the file (the test checks that its file is this one)
"""
import json
import sys

import numpy as np
import torch

from golden_io import write_golden
from gguf_numpy import hf_model, read_gguf
from llama_reference import forward


def main():
    path, seed, tokens_csv, out_path, folder_config, options, sha = sys.argv[1:8]
    meta, _, tensors = read_gguf(path)
    cfg, w = hf_model(meta, tensors)
    weights = {name: torch.from_numpy(a.astype(np.float64)) for name, a in w.items()}
    tokens = [int(t) for t in tokens_csv.split(",")]
    with torch.no_grad():
        logits = forward(weights, cfg, tokens)
    with open(folder_config) as f:
        folder_cfg = json.load(f)
    write_golden("tests/reference/gguf_reference.py", folder_cfg, None, seed, tokens, logits, out_path,
                 extra={"gguf_config": cfg, "make_gguf_options": options.split(), "gguf_sha256": sha})


if __name__ == "__main__":
    main()
