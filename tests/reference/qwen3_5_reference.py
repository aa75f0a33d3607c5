#!/usr/bin/env python3
"""Independent reference for Orion's Qwen3.5 text model (Hugging Face's model_type "qwen3_5_text",
the language half of "qwen3_5"): reads a model folder (config.json + model.safetensors or shards,
parsed by hand with numpy in hf_folder.py), runs the forward pass written with
torch.nn.functional in float64 from the published architecture (transformers'
models/qwen3_5/modeling_qwen3_5.py), with its own helpers and nothing of Orion's, and writes a
golden file of logits that the C++ tests compare against.

The model is a hybrid: most layers are Gated DeltaNet linear attention, every
`full_attention_interval`-th one (layer_types) is gated softmax attention.
  - Every RMSNorm of the model is the zero-centred kind, x / rms(x) * (1 + w); only the gated
    norm inside the linear-attention layer uses w itself.
  - Linear-attention layer: in_proj_qkv -> causal depthwise conv1d (kernel 4) -> silu -> split
    into q, k (num_k_heads x d_k) and v (num_v_heads x d_v); q, k l2-normalised, q scaled by
    1/sqrt(d_k); decay g = -exp(A_log) * softplus(in_proj_a x + dt_bias), beta =
    sigmoid(in_proj_b x); the gated delta rule; gated RMSNorm with silu(in_proj_z x);
    out_proj.
  - Full-attention layer: q_proj gives per head [query | gate]; q_norm/k_norm per head; rotary
    embedding on the first head_dim * partial_rotary_factor dimensions only (rotate_half
    within them); softmax attention with grouped kv heads; output * sigmoid(gate); o_proj.
  - Dense SwiGLU MLP after every layer.

Three forms of the same maths, which main() checks against each other:
  - forward_chunked: the whole sequence at once, the delta rule in its chunked (UT transform)
    form with a settable chunk size (64 in transformers; small, e.g. 4, makes a short test cross
    chunks); forward() is this with chunk size 64.
  - forward_recurrent: token by token, with a decode state per layer (conv state + recurrent
    state for linear attention, a KV cache for full attention), as a generator decodes.
  - forward_segments: chunked prefill of a prefix, then token-by-token decode from the states
    the prefill leaves (what an inference engine does).

For text-only input the multimodal rotary embedding (interleaved mrope, mrope_section) reduces
to the ordinary one: its three position rows (temporal, height, width) are all the token index,
so every frequency sees the same position.

Usage: qwen3_5_reference.py MODEL_DIR SEED TOKENS_CSV OUT_JSON [--chunk-size N]

config.json may be the text config at top level (model_type "qwen3_5_text", as Orion writes
it) or Hugging Face's multimodal one (model_type "qwen3_5" with "text_config"), whose weights
are named model.language_model.* (the vision tower model.visual.* and the multi-token-prediction
head mtp.* are ignored). The golden file has the layout of llama_reference.py's, with the whole
config.json and {"recurrent_vs_chunked_max_abs", "chunk_size"}.
"""
import math
import os
import sys
from types import SimpleNamespace

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_io import read_model, write_golden  # noqa: E402

F64 = torch.float64

# ----------------------------------------------------------------------------------------------
# Config and weights
# ----------------------------------------------------------------------------------------------


