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
import numpy as np
import torch.nn.functional as F
import torch

from golden_io import run


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


CONFIG_KEYS = ("n_layer", "n_embd", "n_head", "n_positions", "vocab_size", "layer_norm_epsilon")


def main():
    run("tests/reference/gpt2_reference.py", forward, CONFIG_KEYS)


if __name__ == "__main__":
    main()
