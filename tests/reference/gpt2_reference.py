#!/usr/bin/env python3
"""Independent reference for Orion's GPT-2: reads a model folder written by `orion init`
(config.json + model.safetensors, parsed here by hand with numpy), runs GPT-2's forward pass
written with torch.nn.functional in float64, and writes a golden file of logits that the C++
tests compare against.

Usage: gpt2_reference.py MODEL_DIR SEED TOKENS_CSV OUT_JSON

The golden file holds, for every position of the token sequence, the logits of a fixed set of
vocabulary ids (spread over the vocabulary) and the log-sum-exp of the whole row, so that a
few KB check every position against every logit at once.
"""
import json
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

DTYPES = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        arr = np.frombuffer(data[base + b : base + end], dtype=DTYPES[e["dtype"]]).reshape(e["shape"])
        out[name] = torch.from_numpy(arr.astype(np.float64))
    return out


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def forward(w, cfg, tokens):
    C, H = cfg["n_embd"], cfg["n_head"]
    D = C // H
    eps = cfg["layer_norm_epsilon"]
    T = len(tokens)
    idx = torch.tensor(tokens)
    x = w["wte.weight"][idx] + w["wpe.weight"][torch.arange(T)]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    for l in range(cfg["n_layer"]):
        p = f"h.{l}."
        h = F.layer_norm(x, (C,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=1)
        q, k, v = (t.view(T, H, D).transpose(0, 1) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / np.sqrt(D)
        att = att.masked_fill(mask, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(0, 1).reshape(T, C)
        x = x + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = F.layer_norm(x, (C,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        m = gelu_new(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (C,), w["ln_f.weight"], w["ln_f.bias"], eps)
    return x @ w["wte.weight"].T


def main():
    model_dir, seed, tokens_csv, out_path = sys.argv[1:5]
    with open(f"{model_dir}/config.json") as f:
        cfg = json.load(f)
    w = read_safetensors(f"{model_dir}/model.safetensors")
    tokens = [int(t) for t in tokens_csv.split(",")]
    with torch.no_grad():
        logits = forward(w, cfg, tokens)
    V = cfg["vocab_size"]
    picked = sorted(set([0, 1, V - 1] + [int(i) for i in np.linspace(0, V - 1, 29)] + tokens[:8]))
    golden = {
        "generator": "tests/reference/gpt2_reference.py (torch %s, float64)" % torch.__version__,
        "config": {k: cfg[k] for k in ("n_layer", "n_embd", "n_head", "n_positions", "vocab_size", "layer_norm_epsilon")},
        "seed": int(seed),
        "tokens": tokens,
        "vocab_ids": picked,
        "logits": [[float("%.9g" % logits[t, i].item()) for i in picked] for t in range(len(tokens))],
        "logsumexp": [float("%.9g" % torch.logsumexp(logits[t], 0).item()) for t in range(len(tokens))],
    }
    with open(out_path, "w") as f:
        json.dump(golden, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