def text_config(cfg):
    """The text model's config: cfg itself, or a multimodal config's text_config (with the
    top-level tie_word_embeddings, which is what Qwen3_5ForConditionalGeneration ties by)."""
    if "text_config" not in cfg:
        return cfg
    t = dict(cfg["text_config"])
    if "tie_word_embeddings" in cfg:
        t["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    return t


def hyper(cfg):
    """Every number the forward pass needs, with transformers' defaults (Qwen3_5TextConfig)."""
    t = text_config(cfg)
    L = t["num_hidden_layers"]
    types = t.get("layer_types")
    if types is None:
        # Qwen3_5TextConfig: layer i is full attention when (i + 1) % interval == 0.
        interval = t.get("full_attention_interval", 4)
        types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(L)]
    # transformers' remap_legacy_layer_types: "attention" -> full, "mamba" -> linear attention.
    alias = {"full_attention": "full", "attention": "full", "linear_attention": "linear", "mamba": "linear"}
    types = [alias[x] for x in types]
    assert len(types) == L, (len(types), L)
    H = t.get("num_attention_heads", 16)
    rope = dict(t.get("rope_parameters") or t.get("rope_scaling") or {})
    # rope_theta / partial_rotary_factor: inside rope_parameters, else the legacy top-level keys,
    # else transformers' defaults (10000; 0.25 set by Qwen3_5TextConfig.__post_init__).
    theta = rope.get("rope_theta", t.get("rope_theta", 10000.0))
    prf = rope.get("partial_rotary_factor", t.get("partial_rotary_factor", 0.25))
    kind = rope.get("rope_type", rope.get("type", "default"))
    assert kind == "default", "only the default rope is written here: %r" % kind
    D = t.get("head_dim") or t["hidden_size"] // H
    assert t.get("hidden_act", "silu") == "silu", t.get("hidden_act")
    assert not t.get("num_experts"), "a MoE config (qwen3_5_moe) is not the dense model written here"
    p = SimpleNamespace(
        C=t["hidden_size"], L=L, types=types, V=t["vocab_size"], eps=t.get("rms_norm_eps", 1e-6),
        tied=t.get("tie_word_embeddings", False),
        # full attention
        H=H, KV=t.get("num_key_value_heads", 4), D=D, theta=float(theta),
        rot=int(D * prf),  # rotated dimensions of each head (int() as transformers truncates)
        # linear attention (Gated DeltaNet)
        Hk=t.get("linear_num_key_heads", 16), Hv=t.get("linear_num_value_heads", 32),
        dk=t.get("linear_key_head_dim", 128), dv=t.get("linear_value_head_dim", 128),
        K=t.get("linear_conv_kernel_dim", 4),
    )
    assert p.rot % 2 == 0 and p.rot <= D
    assert p.H % p.KV == 0 and p.Hv % p.Hk == 0
    p.key_dim, p.value_dim = p.Hk * p.dk, p.Hv * p.dv
    p.conv_dim = 2 * p.key_dim + p.value_dim
    return p


def text_weights(w):
    """The text model's weights under Qwen3_5ForCausalLM's names (model.*, lm_head.weight):
    a multimodal checkpoint's model.language_model.* renamed, its vision tower and MTP head
    dropped."""
    out = {}
    for name, t in w.items():
        if name.startswith(("model.visual.", "mtp.", "visual.")):
            continue
        for old, new in (("model.language_model.", "model."), ("language_model.model.", "model."),
                         ("language_model.lm_head.", "lm_head.")):
            if name.startswith(old):
                name = new + name[len(old):]
        out[name] = t
    return out


# ----------------------------------------------------------------------------------------------
# The pieces
# ----------------------------------------------------------------------------------------------


def rms_norm_1p(x, w, eps):
    # Qwen3_5RMSNorm: zero-centred weight (initialised to 0), applied as (1 + w).
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + w)


def gated_rms_norm(x, z, w, eps):
    # Qwen3_5RMSNormGated: normalise first, then the weight itself (initialised to 1), then the
    # gate silu(z).
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w * F.silu(z)


def l2_normalise(x, eps=1e-6):
    # The FLA-compatible l2norm of transformers: x / sqrt(sum(x^2) + 1e-6), eps inside the root.
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + eps)


def linear(w, name, x):
    b = w.get(name + ".bias")
    return F.linear(x, w[name + ".weight"], b)


def rope_cos_sin(positions, p):
    # inv_freq_i = theta^(-2i/rot), i < rot/2; the angle table is duplicated (rotate_half layout).
    inv_freq = 1.0 / (p.theta ** (torch.arange(0, p.rot, 2, dtype=F64) / p.rot))
    ang = torch.outer(positions.to(F64), inv_freq)
    ang = torch.cat((ang, ang), dim=-1)  # [T, rot]
    return ang.cos(), ang.sin()


def apply_partial_rope(x, cos, sin, rot):
    # x [heads, T, D]: the first `rot` dimensions rotate, pairs (i, i + rot/2); the rest pass.
    r, rest = x[..., :rot], x[..., rot:]
    half = rot // 2
    rotated = torch.cat((-r[..., half:], r[..., :half]), dim=-1)
    return torch.cat((r * cos + rotated * sin, rest), dim=-1)


def mlp(w, pre, h):
    return linear(w, pre + "mlp.down_proj", F.silu(linear(w, pre + "mlp.gate_proj", h)) * linear(w, pre + "mlp.up_proj", h))


