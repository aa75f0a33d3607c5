#!/usr/bin/env python3
"""Writes a GGUF file (version 3, as ggml's docs/gguf.md specifies it; no gguf package) from a
Hugging Face-shaped model folder of the Llama family (orion init --arch llama|qwen2|qwen3,
scripts/make_hf_folder.sh), as llama.cpp's convert_hf_to_gguf.py would lay it out: its keys,
its tensor names, the query and key rows of `llama` permuted as its converter permutes them, 1-D
tensors in F32, the tokenizer's vocabulary and chat template in tokenizer.* keys.

The matrices are stored in the chosen ggml type, quantised from the folder's weights with
ggml's reference quantisers (quantize_row_*_ref) for Q8_0, Q4_0 and Q4_1; for the K-quants
(Q4_K, Q5_K, Q6_K) with their first guess of each sub-block's scale and minimum (the reference
then searches near it; any scales make a valid block, and these follow the weights), packed bit
for bit in ggml's layout. Every packed tensor is read back with gguf_numpy.py's dequantisers and
checked against the values meant.

Usage: make_gguf.py MODEL_DIR OUT.gguf [--matrices TYPE] [--embed TYPE] [--output TYPE]
                    [--alignment N] [--tokenizer-only] [--manifest OUT.json]
  TYPE: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q4_K Q5_K Q6_K (default F32); --embed (token_embd)
  defaults to --matrices, --output (the untied head) to --embed.
Prints "sha256 HEX" of the file it wrote.
"""
import argparse
import hashlib
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_numpy  # noqa: E402
from gguf_numpy import TYPES, dequantize  # noqa: E402
from hf_folder import read_folder  # noqa: E402

# gguf_metadata_value_type
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR_FORMATS = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?", U64: "<Q",
                  I64: "<q", F64: "<d"}
# llama_ftype of general.file_type, by the matrices' type.
FILE_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q4_K": 15, "Q5_K": 17, "Q6_K": 18, "BF16": 32}
# llama.cpp's token types.
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_value(t, v):
    if t == STRING:
        return gguf_string(v)
    if t == ARRAY:
        et, items = v
        head = struct.pack("<IQ", et, len(items))
        if et in SCALAR_FORMATS:  # one pack for the whole array
            return head + struct.pack("<" + SCALAR_FORMATS[et][1] * len(items), *items)
        return head + b"".join(gguf_value(et, x) for x in items)
    return struct.pack(SCALAR_FORMATS[t], v)


class Writer:
    def __init__(self, alignment):
        self.alignment = alignment
        self.kv, self.tensors = [], []

    def add(self, key, t, v):
        self.kv.append((key, t, v))

    def add_tensor(self, name, shape, type_name, data):
        self.tensors.append((name, list(reversed(shape)), type_name, data))  # ggml's dims: innermost first

    def bytes(self, with_manifest):
        """The file, and (with_manifest) what it means, in read_gguf.mjs's form."""
        pad = lambda n: (self.alignment - n % self.alignment) % self.alignment  # noqa: E731
        out = [b"GGUF", struct.pack("<IQQ", 3, len(self.tensors), len(self.kv))]
        manifest = {"version": 3, "metadata": {}, "tensors": []}
        for key, t, v in self.kv:
            out += [gguf_string(key), struct.pack("<I", t), gguf_value(t, v)]
            if with_manifest:
                manifest["metadata"][key] = meant(t, v)
        offset, blobs = 0, []
        for name, dims, type_name, data in self.tensors:
            out += [gguf_string(name), struct.pack("<I", len(dims)), struct.pack(f"<{len(dims)}q", *dims),
                    struct.pack("<IQ", TYPES[type_name][0], offset)]
            manifest["tensors"].append({"name": name, "dims": dims, "type": TYPES[type_name][0], "offset": offset})
            blobs += [data, b"\0" * pad(len(data))]
            offset += len(data) + pad(len(data))
        head = b"".join(out)
        manifest["data_offset"] = len(head) + pad(len(head))
        return head + b"\0" * pad(len(head)) + b"".join(blobs), manifest


