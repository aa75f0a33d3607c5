#!/usr/bin/env python3
"""Independent reference for Orion's Llama: reads a model folder written by `orion init --arch
llama` (config.json + model.safetensors, parsed here by hand with numpy), runs the Llama forward
pass written with torch.nn.functional in float64 the way Hugging Face's modeling_llama.py
computes it (RMSNorm, rotary embeddings in the rotate_half layout, grouped-query attention by
repeating key/value heads, SwiGLU), and writes a golden file of logits that the C++ tests
compare against.

Usage: llama_reference.py MODEL_DIR SEED TOKENS_CSV OUT_JSON

The golden file has the layout of gpt2_reference.py's: for every position, the logits of a fixed
set of vocabulary ids and the log-sum-exp of the whole row.
"""
import numpy as np
import torch.nn.functional as F
import torch

from golden_io import run


def rms_norm(x, weight, eps):
    # LlamaRMSNorm: x / sqrt(mean(x^2) + eps) * weight.
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rotary_cos_sin(positions, head_dim, theta):
    # LlamaRotaryEmbedding: inv_freq = theta^(-2i/d); emb = cat(freqs, freqs).
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
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
    D = C // H
    eps = cfg["rms_norm_eps"]
    T = len(tokens)
    x = F.embedding(torch.tensor(tokens), w["model.embed_tokens.weight"])
    cos, sin = rotary_cos_sin(torch.arange(T), D, cfg.get("rope_theta", 10000.0))  # [T, D]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = F.linear(h, w[p + "self_attn.q_proj.weight"]).view(T, H, D).transpose(0, 1)  # [H, T, D]
        k = F.linear(h, w[p + "self_attn.k_proj.weight"]).view(T, KV, D).transpose(0, 1)  # [KV, T, D]
        v = F.linear(h, w[p + "self_attn.v_proj.weight"]).view(T, KV, D).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # repeat_kv: key/value head j serves query heads j*G .. j*G+G-1.
        k = k.repeat_interleave(H // KV, dim=0)
        v = v.repeat_interleave(H // KV, dim=0)
        att = (q @ k.transpose(-1, -2)) / np.sqrt(D)
        att = att.masked_fill(mask, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(0, 1).reshape(T, C)
        x = x + F.linear(y, w[p + "self_attn.o_proj.weight"])
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
    run("tests/reference/llama_reference.py", forward, CONFIG_KEYS)


if __name__ == "__main__":
    main()