# ---- full (gated softmax) attention ------------------------------------------------------------


def full_attention(w, pre, p, h, start, cache):
    """h [T, C] at positions start..start+T-1; cache {"k": [KV, t, D], "v": ...} of the earlier
    positions (empty at first), extended in place. Returns [T, C]."""
    T = h.shape[0]
    a = pre + "self_attn."
    qg = linear(w, a + "q_proj", h).view(T, p.H, 2 * p.D)  # per head: [query (D) | gate (D)]
    q, gate = qg[..., : p.D], qg[..., p.D:].reshape(T, p.H * p.D)
    k = linear(w, a + "k_proj", h).view(T, p.KV, p.D)
    v = linear(w, a + "v_proj", h).view(T, p.KV, p.D)
    q = rms_norm_1p(q, w[a + "q_norm.weight"], p.eps).transpose(0, 1)  # [H, T, D]
    k = rms_norm_1p(k, w[a + "k_norm.weight"], p.eps).transpose(0, 1)  # [KV, T, D]
    v = v.transpose(0, 1)
    cos, sin = rope_cos_sin(torch.arange(start, start + T), p)
    q = apply_partial_rope(q, cos, sin, p.rot)
    k = apply_partial_rope(k, cos, sin, p.rot)
    cache["k"] = torch.cat((cache["k"], k), dim=1) if "k" in cache else k
    cache["v"] = torch.cat((cache["v"], v), dim=1) if "v" in cache else v
    k_all, v_all = cache["k"], cache["v"]  # [KV, start+T, D]
    # Grouped kv heads: kv head j serves query heads j*G .. j*G+G-1.
    G = p.H // p.KV
    k_all = k_all.repeat_interleave(G, dim=0)
    v_all = v_all.repeat_interleave(G, dim=0)
    scores = (q @ k_all.transpose(-1, -2)) / math.sqrt(p.D)  # [H, T, start+T]
    # Causal: query at position start+i sees keys 0..start+i.
    qpos = torch.arange(start, start + T).unsqueeze(1)
    kpos = torch.arange(start + T).unsqueeze(0)
    scores = scores.masked_fill(kpos > qpos, float("-inf"))
    y = (F.softmax(scores, dim=-1) @ v_all).transpose(0, 1).reshape(T, p.H * p.D)
    return linear(w, a + "o_proj", y * torch.sigmoid(gate))


# ---- Gated DeltaNet (linear attention) ---------------------------------------------------------


def causal_conv(x, weight, bias, state):
    """Depthwise causal conv1d over time. x [T, Cc] (channels last), weight [Cc, K], state
    [K-1, Cc]: the K-1 inputs before x (zeros at the start). Returns silu(conv) [T, Cc] and the
    new state (the last K-1 inputs). out[t, c] = sum_j weight[c, j] * xin[t + j] over the
    padded input xin = [state; x], so weight[:, K-1] multiplies the current input."""
    K = weight.shape[1]
    xin = torch.cat((state, x), dim=0)  # [K-1+T, Cc]
    T = x.shape[0]
    out = torch.zeros_like(x)
    for j in range(K):
        out = out + xin[j: j + T] * weight[:, j]
    if bias is not None:
        out = out + bias
    return F.silu(out), xin[T:]  # xin[T:] is the last K-1 rows


def delta_rule_recurrent(q, k, v, g, beta, S):
    """The gated delta rule one token at a time. q, k [T, Hv, dk] (already l2-normalised, q
    scaled), v [T, Hv, dv], g, beta [T, Hv], S [Hv, dk, dv]. Returns o [T, Hv, dv] and S."""
    outs = []
    for t in range(q.shape[0]):
        S = S * g[t].exp()[:, None, None]  # decay the memory
        pred = torch.einsum("hk,hkv->hv", k[t], S)  # what the memory recalls for k_t
        delta = beta[t][:, None] * (v[t] - pred)  # the correction, at learning rate beta
        S = S + k[t][:, :, None] * delta[:, None, :]  # write k_t (x) delta
        outs.append(torch.einsum("hk,hkv->hv", q[t], S))  # read with q_t after the write
    return torch.stack(outs), S