def meant(t, v):
    """A key's value as the file holds it: floats rounded to float32 where they are stored so."""
    if t == ARRAY:
        et, items = v
        return {"type": ARRAY, "subType": et, "value": [meant(et, x)["value"] for x in items]}
    if t == F32:
        return {"type": t, "value": float(np.float32(v))}
    if t == BOOL:
        return {"type": t, "value": bool(v)}
    return {"type": t, "value": v}


# ---- quantisers: rows of float32 -> the bytes of their blocks, and the values they mean ----

def f16_bytes(x):
    return np.asarray(x, dtype=np.float32).astype("<f2")


def roundf(x):
    # C's roundf: halves away from zero (exact in float64 for every float32).
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def nearest_int(x):
    # ggml's nearest_int: round half to even.
    return np.rint(np.asarray(x, dtype=np.float32)).astype(np.int32)


def safe_inverse(d):
    with np.errstate(divide="ignore"):
        return np.where(d != 0, np.float32(1) / np.where(d != 0, d, np.float32(1)), np.float32(0)).astype(np.float32)


def quantize_q8_0(x):
    x = x.reshape(-1, 32)
    amax = np.abs(x).max(axis=1)
    d = (amax / np.float32(127)).astype(np.float32)
    q = roundf(x * safe_inverse(d)[:, None]).astype(np.int8)
    blocks = np.concatenate([f16_bytes(d).view(np.uint8).reshape(-1, 2), q.view(np.uint8)], axis=1)
    return blocks.tobytes()


def first_abs_max(x):
    # The value of largest magnitude, the first of equals (ggml's loop keeps the first).
    return x[np.arange(x.shape[0]), np.argmax(np.abs(x), axis=1)]


def pack_nibbles(q):
    # q [n, 32] in 0..15: byte j holds value j (low nibble) and value j + 16 (high nibble).
    return (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)


def quantize_q4_0(x):
    x = x.reshape(-1, 32)
    d = (first_abs_max(x) / np.float32(-8)).astype(np.float32)
    v = (x * safe_inverse(d)[:, None] + np.float32(8.5)).astype(np.float32)
    q = np.minimum(15, np.trunc(v).astype(np.int32))  # (int8_t) truncates toward zero
    return np.concatenate([f16_bytes(d).view(np.uint8).reshape(-1, 2), pack_nibbles(q)], axis=1).tobytes()


def quantize_q4_1(x):
    x = x.reshape(-1, 32)
    mn, mx = x.min(axis=1), x.max(axis=1)
    d = ((mx - mn) / np.float32(15)).astype(np.float32)
    v = ((x - mn[:, None]) * safe_inverse(d)[:, None] + np.float32(0.5)).astype(np.float32)
    q = np.minimum(15, np.trunc(v).astype(np.int32))
    head = np.concatenate([f16_bytes(d).view(np.uint8).reshape(-1, 2), f16_bytes(mn).view(np.uint8).reshape(-1, 2)], axis=1)
    return np.concatenate([head, pack_nibbles(q)], axis=1).tobytes()


def pack_k_scales(ls, lm):
    # quantize_row_q4_K_ref's packing of 8 six-bit scales and mins into 12 bytes.
    s = np.zeros((ls.shape[0], 12), np.int32)
    for j in range(8):
        if j < 4:
            s[:, j] = ls[:, j]
            s[:, j + 4] = lm[:, j]
        else:
            s[:, j + 4] = (ls[:, j] & 0xF) | ((lm[:, j] & 0xF) << 4)
            s[:, j - 4] |= (ls[:, j] >> 4) << 6
            s[:, j] |= (lm[:, j] >> 4) << 6
    return s.astype(np.uint8)


