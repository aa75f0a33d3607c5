#!/usr/bin/env python3
"""Independent reference for Orion's Gemma 3 text model: reads a Hugging Face model folder
(config.json + model.safetensors, or shards through model.safetensors.index.json, parsed here by
hand with numpy) and runs the forward pass of transformers' Gemma3ForCausalLM in float64 with
torch.nn.functional, written from the published architecture (modeling_gemma3.py,
configuration_gemma3.py, masking_utils.py), and writes a golden file of logits that the C++
tests compare against.

Usage: gemma3_reference.py MODEL_DIR SEED TOKENS_CSV OUT_JSON

What the forward pass does, step by step (docs/MODELS.md describes the family in prose;
every formula is repeated next to the code that computes it):
  - the embedding row times sqrt(hidden_size) (transformers casts that factor to the weights'
    dtype: 25.25 rather than 25.298 for bf16 weights of width 640; here float64 throughout);
  - per layer: x += post_attention_norm(attention(input_norm(x)));
               x += post_feedforward_norm(mlp(pre_feedforward_norm(x)));
    every norm is Gemma's RMSNorm, y = x / sqrt(mean(x^2) + eps) * (1 + w);
  - attention: q, k, v projections; an RMSNorm of every query and key head (q_norm, k_norm,
    width head_dim) before the rotation; rotary embeddings in the rotate_half layout, base
    rope_local_base_freq on sliding layers and rope_theta (with rope_scaling, "linear" factor 8 on
    the 4B) on full layers; scores scaled by query_pre_attn_scalar^-0.5 (not head_dim^-0.5);
    optional tanh capping cap*tanh(s/cap) (attn_logit_softcapping); a causal mask, and on sliding
    layers masking_utils' window: the query at i sees the keys j with i - W < j <= i (W keys,
    itself included); grouped-query attention, key/value head j serving query heads j*G..j*G+G-1;
  - the MLP: down(gelu_tanh(gate(x)) * up(x)) (hidden_activation "gelu_pytorch_tanh");
  - the final RMSNorm, the head (tied to the embedding), then optional tanh capping
    (final_logit_softcapping).

The folder may hold a text model (model_type "gemma3_text", Gemma3ForCausalLM, weights
"model.*") or the multimodal one (model_type "gemma3", the text model's keys under "text_config",
weights "language_model.model.*" as Google published them, or "model.language_model.*" as
transformers >= 4.52 saves them); missing text keys take Gemma3TextConfig's defaults, which the
published gemma-3-4b config relies on (it names only six text keys).

The golden file has the layout of gpt2_reference.py's: for every position, the logits of a fixed
set of vocabulary ids and the log-sum-exp of the whole row; its "config" is the folder's whole
config.json.
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_io import read_model, write_golden  # noqa: E402

# Gemma3TextConfig's defaults (configuration_gemma3.py): a key missing from config.json (or from
# a multimodal config's "text_config") takes these.
TEXT_DEFAULTS = {
    "vocab_size": 262208,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-6,
    "pad_token_id": 0,
    "eos_token_id": 1,
    "bos_token_id": 2,
    "tie_word_embeddings": True,
    "rope_theta": 1000000.0,
    "attention_bias": False,
    "query_pre_attn_scalar": 256,
    "sliding_window": 4096,
    "final_logit_softcapping": None,
    "attn_logit_softcapping": None,
    "rope_scaling": None,
    "rope_local_base_freq": 10000.0,
    "sliding_window_pattern": 6,
    "use_bidirectional_attention": False,
}


# ----------------------------------------------------------------------------------------------
# The config
# ----------------------------------------------------------------------------------------------

def text_config(cfg):
    """The text model's config with every default filled in, plus two derived keys:
    "layer_types" (one of "sliding_attention" / "full_attention" per layer) and "rope" (the
    rotary parameters of each layer type: {"rope_theta", "rope_type", "factor"?})."""
    if "text_config" in cfg:  # the multimodal Gemma3Config: the text model's keys nested
        t = dict(cfg["text_config"] or {})
        # The top level's tie_word_embeddings (PretrainedConfig's default True) governs the
        # multimodal model's head when the text config does not say.
        t.setdefault("tie_word_embeddings", cfg.get("tie_word_embeddings", True))
    else:
        t = dict(cfg)
    for k, v in TEXT_DEFAULTS.items():  # absent or null: the default
        if t.get(k) is None:
            t[k] = v
    assert not t["use_bidirectional_attention"], "EmbeddingGemma's bidirectional attention is not a causal LM"

    # The layer pattern: an explicit layer_types list (270m, and every config saved by
    # transformers >= 4.53), else the older integer sliding_window_pattern P (default 6): layer i
    # slides unless (i + 1) % P == 0 (P = 6: layers 5, 11, 17, ... are full). Like transformers,
    # the "_sliding_window_pattern" that newer configs also write is not read.
    n = t["num_hidden_layers"]
    if t.get("layer_types") is None:
        pattern = t["sliding_window_pattern"]
        t["layer_types"] = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]
    assert len(t["layer_types"]) == n, "layer_types must name every layer"
    assert set(t["layer_types"]) <= {"sliding_attention", "full_attention"}, t["layer_types"]

    # Rotary parameters per layer type. transformers < 5 reads rope_theta (+ rope_scaling) for
    # full layers and rope_local_base_freq (always unscaled, "default") for sliding ones;
    # transformers 5 writes the same as rope_parameters = {"full_attention": {...},
    # "sliding_attention": {...}}.
    rp = t.get("rope_parameters")
    if isinstance(rp, dict) and ("full_attention" in rp or "sliding_attention" in rp):
        full = dict(rp.get("full_attention") or {})
        sliding = dict(rp.get("sliding_attention") or {})
        full.setdefault("rope_theta", t.get("rope_theta") or 1000000.0)
        sliding.setdefault("rope_theta", t.get("rope_local_base_freq") or 10000.0)
    else:
        full = dict(t.get("rope_scaling") or {})
        full["rope_theta"] = t["rope_theta"]
        sliding = {"rope_theta": t["rope_local_base_freq"]}
    for p in (full, sliding):
        p["rope_type"] = p.get("rope_type", p.get("type", "default"))
    t["rope"] = {"full_attention": full, "sliding_attention": sliding}
    return t


def text_weights(w):
    """The text model's weights under Gemma3ForCausalLM's names ("model.*", "lm_head.weight"):
    a multimodal folder's "language_model.model.*" (Google's published names) or
    "model.language_model.*" (transformers >= 4.52) renamed, and its vision tower and projector
    dropped."""
    out = {}
    for name, t in w.items():
        if name.startswith("language_model.model."):
            out["model." + name[len("language_model.model."):]] = t
        elif name.startswith("model.language_model."):
            out["model." + name[len("model.language_model."):]] = t
        elif name in ("language_model.lm_head.weight", "lm_head.weight"):
            out["lm_head.weight"] = t
        elif name.startswith(("vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                              "model.multi_modal_projector.")):
            continue
        else:
            out[name] = t
    return out


# ----------------------------------------------------------------------------------------------
# The pieces of the model
# ----------------------------------------------------------------------------------------------

def rms_norm(x, weight, eps):
    """Gemma3RMSNorm: x / sqrt(mean(x^2) + eps) * (1 + w), over the last axis. The stored weight
    is the offset from one (initialised to zeros)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + weight)