def delta_rule_chunked(q, k, v, g, beta, S, chunk):
    """The same rule, a chunk of positions at a time. Within a chunk with start state S0 and
    cumulative log decay c_r = g_1 + ... + g_r, unrolling the recurrence gives
        S_r = e^{c_r} S0 + sum_{s<=r} e^{c_r - c_s} k_s d_s^T,
        d_r = beta_r (v_r - e^{c_r} S0^T k_r - sum_{s<r} e^{c_r - c_s} (k_r . k_s) d_s),
    i.e. (I + A) d = beta*v - (beta*e^c*k) S0 with A[r, s] = beta_r e^{c_r - c_s} (k_r . k_s) for
    s < r (strictly lower triangular), solved by one unit-triangular solve; then
        o_r = e^{c_r} S0^T q_r + sum_{s<=r} e^{c_r - c_s} (q_r . k_s) d_s,
        S_end = e^{c_last} S0 + sum_s e^{c_last - c_s} k_s d_s^T.
    The last chunk may be shorter (no padding needed)."""
    T = q.shape[0]
    # heads first: [Hv, T, .]
    q, k, v = (x.transpose(0, 1) for x in (q, k, v))
    g, beta = g.transpose(0, 1), beta.transpose(0, 1)
    outs = []
    for s0 in range(0, T, chunk):
        sl = slice(s0, min(s0 + chunk, T))
        qc, kc, vc, bc = q[:, sl], k[:, sl], v[:, sl], beta[:, sl]
        n = qc.shape[1]
        c = g[:, sl].cumsum(dim=1)  # [Hv, n]
        diff = c[:, :, None] - c[:, None, :]  # c_r - c_s
        lower_incl = torch.ones(n, n, dtype=torch.bool).tril()
        decay = torch.where(lower_incl, diff, torch.full_like(diff, float("-inf"))).exp()  # 0 above diagonal
        strict = torch.ones(n, n, dtype=torch.bool).tril(-1)
        A = bc[:, :, None] * (kc @ kc.transpose(-1, -2)) * decay * strict
        eye = torch.eye(n, dtype=F64).expand_as(A)
        rhs = bc[:, :, None] * vc - (bc * c.exp())[:, :, None] * (kc @ S)  # [Hv, n, dv]
        d = torch.linalg.solve_triangular(eye + A, rhs, upper=False, unitriangular=True)
        o = c.exp()[:, :, None] * (qc @ S) + ((qc @ kc.transpose(-1, -2)) * decay) @ d
        outs.append(o)
        last = c[:, -1:]  # [Hv, 1]
        S = last.exp()[:, :, None] * S + (kc * (last - c).exp()[:, :, None]).transpose(-1, -2) @ d
    return torch.cat(outs, dim=1).transpose(0, 1), S


def linear_attention(w, pre, p, h, state, chunk):
    """h [T, C]; state {"conv": [K-1, conv_dim], "S": [Hv, dk, dv]}, replaced by the states
    after h. chunk None: the recurrent rule; else the chunked one with that chunk size."""
    T = h.shape[0]
    a = pre + "linear_attn."
    mixed = linear(w, a + "in_proj_qkv", h)  # [T, conv_dim]: [q (Hk*dk) | k (Hk*dk) | v (Hv*dv)]
    z = linear(w, a + "in_proj_z", h).view(T, p.Hv, p.dv)
    b = linear(w, a + "in_proj_b", h)  # [T, Hv]
    alpha = linear(w, a + "in_proj_a", h)  # [T, Hv]
    conv_w = w[a + "conv1d.weight"].reshape(p.conv_dim, p.K)  # stored [conv_dim, 1, K]
    mixed, state["conv"] = causal_conv(mixed, conv_w, w.get(a + "conv1d.bias"), state["conv"])
    q = mixed[:, : p.key_dim].reshape(T, p.Hk, p.dk)
    k = mixed[:, p.key_dim: 2 * p.key_dim].reshape(T, p.Hk, p.dk)
    v = mixed[:, 2 * p.key_dim:].reshape(T, p.Hv, p.dv)
    beta = torch.sigmoid(b)
    g = -w[a + "A_log"].exp() * F.softplus(alpha + w[a + "dt_bias"])  # log decay, <= 0
    # Value head h reads key head h // (Hv/Hk) (repeat_interleave: consecutive value heads
    # share a key head).
    r = p.Hv // p.Hk
    q = l2_normalise(q).repeat_interleave(r, dim=1) / math.sqrt(p.dk)
    k = l2_normalise(k).repeat_interleave(r, dim=1)
    if chunk is None:
        o, state["S"] = delta_rule_recurrent(q, k, v, g, beta, state["S"])
    else:
        o, state["S"] = delta_rule_chunked(q, k, v, g, beta, state["S"], chunk)
    o = gated_rms_norm(o, z, w[a + "norm.weight"], p.eps).reshape(T, p.value_dim)
    return linear(w, a + "out_proj", o)