def k_levels(x, nmax):
    """Q4_K/Q5_K's super-block scales and the levels L of each value: sub-blocks of 32, each with
    the scale (max - min) / nmax and the minimum min(x, 0) (make_qkx2_quants' first guess), then
    as quantize_row_q4_K_ref: the scales and minima to 6 bits against the largest, and every
    value requantised with those."""
    x = x.reshape(-1, 8, 32)
    mn = np.minimum(x.min(axis=2), 0)
    mx = x.max(axis=2)
    scales = ((mx - mn) / np.float32(nmax)).astype(np.float32)
    mins = (-mn).astype(np.float32)
    max_scale, max_min = scales.max(axis=1), mins.max(axis=1)
    inv_scale = np.where(max_scale > 0, np.float32(63) / np.where(max_scale > 0, max_scale, 1), 0).astype(np.float32)
    inv_min = np.where(max_min > 0, np.float32(63) / np.where(max_min > 0, max_min, 1), 0).astype(np.float32)
    ls = np.minimum(63, nearest_int(inv_scale[:, None] * scales))
    lm = np.minimum(63, nearest_int(inv_min[:, None] * mins))
    d = f16_bytes(max_scale / np.float32(63))
    dmin = f16_bytes(max_min / np.float32(63))
    dsub = (d.astype(np.float32)[:, None] * ls.astype(np.float32)).astype(np.float32)
    msub = (dmin.astype(np.float32)[:, None] * lm.astype(np.float32)).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        L = nearest_int((x + msub[:, :, None]) / np.where(dsub != 0, dsub, 1)[:, :, None])
    L = np.where(dsub[:, :, None] != 0, np.clip(L, 0, nmax), 0)
    head = np.concatenate([d.view(np.uint8).reshape(-1, 2), dmin.view(np.uint8).reshape(-1, 2), pack_k_scales(ls, lm)], axis=1)
    return head, L.reshape(-1, 256)


def quantize_q4_k(x):
    head, L = k_levels(x, 15)
    groups = L.reshape(-1, 4, 2, 32)  # each 64 values: low nibbles the first 32, high the next
    qs = (groups[:, :, 0] | (groups[:, :, 1] << 4)).reshape(-1, 128).astype(np.uint8)
    return np.concatenate([head, qs], axis=1).tobytes()


def quantize_q5_k(x):
    head, L = k_levels(x, 31)
    groups = L.reshape(-1, 4, 2, 32)
    qh = np.zeros((L.shape[0], 32), np.int32)
    for g in range(4):
        qh |= (groups[:, g, 0] >> 4) << (2 * g)
        qh |= (groups[:, g, 1] >> 4) << (2 * g + 1)
    low = groups & 0xF
    qs = (low[:, :, 0] | (low[:, :, 1] << 4)).reshape(-1, 128)
    return np.concatenate([head, qh.astype(np.uint8), qs.astype(np.uint8)], axis=1).tobytes()


def quantize_q6_k(x):
    """Sub-blocks of 16 with the scale max / -32 (make_qx_quants' first guess), the scales to
    int8 against the largest (quantize_row_q6_K_ref), the values requantised to -32..31."""
    x = x.reshape(-1, 16, 16)
    mx = np.stack([first_abs_max(b) for b in x.transpose(1, 0, 2)], axis=1)  # [n, 16]
    scales = np.where(mx != 0, mx / np.float32(-32), 0).astype(np.float32)
    big = first_abs_max(scales)
    iscale = np.where(big != 0, np.float32(-128) / np.where(big != 0, big, 1), 0).astype(np.float32)
    d = f16_bytes(np.where(iscale != 0, np.float32(1) / np.where(iscale != 0, iscale, 1), 0))
    sc = np.minimum(127, nearest_int(iscale[:, None] * scales)).astype(np.int8)
    dsub = (d.astype(np.float32)[:, None] * sc.astype(np.float32)).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        L = nearest_int(x / np.where(dsub != 0, dsub, 1)[:, :, None])
    L = (np.where(dsub[:, :, None] != 0, np.clip(L, -32, 31), 0) + 32).reshape(-1, 2, 4, 32)  # [n, half, quarter, 32]
    ql = np.concatenate([(L[:, :, 0] & 0xF) | ((L[:, :, 2] & 0xF) << 4), (L[:, :, 1] & 0xF) | ((L[:, :, 3] & 0xF) << 4)], axis=2)
    qh = (L[:, :, 0] >> 4) | ((L[:, :, 1] >> 4) << 2) | ((L[:, :, 2] >> 4) << 4) | ((L[:, :, 3] >> 4) << 6)
    return np.concatenate([ql.reshape(-1, 128).astype(np.uint8), qh.reshape(-1, 64).astype(np.uint8),
                           sc.view(np.uint8), d.view(np.uint8).reshape(-1, 2)], axis=1).tobytes()


