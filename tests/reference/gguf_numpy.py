"""GGUF read with numpy alone, written from ggml's docs/gguf.md and ggml-quants.c's
dequantize_row_* (not from Orion's reader): the metadata, the tensor infos, every tensor
dequantised to float32, and a Llama-family model's config and weights under Hugging Face's
names (llama.cpp's reordering of the query and key rows undone for `llama`). The torch
reference (gguf_reference.py) runs the model it reads; make_gguf.py checks what it packed with
the same dequantisers.
"""
import struct

import numpy as np

# ggml_type: the block (values, bytes) of the types read here.
TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20), "Q8_0": (8, 32, 34),
         "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210), "BF16": (30, 1, 2)}
TYPE_NAMES = {v[0]: k for k, v in TYPES.items()}

# gguf_metadata_value_type: struct formats of the fixed-size ones.
VALUE_FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, fmt):
        (v,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.data[self.at : self.at + n].decode("utf-8")
        self.at += n
        return s

    def value(self, t):
        if t == STRING:
            return self.string()
        if t == ARRAY:
            et, n = self.take("<I"), self.take("<Q")
            return [self.value(et) for _ in range(n)]
        return self.take(VALUE_FORMATS[t])


def read_gguf(path):
    """(metadata {key: value}, metadata types {key: type}, tensors {name: (dims, type name, raw bytes)})."""
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    assert r.take("<4s") == b"GGUF", "not a GGUF file"
    version = r.take("<I")
    assert version in (2, 3), version
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    meta, types = {}, {}
    for _ in range(n_kv):
        key = r.string()
        t = r.take("<I")
        types[key] = t
        meta[key] = r.value(t)
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("<q") for _ in range(r.take("<I"))]
        infos.append((name, dims, r.take("<I"), r.take("<Q")))
    alignment = meta.get("general.alignment", 32)
    base = (r.at + alignment - 1) // alignment * alignment
    tensors = {}
    for name, dims, t, offset in infos:
        _, block, size = TYPES[TYPE_NAMES[t]]
        n = int(np.prod(dims)) if dims else 1
        tensors[name] = (dims, TYPE_NAMES[t], data[base + offset : base + offset + n // block * size])
    return meta, types, tensors


def f16(raw):
    return np.frombuffer(raw, dtype="<f2").astype(np.float32)


def blocks(raw, size):
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, size)


def k_scales(s):
    """ggml's get_scale_min_k4 for all 8 sub-blocks: 6-bit scales and mins from 12 bytes [n, 12]."""
    s = s.astype(np.int32)
    sc = np.zeros((s.shape[0], 8), np.int32)
    mn = np.zeros((s.shape[0], 8), np.int32)
    for j in range(8):
        if j < 4:
            sc[:, j] = s[:, j] & 63
            mn[:, j] = s[:, j + 4] & 63
        else:
            sc[:, j] = (s[:, j + 4] & 0xF) | ((s[:, j - 4] >> 6) << 4)
            mn[:, j] = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
    return sc, mn


def dequantize(type_name, raw):
    """The values of `raw`, a tensor's blocks, as float32, computed in float32 in ggml's order."""
    if type_name == "F32":
        return np.frombuffer(raw, dtype="<f4").copy()
    if type_name == "F16":
        return f16(raw)
    if type_name == "BF16":
        return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    if type_name == "Q8_0":
        b = blocks(raw, 34)
        d = f16(b[:, :2].tobytes())[:, None]
        return (b[:, 2:].view(np.int8).astype(np.float32) * d).reshape(-1)
    if type_name in ("Q4_0", "Q4_1"):
        size = TYPES[type_name][2]
        b = blocks(raw, size)
        d = f16(b[:, :2].tobytes())[:, None]
        qs = b[:, size - 16 :].astype(np.int32)
        q = np.concatenate([qs & 0xF, qs >> 4], axis=1)  # low nibbles are values 0-15, high 16-31
        if type_name == "Q4_0":
            return ((q - 8).astype(np.float32) * d).reshape(-1)
        m = f16(b[:, 2:4].tobytes())[:, None]
        return (q.astype(np.float32) * d + m).reshape(-1)
    if type_name in ("Q4_K", "Q5_K"):
        size = TYPES[type_name][2]
        b = blocks(raw, size)
        d = f16(b[:, 0:2].tobytes())[:, None]
        dmin = f16(b[:, 2:4].tobytes())[:, None]
        sc, mn = k_scales(b[:, 4:16])
        qs = b[:, size - 128 :].astype(np.int32).reshape(-1, 4, 32)  # 4 groups of 64 values
        q = np.stack([qs & 0xF, qs >> 4], axis=2)  # [n, group, low/high, 32]
        if type_name == "Q5_K":
            qh = b[:, 16:48].astype(np.int32)  # bit 2g of qh[l]: group g's low half, 2g+1 its high half
            for g in range(4):
                q[:, g, 0] += ((qh >> (2 * g)) & 1) * 16
                q[:, g, 1] += ((qh >> (2 * g + 1)) & 1) * 16
        q = q.reshape(-1, 8, 32).astype(np.float32)
        d_sub = (d * sc.astype(np.float32))[:, :, None]
        m_sub = (dmin * mn.astype(np.float32))[:, :, None]
        return (d_sub * q - m_sub).reshape(-1)
    if type_name == "Q6_K":
        b = blocks(raw, 210)
        ql = b[:, :128].astype(np.int32).reshape(-1, 2, 64)  # two halves of 128 values
        qh = b[:, 128:192].astype(np.int32).reshape(-1, 2, 32)
        sc = b[:, 192:208].view(np.int8).astype(np.float32).reshape(-1, 2, 8)
        d = f16(b[:, 208:210].tobytes())[:, None, None]
        out = np.zeros((b.shape[0], 2, 128), np.float32)
        for quarter in range(4):
            low = ql[:, :, (quarter % 2) * 32 : (quarter % 2) * 32 + 32]
            low = (low & 0xF) if quarter < 2 else (low >> 4)
            q = (low | (((qh >> (2 * quarter)) & 3) << 4)) - 32
            for half16 in range(2):  # a scale per 16 values
                scale = sc[:, :, quarter * 2 + half16][:, :, None]
                cols = slice(half16 * 16, half16 * 16 + 16)
                out[:, :, quarter * 32 + half16 * 16 : quarter * 32 + half16 * 16 + 16] = (
                    d * scale * q[:, :, cols].astype(np.float32))
        return out.reshape(-1)
    raise ValueError("no dequantiser for " + type_name)


def tensor(tensors, name):
    """A tensor as float32 in row-major shape (ggml's dims reversed)."""
    dims, type_name, raw = tensors[name]
    return dequantize(type_name, raw).reshape(list(reversed(dims)) or [1])


# Hugging Face's names of a block's tensors, by llama.cpp's.
BLOCK_NAMES = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
               "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
               "attn_k_norm": "self_attn.k_norm", "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj",
               "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}


def hf_name(gguf_name):
    parts = gguf_name.split(".")
    if parts[0] == "blk":
        return f"model.layers.{parts[1]}.{BLOCK_NAMES[parts[2]]}.{parts[3]}"
    return f"{TOP_NAMES[parts[0]]}.{parts[1]}"


def unpermute(w, n_head):
    """llama.cpp's converter wrote row h*D + 2i + j from Hugging Face's row h*D + j*D/2 + i (its
    permute: reshape(n_head, 2, D/2, ...).swapaxes(1, 2)); put them back."""
    shape = w.shape
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *shape[1:]).swapaxes(1, 2).reshape(shape)


