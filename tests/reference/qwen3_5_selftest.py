#!/usr/bin/env python3
"""Self-test of qwen3_5_reference.py, with nothing of Orion's: writes tiny random Qwen3.5 text
models itself (config.json + model.safetensors, F32, every tensor named and shaped as
transformers' Qwen3_5ForCausalLM names them), and checks that
  - the recurrent (token by token), chunked (chunk sizes 4, 7 and 64) and prefill-then-decode
    forms give the same logits to 1e-9 relative;
  - the chunked delta rule from a non-zero start state matches the recurrent one, and the
    hand-written causal conv matches torch's conv1d with left padding;
  - the logits are causal (a later token changes no earlier logit) and every kind of layer
    matters;
  - Hugging Face's multimodal layout (text_config, model.language_model.* names, tied head,
    vision/MTP tensors to ignore, rope_parameters with mrope fields) gives the same logits as
    the same weights at top level;
  - main() writes a golden file with the agreement recorded;
  - and, if transformers happens to be importable, Qwen3_5ForCausalLM's logits agree (to its
    float32 delta rule's precision).
Usage: qwen3_5_selftest.py   (takes a few seconds)"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen3_5_reference as ref  # noqa: E402
from golden_io import read_model  # noqa: E402
from hf_folder import write_folder  # noqa: E402

torch.set_num_threads(1)  # tiny tensors; leave the machine's cores alone

TINY = {
    "architectures": ["Qwen3_5ForCausalLM"],
    "model_type": "qwen3_5_text",
    "vocab_size": 300,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 4,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-6,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "max_position_embeddings": 128,
    "tie_word_embeddings": False,
    # Grouped value heads (Hv = 2 Hk) and d_k != d_v, so that a transposed state or a wrong
    # head grouping shows.
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 16,
    "linear_value_head_dim": 12,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
}


def tensor_shapes(c):
    """name -> shape of every tensor of Qwen3_5ForCausalLM for config c (text config)."""
    C, V, I = c["hidden_size"], c["vocab_size"], c["intermediate_size"]
    H, KV, D = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    Hk, Hv = c["linear_num_key_heads"], c["linear_num_value_heads"]
    dk, dv, K = c["linear_key_head_dim"], c["linear_value_head_dim"], c["linear_conv_kernel_dim"]
    conv_dim = 2 * Hk * dk + Hv * dv
    types = c.get("layer_types") or [
        "full_attention" if (i + 1) % c.get("full_attention_interval", 4) == 0 else "linear_attention"
        for i in range(c["num_hidden_layers"])]
    s = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    for l, kind in enumerate(types):
        p = f"model.layers.{l}."
        s[p + "input_layernorm.weight"] = (C,)
        s[p + "post_attention_layernorm.weight"] = (C,)
        s[p + "mlp.gate_proj.weight"] = (I, C)
        s[p + "mlp.up_proj.weight"] = (I, C)
        s[p + "mlp.down_proj.weight"] = (C, I)
        if kind == "linear_attention":
            a = p + "linear_attn."
            s[a + "in_proj_qkv.weight"] = (conv_dim, C)
            s[a + "in_proj_z.weight"] = (Hv * dv, C)
            s[a + "in_proj_b.weight"] = (Hv, C)
            s[a + "in_proj_a.weight"] = (Hv, C)
            s[a + "conv1d.weight"] = (conv_dim, 1, K)
            s[a + "A_log"] = (Hv,)
            s[a + "dt_bias"] = (Hv,)
            s[a + "norm.weight"] = (dv,)
            s[a + "out_proj.weight"] = (C, Hv * dv)
        else:
            a = p + "self_attn."
            s[a + "q_proj.weight"] = (2 * H * D, C)  # per head: query then gate
            s[a + "k_proj.weight"] = (KV * D, C)
            s[a + "v_proj.weight"] = (KV * D, C)
            s[a + "o_proj.weight"] = (C, H * D)
            s[a + "q_norm.weight"] = (D,)
            s[a + "k_norm.weight"] = (D,)
    if not c.get("tie_word_embeddings", False):
        s["lm_head.weight"] = (V, C)
    return s


def random_weights(c, seed):
    rng = np.random.default_rng(seed)
    w = {}
    for name, shape in tensor_shapes(c).items():
        if name.endswith("A_log"):
            a = np.log(rng.uniform(0.05, 2.0, shape))  # moderate decays, so state crosses chunks
        elif name.endswith("dt_bias"):
            a = rng.normal(0.0, 0.5, shape)
        elif name.endswith("linear_attn.norm.weight"):
            a = 1.0 + 0.2 * rng.normal(size=shape)  # used as w
        elif len(shape) == 1:
            a = 0.2 * rng.normal(size=shape)  # the (1 + w) norms
        elif name.endswith("conv1d.weight"):
            a = rng.normal(0.0, 0.5, shape)
        elif name.endswith("embed_tokens.weight"):
            a = rng.normal(0.0, 1.0, shape)
        else:
            a = rng.normal(0.0, 1.0 / math.sqrt(shape[1]), shape)
        w[name] = a.astype(np.float32)
    return w


def rel(a, b):
    return (a - b).abs().max().item() / max(a.abs().max().item(), 1e-300)


def check(name, value, limit):
    ok = value <= limit
    print("%-58s %.3e  (limit %.0e) %s" % (name, value, limit, "ok" if ok else "FAIL"))
    assert ok, name


def test_pieces():
    torch.manual_seed(0)
    # the conv: against torch's depthwise conv1d with left padding K-1
    T, Cc, K = 9, 5, 4
    x, wt = torch.randn(T, Cc, dtype=torch.float64), torch.randn(Cc, K, dtype=torch.float64)
    mine, st = ref.causal_conv(x, wt, None, torch.zeros(K - 1, Cc, dtype=torch.float64))
    theirs = F.silu(F.conv1d(x.T[None], wt[:, None, :], padding=K - 1, groups=Cc)[0, :, :T].T)
    check("causal conv vs torch conv1d", rel(theirs, mine), 1e-12)
    # split in two with the state carried
    a, st = ref.causal_conv(x[:4], wt, None, torch.zeros(K - 1, Cc, dtype=torch.float64))
    b, _ = ref.causal_conv(x[4:], wt, None, st)
    check("causal conv in two parts via the conv state", rel(theirs, torch.cat((a, b))), 1e-12)
    # the delta rule from a non-zero state, several chunk sizes
    T, Hv, dk, dv = 23, 3, 6, 5
    q = ref.l2_normalise(torch.randn(T, Hv, dk, dtype=torch.float64)) / math.sqrt(dk)
    k = ref.l2_normalise(torch.randn(T, Hv, dk, dtype=torch.float64))
    v = torch.randn(T, Hv, dv, dtype=torch.float64)
    g = -torch.rand(T, Hv, dtype=torch.float64) * 0.5
    beta = torch.rand(T, Hv, dtype=torch.float64)
    S0 = torch.randn(Hv, dk, dv, dtype=torch.float64)
    o_r, S_r = ref.delta_rule_recurrent(q, k, v, g, beta, S0)
    for chunk in (1, 4, 7, 64):
        o_c, S_c = ref.delta_rule_chunked(q, k, v, g, beta, S0, chunk)
        check("delta rule chunk %d vs recurrent: outputs" % chunk, rel(o_r, o_c), 1e-12)
        check("delta rule chunk %d vs recurrent: final state" % chunk, rel(S_r, S_c), 1e-12)


def test_model(tmp):
    d = os.path.join(tmp, "tiny")
    write_folder(d, TINY, random_weights(TINY, 1))
    cfg, w = read_model(d)
    V = cfg["vocab_size"]
    tokens = [(i * 7919 + 13) % V for i in range(40)]
    with torch.no_grad():
        rec = ref.forward_recurrent(w, cfg, tokens)
        assert rec.shape == (40, V)
        for chunk in (4, 7, 64):
            check("model: chunked (%d) vs recurrent" % chunk, rel(rec, ref.forward_chunked(w, cfg, tokens, chunk)), 1e-9)
        check("model: forward() vs recurrent", rel(rec, ref.forward(w, cfg, tokens)), 1e-9)
        check("model: prefill 13 (chunk 4) then decode vs recurrent",
              rel(rec, ref.forward_segments(w, cfg, tokens, 13, 4)), 1e-9)
        # causality: change the last 10 tokens, the first 30 rows stay
        other = tokens[:30] + [(t + 1) % V for t in tokens[30:]]
        changed = ref.forward_chunked(w, cfg, other, 7)
        check("model: causal (rows before a change unchanged)", rel(rec[:30], changed[:30]), 1e-12)
        assert rel(rec[30:], changed[30:]) > 1e-3
        # every kind of layer matters
        for name in ("model.layers.0.linear_attn.out_proj.weight", "model.layers.3.self_attn.o_proj.weight",
                     "model.layers.2.linear_attn.A_log"):
            w2 = dict(w)
            w2[name] = torch.zeros_like(w[name]) if "proj" in name else w[name] + 1.0
            assert rel(rec, ref.forward_chunked(w2, cfg, tokens, 64)) > 1e-3, name
        print("model: logits[0, :4] =", [round(x, 6) for x in rec[0, :4].tolist()])
        print("model: logits std %.4f, rows distinct: %s" % (rec.std().item(), bool((rec[1:] - rec[:-1]).abs().max() > 1e-3)))
    return d, cfg, w, tokens, rec


def test_multimodal_layout(tmp, cfg, w, tokens):
    """The same weights as Hugging Face publishes Qwen3.5: a multimodal config and
    model.language_model.* names, tied head (so lm_head dropped: use a tied copy at top level
    as the expectation)."""
    text = dict(cfg)
    for k in ("architectures", "model_type", "layer_types"):
        text.pop(k)
    text["model_type"] = "qwen3_5_text"
    text["full_attention_interval"] = 4  # the same layer types, derived
    text["rope_parameters"] = {"mrope_interleaved": True, "mrope_section": [1, 1, 2], "rope_type": "default",
                               "rope_theta": 10000.0, "partial_rotary_factor": 0.25}
    text["tie_word_embeddings"] = True
    multi = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
             "text_config": text, "vision_config": {"model_type": "qwen3_5_vision"}, "tie_word_embeddings": True}
    tensors = {}
    for name, t in w.items():
        if name == "lm_head.weight":
            continue
        tensors[name.replace("model.", "model.language_model.", 1)] = t.numpy().astype(np.float32)
    tensors["model.visual.blocks.0.attn.qkv.weight"] = np.zeros((3, 2), np.float32)
    tensors["mtp.fc.weight"] = np.zeros((2, 2), np.float32)
    d = os.path.join(tmp, "multimodal")
    write_folder(d, multi, tensors)
    mcfg, mw = read_model(d)
    flat_cfg = dict(cfg, tie_word_embeddings=True)
    flat_w = {k: v for k, v in w.items() if k != "lm_head.weight"}
    with torch.no_grad():
        expect = ref.forward_chunked(flat_w, flat_cfg, tokens, 64)
        got = ref.forward_chunked(mw, mcfg, tokens, 64)
        check("multimodal layout vs the same weights at top level", rel(expect, got), 1e-12)
        check("multimodal layout: recurrent vs chunked (5)",
              rel(ref.forward_recurrent(mw, mcfg, tokens), ref.forward_chunked(mw, mcfg, tokens, 5)), 1e-9)


def test_main(d, tokens):
    out = os.path.join(os.path.dirname(d), "golden.json")
    subprocess.run([sys.executable, os.path.join(HERE, "qwen3_5_reference.py"), d, "1",
                    ",".join(map(str, tokens)), out, "--chunk-size", "4"], check=True)
    with open(out) as f:
        g = json.load(f)
    assert g["chunk_size"] == 4 and g["config"]["model_type"] == "qwen3_5_text"
    assert len(g["logits"]) == len(tokens) and len(g["logsumexp"]) == len(tokens)
    check("main(): recurrent_vs_chunked_max_abs in the golden file", g["recurrent_vs_chunked_max_abs"], 1e-9)


def test_transformers(d, tokens, rec):
    try:
        from transformers import Qwen3_5ForCausalLM  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure means: not available here
        print("transformers: not importable here (%s); comparison skipped" % type(e).__name__)
        return
    from transformers import Qwen3_5ForCausalLM
    try:
        model = Qwen3_5ForCausalLM.from_pretrained(d, dtype=torch.float64, attn_implementation="eager")
    except TypeError:
        model = Qwen3_5ForCausalLM.from_pretrained(d, torch_dtype=torch.float64, attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        theirs = model(torch.tensor([tokens])).logits[0].to(torch.float64)
    # transformers runs the delta rule and the gated norm in float32 whatever the dtype.
    check("transformers Qwen3_5ForCausalLM vs reference", rel(rec, theirs), 1e-4)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_pieces()
        d, cfg, w, tokens, rec = test_model(tmp)
        test_multimodal_layout(tmp, cfg, w, tokens)
        test_main(d, tokens)
        test_transformers(d, tokens, rec)
    print("qwen3_5 self-test: all passed")


if __name__ == "__main__":
    main()
