#!/usr/bin/env python3
"""Independent reference for Orion's Llama: reads a model folder written by `orion init --arch
llama` (config.json + model.safetensors, parsed here by hand with numpy), runs the Llama forward
pass written with torch.nn.functional in float64 the way Hugging Face's modeling_llama.py
computes it (RMSNorm, rotary embeddings in the rotate_half layout, grouped-query attention by
repeating key/value heads, SwiGLU), and writes a golden file of logits that the C++ tests
compare against.

Usage: llama_reference.py MODEL_DIR SEED TOKENS_CSV OUT_JSON [--whole-config]

The same forward pass covers the Llama family as transformers writes it: Mistral (Llama's
maths), Qwen2 (biases on q, k and v), Qwen3 (per-head RMSNorm on q and k, an explicit head_dim),
Llama 3's rope_scaling, and weights in bf16 or sharded through model.safetensors.index.json.

The golden file has the layout of gpt2_reference.py's: for every position, the logits of a fixed
set of vocabulary ids and the log-sum-exp of the whole row.
"""
import sys

import numpy as np
import torch.nn.functional as F
import torch

from golden_io import run


def rms_norm(x, weight, eps):
    # LlamaRMSNorm: x / sqrt(mean(x^2) + eps) * weight.
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def scaled_inv_freq(inv_freq, scaling):
    # transformers' rope_scaling: "linear" divides every frequency by the factor; "llama3"
    # (_compute_llama3_parameters) divides the low frequencies, keeps the high ones and blends
    # the band between by the wavelength's place in it.
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind == "default":
        return inv_freq
    factor = scaling["factor"]
    if kind == "linear":
        return inv_freq / factor
    assert kind == "llama3", kind
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    wavelen = 2 * np.pi / inv_freq
    out = torch.where(wavelen > old / low, inv_freq / factor, inv_freq)
    smooth = (old / wavelen - low) / (high - low)
    blended = (1 - smooth) * out / factor + smooth * out
    medium = (wavelen >= old / high) & (wavelen <= old / low)
    return torch.where(medium, blended, out)


def rotary_cos_sin(positions, head_dim, theta, scaling=None, divisors=None):
    # LlamaRotaryEmbedding: inv_freq = theta^(-2i/d), scaled; emb = cat(freqs, freqs). A GGUF
    # file's rope_freqs (gguf_reference.py) gives the divisor of each frequency instead.
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    if divisors is not None:
        inv_freq = inv_freq / torch.tensor(divisors, dtype=torch.float64)
    else:
        inv_freq = scaled_inv_freq(inv_freq, scaling)
    freqs = torch.outer(positions.to(torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def forward(w, cfg, tokens):
    C = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", H)
    D = cfg.get("head_dim") or C // H
    eps = cfg["rms_norm_eps"]
    family = cfg.get("model_type", "llama")
    # Qwen2 has q/k/v biases always; the others have q/k/v and o biases with attention_bias.
    qkv_bias = family == "qwen2" or cfg.get("attention_bias", False)
    o_bias = family != "qwen2" and cfg.get("attention_bias", False)
    T = len(tokens)
    x = F.embedding(torch.tensor(tokens), w["model.embed_tokens.weight"])
    cos, sin = rotary_cos_sin(torch.arange(T), D, cfg.get("rope_theta", 10000.0), cfg.get("rope_scaling"),
                              cfg.get("rope_freq_divisors"))  # [T, D]

    def proj(name, h, bias):
        return F.linear(h, w[name + ".weight"], w[name + ".bias"] if bias else None)

    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = proj(p + "self_attn.q_proj", h, qkv_bias).view(T, H, D)
        k = proj(p + "self_attn.k_proj", h, qkv_bias).view(T, KV, D)
        if family == "qwen3":  # Qwen3RMSNorm of every head before the rotation
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q.transpose(0, 1)  # [H, T, D]
        k = k.transpose(0, 1)  # [KV, T, D]
        v = proj(p + "self_attn.v_proj", h, qkv_bias).view(T, KV, D).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # repeat_kv: key/value head j serves query heads j*G .. j*G+G-1.
        k = k.repeat_interleave(H // KV, dim=0)
        v = v.repeat_interleave(H // KV, dim=0)
        att = (q @ k.transpose(-1, -2)) / np.sqrt(D)
        att = att.masked_fill(mask, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(0, 1).reshape(T, H * D)
        x = x + proj(p + "self_attn.o_proj", y, o_bias)
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        m = F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) * F.linear(h, w[p + "mlp.up_proj.weight"])
        x = x + F.linear(m, w[p + "mlp.down_proj.weight"])
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
    assert cfg.get("tie_word_embeddings", False) == ("lm_head.weight" not in w)
    return F.linear(x, head)


CONFIG_KEYS = ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size",
               "max_position_embeddings", "vocab_size", "rms_norm_eps", "rope_theta", "tie_word_embeddings",
               "bos_token_id", "eos_token_id")


def main():
    # Llama folders keep the original golden layout; the other families' goldens carry their
    # whole config.json, so every key that shapes the maths reaches the C++ test.
    whole = len(sys.argv) > 5 and sys.argv[5] == "--whole-config"
    run("tests/reference/llama_reference.py", forward, None if whole else CONFIG_KEYS)


if __name__ == "__main__":
    main()
