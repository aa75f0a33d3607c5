#!/usr/bin/env python3
"""Writes an MLX quantized model folder from a float one, as mlx-lm's `convert -q` does, for the
tests: every linear layer and the embedding whose rows are a whole number of groups quantized
with MLX's affine algorithm (mlx/ops.cpp affine_quantize and pack_and_quantize, followed step by
step here in numpy float32), the rest copied. Written from MLX's source, not from Orion's code:
the tests load its folders and hold Orion's logits to a torch reference that dequantizes them.

Usage: mlx_quantize.py SRC DST [--bits B] [--group G] [--module PATH=B/G ...] [--keep PATH ...]
  --module: that module in its own format (a per-module entry of config.json's "quantization")
  --keep:   that module left in floats (an entry `false`)
"""
import argparse
import json
import os
import shutil
import struct

import numpy as np


def read_float_model(model_dir):
    """config.json and model.safetensors' tensors as float32 numpy arrays (numpy only: the
    tests run this without torch)."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        raw = data[8 + n + e["data_offsets"][0] : 8 + n + e["data_offsets"][1]]
        if e["dtype"] == "BF16":
            arr = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, {"F32": "<f4", "F16": "<f2"}[e["dtype"]]).astype(np.float32)
        out[name] = arr.reshape(e["shape"])
    return cfg, out


def affine_quantize(w, group, bits):
    """MLX's affine_quantize fallback: w float32 [rows, cols] -> (uint32 words, scales, biases)."""
    rows, cols = w.shape
    g = w.reshape(rows, cols // group, group)
    n_bins = np.float32((1 << bits) - 1)
    w_max = g.max(axis=-1, keepdims=True)
    w_min = g.min(axis=-1, keepdims=True)
    mask = np.abs(w_min) > np.abs(w_max)
    scales = np.maximum((w_max - w_min) / n_bins, np.float32(1e-7))
    scales = np.where(mask, scales, -scales)
    edge = np.where(mask, w_min, w_max)
    q0 = np.round(edge / scales)  # numpy rounds halves to even, as MLX's round
    scales = np.where(q0 != 0, edge / np.where(q0 != 0, q0, 1), scales).astype(np.float32)
    biases = np.where(q0 == 0, np.float32(0), edge).astype(np.float32)
    q = np.clip(np.round((g - biases) / scales), 0, n_bins).astype(np.uint32).reshape(rows, cols)
    # pack_and_quantize: the fields of a row from the lowest bit of its first word up.
    bits_of = ((q[:, :, None] >> np.arange(bits, dtype=np.uint32)) & 1).astype(np.uint8).reshape(rows, -1)
    words = np.packbits(bits_of, axis=-1, bitorder="little").view("<u4").reshape(rows, cols * bits // 32)
    return words, scales.reshape(rows, -1), biases.reshape(rows, -1)


def to_bf16_bytes(a):
    # Round to nearest even, as torch's float -> bfloat16.
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2").tobytes()


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (dtype, arr) in tensors.items():
        if dtype == "BF16":
            raw = to_bf16_bytes(arr)
        else:
            raw = arr.astype({"F32": "<f4", "U32": "<u4"}[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--bits", type=int, default=4)
    ap.add_argument("--group", type=int, default=64)
    ap.add_argument("--module", action="append", default=[])
    ap.add_argument("--keep", action="append", default=[])
    a = ap.parse_args()
    cfg, w = read_float_model(a.src)
    float_type = "BF16" if cfg.get("torch_dtype") == "bfloat16" else "F32"
    quant = {"group_size": a.group, "bits": a.bits, "mode": "affine"}
    own = {}
    for m in a.module:
        path, fmt = m.split("=")
        b, g = (int(x) for x in fmt.split("/"))
        own[path] = (b, g)
        quant[path] = {"group_size": g, "bits": b, "mode": "affine"}
    for path in a.keep:
        quant[path] = False
    out = {}
    for name, t in w.items():
        arr = t
        module = name[: -len(".weight")] if name.endswith(".weight") else None
        bits, group = own.get(module, (a.bits, a.group))
        # mlx-lm quantizes nn.Linear and nn.Embedding layers (the 2-D weights here) whose rows
        # are a whole number of groups.
        if module and arr.ndim == 2 and module not in a.keep and arr.shape[1] % group == 0:
            words, scales, biases = affine_quantize(arr, group, bits)
            out[name] = ("U32", words)
            out[module + ".scales"] = (float_type, scales)
            out[module + ".biases"] = (float_type, biases)
        else:
            out[name] = (float_type, arr)
    os.makedirs(a.dst, exist_ok=True)
    write_safetensors(os.path.join(a.dst, "model.safetensors"), out)
    cfg["quantization"] = quant
    cfg["quantization_config"] = quant
    with open(os.path.join(a.dst, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    for name in os.listdir(a.src):
        if name != "config.json" and not name.startswith("model") and os.path.isfile(os.path.join(a.src, name)):
            shutil.copy(os.path.join(a.src, name), os.path.join(a.dst, name))


if __name__ == "__main__":
    main()