def hf_model(meta, tensors):
    """(config with Hugging Face's keys, {Hugging Face name: float32 array}) of a llama, qwen2 or
    qwen3 file."""
    arch = meta["general.architecture"]
    k = lambda rest, default=None: meta.get(f"{arch}.{rest}", default)  # noqa: E731
    heads = k("attention.head_count")
    cfg = {
        "model_type": arch,
        "hidden_size": k("embedding_length"),
        "intermediate_size": k("feed_forward_length"),
        "num_hidden_layers": k("block_count"),
        "num_attention_heads": heads,
        "num_key_value_heads": k("attention.head_count_kv", heads),
        "rms_norm_eps": k("attention.layer_norm_rms_epsilon"),
        "rope_theta": k("rope.freq_base", 10000.0),
        "tie_word_embeddings": "output.weight" not in tensors,
        "vocab_size": tensors["token_embd.weight"][0][1],
    }
    if k("attention.key_length") is not None:
        cfg["head_dim"] = k("attention.key_length")
    if k("rope.scaling.type") == "linear":
        cfg["rope_scaling"] = {"rope_type": "linear", "factor": k("rope.scaling.factor")}
    if "rope_freqs.weight" in tensors:  # Llama 3's scaling: a divisor per frequency
        cfg["rope_freq_divisors"] = tensor(tensors, "rope_freqs.weight").astype(np.float64).tolist()
    cfg["attention_bias"] = arch != "qwen2" and "blk.0.attn_q.bias" in tensors
    weights = {}
    for name in tensors:
        if name == "rope_freqs.weight":
            continue
        w = tensor(tensors, name)
        if arch == "llama" and ".attn_q." in name:
            w = unpermute(w, heads)
        if arch == "llama" and ".attn_k." in name:
            w = unpermute(w, cfg["num_key_value_heads"])
        weights[hf_name(name)] = w
    return cfg, weights


def main():
    """gguf_numpy.py FILE.gguf OUT_DIR: every tensor dequantised, as OUT_DIR/NAME.npy (float32, its
    row-major shape), for the tests to compare Orion's dequantising with."""
    import os
    import sys

    path, out = sys.argv[1:3]
    _, _, tensors = read_gguf(path)
    os.makedirs(out, exist_ok=True)
    for name in tensors:
        np.save(os.path.join(out, name + ".npy"), tensor(tensors, name))


if __name__ == "__main__":
    main()