def gelu_tanh(x):
    """gelu_pytorch_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def activation(name):
    if name in ("gelu_pytorch_tanh", "gelu_new", "gelu_fast", "gelu_tanh"):  # the tanh approximation
        return gelu_tanh
    if name == "gelu":  # the exact one, x * Phi(x)
        return lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    raise ValueError("hidden_activation %r" % name)


def softcap(x, cap):
    """Gemma's logit capping: cap * tanh(x / cap); nothing when cap is None/0."""
    return x if not cap else cap * torch.tanh(x / cap)


def inv_freq(rope, head_dim):
    """The rotary frequencies of a layer type: theta^(-2i/d) for i < d/2, divided by the factor
    for "linear" scaling (Gemma 3 4B/12B/27B: factor 8 on full layers only)."""
    f = 1.0 / (rope["rope_theta"] ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    if rope["rope_type"] == "default":
        return f
    if rope["rope_type"] == "linear":
        return f / rope["factor"]
    raise ValueError("rope_type %r is not one Gemma 3 uses" % rope["rope_type"])


def rotary_cos_sin(positions, rope, head_dim):
    """cos and sin [T, D] of the rotate_half layout: angle[t, i] = pos_t * inv_freq[i mod D/2]."""
    freqs = torch.outer(positions.to(torch.float64), inv_freq(rope, head_dim))
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary(x, cos, sin):
    """x [..., T, D] rotated: x * cos + rotate_half(x) * sin (pairs (i, i + D/2))."""
    return x * cos + rotate_half(x) * sin


def attention_mask(q_pos, k_pos, layer_type, window):
    """True where the query at q_pos may see the key at k_pos (masking_utils): causal,
    k <= q; and on a sliding layer also k > q - window, so the query sees window keys, itself
    included."""
    q = q_pos[:, None]
    k = k_pos[None, :]
    allowed = k <= q
    if layer_type == "sliding_attention":
        allowed = allowed & (k > q - window)
    return allowed


def embed_scale(cfg, dtype=None):
    """sqrt(hidden_size), in float64. transformers keeps it as a float32 buffer and multiplies by
    embed_scale.to(weight.dtype): dtype=torch.bfloat16 gives what bf16 weights see (sqrt(640) =
    25.298 becomes 25.25, sqrt(1152) = 33.941 becomes 34.0, sqrt(2560) = 50.596 becomes 50.5)."""
    if dtype is None:
        return torch.tensor(math.sqrt(cfg["hidden_size"]), dtype=torch.float64)
    return torch.tensor(cfg["hidden_size"] ** 0.5, dtype=torch.float32).to(dtype).to(torch.float64)


class Layer:
    """One decoder layer's weights and constants, with the pieces the full pass and an
    incremental (KV-cache) pass share: the projections of a block of positions, and the
    attention of queries over given keys and values."""

    def __init__(self, w, t, l):
        p = f"model.layers.{l}."
        self.p, self.w, self.t = p, w, t
        self.type = t["layer_types"][l]
        self.H, self.KV, self.D = t["num_attention_heads"], t["num_key_value_heads"], t["head_dim"]
        self.eps = t["rms_norm_eps"]
        self.bias = t["attention_bias"]
        self.rope = t["rope"][self.type]
        self.window = t["sliding_window"]
        self.scale = t["query_pre_attn_scalar"] ** -0.5
        self.act = activation(t["hidden_activation"])

    def norm(self, name, x):
        return rms_norm(x, self.w[self.p + name + ".weight"], self.eps)

    def proj(self, name, x):
        b = self.w.get(self.p + name + ".bias") if self.bias else None
        return F.linear(x, self.w[self.p + name + ".weight"], b)

    def qkv(self, h, positions):
        """q [H, T, D], k [KV, T, D] (normalised per head, then rotated), v [KV, T, D]."""
        T = h.shape[0]
        q = self.proj("self_attn.q_proj", h).view(T, self.H, self.D)
        k = self.proj("self_attn.k_proj", h).view(T, self.KV, self.D)
        v = self.proj("self_attn.v_proj", h).view(T, self.KV, self.D)
        q = rms_norm(q, self.w[self.p + "self_attn.q_norm.weight"], self.eps).transpose(0, 1)
        k = rms_norm(k, self.w[self.p + "self_attn.k_norm.weight"], self.eps).transpose(0, 1)
        cos, sin = rotary_cos_sin(positions, self.rope, self.D)
        return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin), v.transpose(0, 1)

    def attend(self, q, k, v, allowed):
        """softmax(cap(q k^T * scale) masked) v, GQA by repeating each key/value head for its
        H/KV query heads; returns [Tq, H*D] before o_proj."""
        G = self.H // self.KV
        k = k.repeat_interleave(G, dim=0)
        v = v.repeat_interleave(G, dim=0)
        s = (q @ k.transpose(-1, -2)) * self.scale
        s = softcap(s, self.t["attn_logit_softcapping"])
        s = s.masked_fill(~allowed, float("-inf"))
        y = F.softmax(s, dim=-1) @ v  # [H, Tq, D]
        return y.transpose(0, 1).reshape(q.shape[1], self.H * self.D)

    def mlp(self, h):
        w = self.w
        return F.linear(self.act(F.linear(h, w[self.p + "mlp.gate_proj.weight"])) * F.linear(h, w[self.p + "mlp.up_proj.weight"]),
                        w[self.p + "mlp.down_proj.weight"])

    def finish(self, x, y):
        """The residual wiring after attention produced y [T, H*D] for the rows of x."""
        x = x + self.norm("post_attention_layernorm", self.proj("self_attn.o_proj", y))
        return x + self.norm("post_feedforward_layernorm", self.mlp(self.norm("pre_feedforward_layernorm", x)))


