"""What the torch references share, and nothing of a model: reading a model folder written by
`orion init` (config.json, and model.safetensors parsed by hand with numpy: hf_folder.py), and writing a
golden file of logits that the C++ tests compare against (tests/model/golden_logits.h):
for every position, the logits of a fixed set of vocabulary ids spread over the vocabulary and
the log-sum-exp of the whole row, so that a few KB check every position against every logit."""
import json
import sys

import numpy as np
import torch

from hf_folder import read_folder


def mlx_dequantize(words, scales, biases, bits):
    """MLX's affine_dequantize in float64: field j of a row is bits [j*bits, (j+1)*bits) of the
    row's words read as one little-endian bit stream; w = scale * q + bias of its group."""
    rows, n_words = words.shape
    cols = n_words * 32 // bits
    w64 = words.astype(np.uint64)
    nxt = np.concatenate([w64[:, 1:], np.zeros((rows, 1), np.uint64)], axis=1)
    j = np.arange(cols)
    word, shift = (j * bits) // 32, ((j * bits) % 32).astype(np.uint64)
    both = w64[:, word] | (nxt[:, word] << np.uint64(32))
    q = ((both >> shift) & np.uint64((1 << bits) - 1)).astype(np.float64)
    group = cols // scales.shape[1]
    s = np.repeat(scales.numpy(), group, axis=1)
    b = np.repeat(biases.numpy(), group, axis=1)
    return torch.from_numpy(s * q + b)


def read_model(model_dir):
    """config.json and the weights (float64 tensors) of a model folder; an MLX quantized
    folder's matrices dequantized."""
    cfg, read = read_folder(model_dir)
    # Floats as float64 tensors; MLX's packed words stay integers until dequantized below.
    w = {name: torch.from_numpy(a.astype(np.float64)) if a.dtype.kind == "f" else a for name, a in read.items()}
    quant = cfg.get("quantization")
    for name in [n for n in w if n.endswith(".scales")]:
        module = name[: -len(".scales")]
        own = quant.get(module)
        bits = own["bits"] if isinstance(own, dict) else quant["bits"]
        w[module + ".weight"] = mlx_dequantize(w[module + ".weight"], w.pop(name), w.pop(module + ".biases"), bits)
    return cfg, w


def run(generator, forward, config_keys):
    """The command line of a reference: MODEL_DIR SEED TOKENS_CSV OUT_JSON."""
    model_dir, seed, tokens_csv, out_path = sys.argv[1:5]
    cfg, w = read_model(model_dir)
    tokens = [int(t) for t in tokens_csv.split(",")]
    with torch.no_grad():
        logits = forward(w, cfg, tokens)
    write_golden(generator, cfg, config_keys, seed, tokens, logits, out_path)


def write_golden(generator, cfg, config_keys, seed, tokens, logits, out_path, extra=None):
    """The golden file of `logits` [positions, vocab] (see the module's comment)."""
    V = cfg["vocab_size"]
    picked = sorted(set([0, 1, V - 1] + [int(i) for i in np.linspace(0, V - 1, 29)] + tokens[:8]))
    golden = {
        "generator": "%s (torch %s, float64)" % (generator, torch.__version__),
        "config": cfg if config_keys is None else {k: cfg[k] for k in config_keys},
        "seed": int(seed),
        "tokens": tokens,
        "vocab_ids": picked,
        "logits": [[float("%.9g" % logits[t, i].item()) for i in picked] for t in range(len(tokens))],
        "logsumexp": [float("%.9g" % torch.logsumexp(logits[t], 0).item()) for t in range(len(tokens))],
    }
    golden.update(extra or {})
    with open(out_path, "w") as f:
        json.dump(golden, f, indent=None, separators=(",", ":"))
        f.write("\n")
