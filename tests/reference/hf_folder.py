"""A model folder read with numpy alone (no torch, so that test-time scripts start fast):
config.json, and the weights of model.safetensors or of Hugging Face's shards through
model.safetensors.index.json, parsed by hand, as float32 arrays (F16 and BF16 widened; MLX's
packed U32 words as they are). And the other way: a folder of float32 weights written, for the
references' self-tests and LoRA's adapter."""
import json
import os
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16}


def bf16_to_f32(raw):
    # bfloat16 is the top half of a float32: widen the bits, as torch's bfloat16 -> float does.
    return (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def read_safetensors(path):
    """name -> array of one safetensors file: float32, or uint32 for U32."""
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
        raw = data[base + b : base + end]
        if e["dtype"] == "BF16":
            arr = bf16_to_f32(raw)
        elif e["dtype"] == "U32":  # MLX's packed quantized weights: kept as integers
            arr = np.frombuffer(raw, dtype="<u4")
        else:
            arr = np.frombuffer(raw, dtype=DTYPES[e["dtype"]]).astype(np.float32)
        out[name] = arr.reshape(e["shape"])
    return out


def read_folder(model_dir):
    """config.json and the weights (float32 arrays) of a model folder."""
    with open(f"{model_dir}/config.json") as f:
        cfg = json.load(f)
    if os.path.exists(f"{model_dir}/model.safetensors"):
        return cfg, read_safetensors(f"{model_dir}/model.safetensors")
    # Hugging Face's sharded layout: the index names each tensor's file.
    with open(f"{model_dir}/model.safetensors.index.json") as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    w = {}
    for name in files:
        w.update(read_safetensors(f"{model_dir}/{name}"))
    return cfg, w


def write_safetensors(path, tensors):
    """A safetensors file of float32 arrays: 8-byte header length, JSON header, data."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_folder(path, cfg, tensors):
    """config.json and model.safetensors (float32) in `path`; returns `path`."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    write_safetensors(os.path.join(path, "model.safetensors"), tensors)
    return path