# ----------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------


def new_state(p):
    """The decode state of every layer: conv + recurrent state for linear attention (fixed
    size), a KV cache (growing) for full attention."""
    return [{"conv": torch.zeros(p.K - 1, p.conv_dim, dtype=F64), "S": torch.zeros(p.Hv, p.dk, p.dv, dtype=F64)}
            if kind == "linear" else {} for kind in p.types]


def run_segment(w, p, tokens, start, state, chunk):
    """Logits [T, V] of `tokens` at positions start.., the layers' states carried in `state`."""
    x = F.embedding(torch.tensor(tokens), w["model.embed_tokens.weight"])
    for l, kind in enumerate(p.types):
        pre = f"model.layers.{l}."
        h = rms_norm_1p(x, w[pre + "input_layernorm.weight"], p.eps)
        if kind == "linear":
            x = x + linear_attention(w, pre, p, h, state[l], chunk)
        else:
            x = x + full_attention(w, pre, p, h, start, state[l])
        x = x + mlp(w, pre, rms_norm_1p(x, w[pre + "post_attention_layernorm.weight"], p.eps))
    x = rms_norm_1p(x, w["model.norm.weight"], p.eps)
    if p.tied:
        head = w["model.embed_tokens.weight"]
    else:
        assert "lm_head.weight" in w, "tie_word_embeddings is false but there is no lm_head.weight"
        head = w["lm_head.weight"]
    return F.linear(x, head)


def prepare(w, cfg):
    p = hyper(cfg)
    w = text_weights(w)
    return w, p


def forward_chunked(w, cfg, tokens, chunk_size=64):
    """All positions at once; the delta rule chunked by `chunk_size`."""
    w, p = prepare(w, cfg)
    return run_segment(w, p, tokens, 0, new_state(p), chunk_size)


def forward_recurrent(w, cfg, tokens):
    """One token at a time from the decode states (conv, recurrent, KV cache)."""
    w, p = prepare(w, cfg)
    state = new_state(p)
    return torch.cat([run_segment(w, p, [tok], i, state, None) for i, tok in enumerate(tokens)])


def forward_segments(w, cfg, tokens, prefill, chunk_size=64):
    """A chunked prefill of tokens[:prefill], then token-by-token decode of the rest."""
    w, p = prepare(w, cfg)
    state = new_state(p)
    parts = [run_segment(w, p, tokens[:prefill], 0, state, chunk_size)] if prefill else []
    parts += [run_segment(w, p, [tokens[i]], i, state, None) for i in range(prefill, len(tokens))]
    return torch.cat(parts)


def forward(w, cfg, tokens):
    """The logits [len(tokens), vocab] as transformers computes a whole sequence (chunked, 64)."""
    return forward_chunked(w, cfg, tokens, 64)


def main():
    args = sys.argv[1:]
    chunk = 64
    if "--chunk-size" in args:
        i = args.index("--chunk-size")
        chunk = int(args[i + 1])
        del args[i: i + 2]
    model_dir, seed, tokens_csv, out_path = args
    cfg, w = read_model(model_dir)
    tokens = [int(t) for t in tokens_csv.split(",")]
    with torch.no_grad():
        chunked = forward_chunked(w, cfg, tokens, chunk)
        recurrent = forward_recurrent(w, cfg, tokens)
    diff = (chunked - recurrent).abs().max().item()
    scale = chunked.abs().max().item()
    assert diff <= 1e-9 * max(scale, 1e-300), "recurrent and chunked forms disagree: %g (scale %g)" % (diff, scale)
    golden_cfg = dict(cfg)
    if "vocab_size" not in golden_cfg:  # a multimodal config: write_golden reads vocab_size
        golden_cfg["vocab_size"] = text_config(cfg)["vocab_size"]
    write_golden("tests/reference/qwen3_5_reference.py", golden_cfg, None, seed, tokens, chunked, out_path,
                 extra={"recurrent_vs_chunked_max_abs": diff, "chunk_size": chunk})


if __name__ == "__main__":
    main()