def prepare(w, cfg):
    """(text weights, resolved text config) from what read_model gives."""
    t = text_config(cfg)
    w = text_weights(w)
    return w, t


def embed(w, t, tokens, scale_dtype=None):
    E = w["model.embed_tokens.weight"]
    return F.embedding(torch.tensor(tokens, dtype=torch.long), E) * embed_scale(t, scale_dtype)


def head(w, t, x):
    """Final norm, the (tied) head and the final capping."""
    x = rms_norm(x, w["model.norm.weight"], t["rms_norm_eps"])
    if t["tie_word_embeddings"]:
        W = w["model.embed_tokens.weight"]
    else:
        assert "lm_head.weight" in w, "an untied Gemma 3 folder needs lm_head.weight"
        W = w["lm_head.weight"]
    return softcap(F.linear(x, W), t["final_logit_softcapping"])


def forward(w, cfg, tokens, scale_dtype=None):
    """Logits [T, vocab] of every position of `tokens`, in float64. `w` and `cfg` as read_model
    returns them (either folder layout); scale_dtype=torch.bfloat16 rounds the embedding factor
    as transformers does for bf16 weights."""
    w, t = prepare(w, cfg)
    T = len(tokens)
    pos = torch.arange(T)
    x = embed(w, t, tokens, scale_dtype)
    for l in range(t["num_hidden_layers"]):
        L = Layer(w, t, l)
        h = L.norm("input_layernorm", x)
        q, k, v = L.qkv(h, pos)
        y = L.attend(q, k, v, attention_mask(pos, pos, L.type, L.window))
        x = L.finish(x, y)
    return head(w, t, x)


def main():
    model_dir, seed, tokens_csv, out_path = sys.argv[1:5]
    cfg, w = read_model(model_dir)
    tokens = [int(tok) for tok in tokens_csv.split(",")]
    with torch.no_grad():
        logits = forward(w, cfg, tokens)
    # write_golden picks vocabulary ids from the text config's vocab_size; the golden's "config"
    # is the folder's config.json as it is (the C++ parser applies the defaults itself).
    write_golden("tests/reference/gemma3_reference.py", text_config(cfg), None, seed, tokens, logits, out_path,
                 extra={"config": cfg})


if __name__ == "__main__":
    main()