def bf16_bytes(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes()  # round to nearest even


QUANTISERS = {"F32": lambda x: np.ascontiguousarray(x, dtype="<f4").tobytes(), "F16": lambda x: f16_bytes(x).tobytes(),
              "BF16": bf16_bytes, "Q8_0": quantize_q8_0, "Q4_0": quantize_q4_0, "Q4_1": quantize_q4_1,
              "Q4_K": quantize_q4_k, "Q5_K": quantize_q5_k, "Q6_K": quantize_q6_k}


def encode(name, w, type_name):
    """The bytes of tensor `w` in `type_name`, checked by dequantising them back."""
    _, block, size = TYPES[type_name]
    if w.shape[-1] % block:
        sys.exit(f"make_gguf: {name} has rows of {w.shape[-1]} values, not a multiple of {type_name}'s block of {block}")
    data = QUANTISERS[type_name](np.ascontiguousarray(w, dtype=np.float32).reshape(-1))
    assert len(data) == w.size // block * size, name
    back = dequantize(type_name, data)
    assert np.all(np.isfinite(back)), name
    # Within half a step of each block's grid (Q4's 16 levels over the block's range at worst).
    err = np.abs(back - w.reshape(-1)).max() / max(1e-30, float(np.abs(w).max()))
    assert type_name in ("F32",) or err < 0.2, f"{name}: {type_name} round trip off by {err}"
    return data


# ---- the model ----

# llama.cpp's names by Hugging Face's: gguf_numpy.py's tables turned around.
BLOCK_NAMES = {hf: gguf for gguf, hf in gguf_numpy.BLOCK_NAMES.items()}
TOP_NAMES = {hf: gguf for gguf, hf in gguf_numpy.TOP_NAMES.items()}


def gguf_name(hf):
    base, kind = hf.rsplit(".", 1)
    if base in TOP_NAMES:
        return f"{TOP_NAMES[base]}.{kind}"
    _, _, layer, rest = base.split(".", 3)
    return f"blk.{layer}.{BLOCK_NAMES[rest]}.{kind}"


def permute(w, n_head):
    # convert_hf_to_gguf.py's LlamaModel.permute: each head's rows as (2, D/2) swapped to (D/2, 2).
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_divisors(cfg, head_dim):
    # convert_hf_to_gguf.py's rope_freqs for rope_type llama3: a divisor per frequency.
    rs = cfg["rope_scaling"]
    factor, low, high = rs["factor"], rs.get("low_freq_factor", 1.0), rs.get("high_freq_factor", 4.0)
    old = rs.get("original_max_position_embeddings", 8192)
    base = cfg.get("rope_theta", 10000.0)
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    out = []
    for f in freqs:
        wavelen = 2 * np.pi / f
        if wavelen < old / high:
            out.append(1)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def write_model(wr, cfg, weights, args):
    arch = {"mistral": "llama"}.get(cfg["model_type"], cfg["model_type"])
    assert arch in ("llama", "qwen2", "qwen3"), arch
    heads = cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads", heads)
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
    wr.add("general.architecture", STRING, arch)
    wr.add("general.name", STRING, "orion test " + arch)
    wr.add("general.file_type", U32, FILE_TYPES[args.matrices])
    wr.add("general.quantization_version", U32, 2)
    for key, t, v in [("context_length", U32, cfg["max_position_embeddings"]), ("embedding_length", U32, cfg["hidden_size"]),
                      ("block_count", U32, cfg["num_hidden_layers"]), ("feed_forward_length", U32, cfg["intermediate_size"]),
                      ("attention.head_count", U32, heads), ("attention.head_count_kv", U32, kv_heads),
                      ("rope.freq_base", F32, cfg.get("rope_theta", 10000.0)),
                      ("attention.layer_norm_rms_epsilon", F32, cfg["rms_norm_eps"]),
                      ("rope.dimension_count", U32, head_dim), ("vocab_size", U32, cfg["vocab_size"])]:
        wr.add(f"{arch}.{key}", t, v)
    if "head_dim" in cfg:
        wr.add(f"{arch}.attention.key_length", U32, head_dim)
        wr.add(f"{arch}.attention.value_length", U32, head_dim)
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type"))
    if kind == "linear":
        wr.add(f"{arch}.rope.scaling.type", STRING, "linear")
        wr.add(f"{arch}.rope.scaling.factor", F32, rs["factor"])
    elif kind == "llama3":
        wr.add(f"{arch}.rope.scaling.original_context_length", U32, rs["original_max_position_embeddings"])
        wr.add_tensor("rope_freqs.weight", [head_dim // 2], "F32", QUANTISERS["F32"](llama3_divisors(cfg, head_dim)))
    elif kind not in (None, "default"):
        sys.exit(f"make_gguf: rope_scaling {kind} is not written")
    for hf in sorted(weights, key=lambda n: (n.count("layers."), n)):
        w = weights[hf]
        if hf == "lm_head.weight" and cfg.get("tie_word_embeddings"):
            continue
        if arch == "llama" and ".q_proj." in hf:
            w = permute(w, heads)
        if arch == "llama" and ".k_proj." in hf:
            w = permute(w, kv_heads)
        name = gguf_name(hf)
        t = "F32" if w.ndim == 1 else args.output if name == "output.weight" else args.embed if name == "token_embd.weight" else args.matrices
        wr.add_tensor(name, list(w.shape), t, encode(name, w, t))


# ---- the tokenizer ----

def looks_special(t):
    # convert_hf_to_gguf.py's does_token_look_special.
    return t in ("<pad>", "<mask>", "<2mass>", "[@BOS@]") or (t.startswith("<|") and t.endswith("|>")) or \
        (t.startswith("<start_of_") and t.endswith(">"))


def spm_pieces(path):
    """(pieces [(text, score, type)], add_dummy_prefix) of a tokenizer.model: the protobuf read by
    hand (ModelProto.pieces = 1 {piece 1, score 2, type 3}, normalizer_spec = 3 {add_dummy_prefix 3})."""
    data = open(path, "rb").read()

    def fields(buf):
        i = 0
        while i < len(buf):
            key, i = varint(buf, i)
            num, wire = key >> 3, key & 7
            if wire == 0:
                v, i = varint(buf, i)
            elif wire == 2:
                n, i = varint(buf, i)
                v, i = buf[i : i + n], i + n
            elif wire == 5:
                v, i = struct.unpack_from("<f", buf, i)[0], i + 4
            elif wire == 1:
                v, i = buf[i : i + 8], i + 8
            else:
                raise ValueError(f"wire type {wire}")
            yield num, v

    def varint(buf, i):
        v = shift = 0
        while True:
            b = buf[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return v, i

    pieces, dummy = [], True
    for num, v in fields(data):
        if num == 1:
            p = dict(fields(v))
            pieces.append((p[1].decode("utf-8"), p.get(2, 0.0), p.get(3, NORMAL)))
        elif num == 3:
            dummy = bool(dict(fields(v)).get(3, 1))
    return pieces, dummy


def write_tokenizer(wr, model_dir, cfg):
    tc = {}
    if os.path.exists(f"{model_dir}/tokenizer_config.json"):
        tc = json.load(open(f"{model_dir}/tokenizer_config.json", encoding="utf-8"))
    vocab_size = cfg["vocab_size"]
    tokens, types, merges, scores, pre, add_bos = [], [], [], None, None, None
    if os.path.exists(f"{model_dir}/tokenizer.json"):
        tj = json.load(open(f"{model_dir}/tokenizer.json", encoding="utf-8"))
        m = tj["model"]
        assert m["type"] == "BPE" and not m.get("byte_fallback"), "make_gguf writes byte-level BPE tokenizer.json files"
        by_id = {i: (t, NORMAL) for t, i in m["vocab"].items()}
        for a in tj.get("added_tokens", []):
            by_id[a["id"]] = (a["content"], CONTROL if a["special"] or looks_special(a["content"]) else USER_DEFINED)
        merges = [x if isinstance(x, str) else " ".join(x) for x in m["merges"]]
        pats = json.dumps(tj.get("pre_tokenizer"))
        pre = "llama-bpe" if "\\\\p{N}{1,3}" in pats else "qwen2" if "\\\\p{N}|" in pats else "gpt-2"
        post = json.dumps(tj.get("post_processor"))
        add_bos = "TemplateProcessing" in post
    elif os.path.exists(f"{model_dir}/tokenizer.model"):
        pieces, dummy = spm_pieces(f"{model_dir}/tokenizer.model")
        by_id = {i: (p, t) for i, (p, _, t) in enumerate(pieces)}
        scores = [s for _, s, _ in pieces]
        wr.add("tokenizer.ggml.add_space_prefix", BOOL, dummy)
    else:
        vocab = json.load(open(f"{model_dir}/vocab.json", encoding="utf-8"))
        by_id = {i: (t, CONTROL if looks_special(t) else NORMAL) for t, i in vocab.items()}
        lines = open(f"{model_dir}/merges.txt", encoding="utf-8").read().split("\n")
        merges = [x for x in lines if x and not x.startswith("#version")]
        pre = "gpt-2"
    for i in range(max(vocab_size, len(by_id))):
        t, ty = by_id.get(i, (f"[PAD{i}]", USER_DEFINED))  # the converter's filler for unused ids
        tokens.append(t)
        types.append(ty)
    wr.add("tokenizer.ggml.model", STRING, "llama" if scores is not None else "gpt2")
    if pre:
        wr.add("tokenizer.ggml.pre", STRING, pre)
    wr.add("tokenizer.ggml.tokens", ARRAY, (STRING, tokens))
    if scores is not None:
        wr.add("tokenizer.ggml.scores", ARRAY, (F32, scores + [0.0] * (len(tokens) - len(scores))))
    wr.add("tokenizer.ggml.token_type", ARRAY, (I32, types))
    if scores is None:
        wr.add("tokenizer.ggml.merges", ARRAY, (STRING, merges))
    eos = cfg.get("eos_token_id")
    eos = eos[0] if isinstance(eos, list) else eos
    wr.add("tokenizer.ggml.eos_token_id", U32, eos)
    if cfg.get("bos_token_id") is not None:
        wr.add("tokenizer.ggml.bos_token_id", U32, cfg["bos_token_id"])
    add_bos = tc.get("add_bos_token", add_bos if add_bos is not None else cfg.get("bos_token_id") is not None)
    wr.add("tokenizer.ggml.add_bos_token", BOOL, bool(add_bos))
    if tc.get("chat_template"):
        wr.add("tokenizer.chat_template", STRING, tc["chat_template"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--matrices", default="F32", choices=sorted(QUANTISERS))
    ap.add_argument("--embed", choices=sorted(QUANTISERS))
    ap.add_argument("--output", choices=sorted(QUANTISERS))
    ap.add_argument("--alignment", type=int, default=32)
    ap.add_argument("--tokenizer-only", action="store_true", help="only the tokenizer's keys, no tensors")
    ap.add_argument("--manifest", help="also write what the file means, as JSON (read_gguf.mjs's form)")
    args = ap.parse_args()
    args.embed = args.embed or args.matrices
    args.output = args.output or args.embed
    wr = Writer(args.alignment)
    if args.alignment != 32:
        wr.add("general.alignment", U32, args.alignment)
    if args.tokenizer_only:
        with open(f"{args.model_dir}/config.json") as f:
            cfg = json.load(f)
    else:
        cfg, weights = read_folder(args.model_dir)
        write_model(wr, cfg, weights, args)
    write_tokenizer(wr, args.model_dir, cfg)
    data, manifest = wr.bytes(bool(args.manifest))
    with open(args.out, "wb") as f:
        f.write(data)
    if args.manifest:
        with open(args.manifest, "w", encoding="utf-8") as f:
            json.dump(manifest, f, ensure_ascii=False)
    print("sha256", hashlib.sha256(data).hexdigest())


if __name__ == "__main__":
    main()
