#!/usr/bin/python3
"""Self-test of gemma3_reference.py, on tiny random Gemma 3 folders it writes itself
(config.json + model.safetensors in F32, written with numpy, every tensor under the name and
shape transformers gives it). It checks:

  (a) the logits of the whole sequence equal those of a second, token-by-token pass with a KV
      cache written here, whose sliding layers keep only the last sliding_window keys (the way a
      sliding-window cache does) and attend to everything they kept, so the window rule is
      computed a second, different way; with and without the tanh cappings, tied and untied;
  (b) the receptive field the window rule implies: with every layer sliding (window W, L layers)
      a token changes exactly the outputs 0 .. L*(W-1) positions after it (W keys, the query's
      own included: i - W < j <= i); with one full layer it changes every later output;
  (c) the folder layouts read alike: the multimodal "gemma3" config (text keys under
      text_config, defaults left out, the older sliding_window_pattern) with weights named
      language_model.model.* or model.language_model.*, and transformers 5's rope_parameters,
      give the same logits as the text folder;
  (d) the golden command line writes a golden of every position;
  (e) if transformers is importable (it is not, on Orion's machines), the logits equal
      Gemma3ForCausalLM's in float64.

Usage: /usr/bin/python3 tests/reference/gemma3_selftest.py   (a few seconds; prints one line a check)
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gemma3_reference as g  # noqa: E402
from golden_io import read_model  # noqa: E402
from hf_folder import write_folder  # noqa: E402

torch.set_num_threads(1)  # tiny tensors; leave the machine's cores to whatever else runs

T = 40  # tokens in a run: ten windows of 4

# A tiny text model: 3 layers (two sliding, then a full one), GQA 4 query heads over 2 key/value
# heads, head_dim 16 != hidden/heads, query_pre_attn_scalar 24 != head_dim, window 4, linear
# rope scaling on the full layer as the 4B has it.
BASE = {
    "architectures": ["Gemma3ForCausalLM"],
    "model_type": "gemma3_text",
    "vocab_size": 97,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 128,
    "rms_norm_eps": 1e-6,
    "query_pre_attn_scalar": 24,
    "sliding_window": 4,
    "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
    "rope_theta": 1000000.0,
    "rope_local_base_freq": 10000.0,
    "rope_scaling": {"rope_type": "linear", "factor": 8.0},
    "attn_logit_softcapping": None,
    "final_logit_softcapping": None,
    "attention_bias": False,
    "tie_word_embeddings": True,
    "bos_token_id": 2,
    "eos_token_id": 1,
    "pad_token_id": 0,
    "torch_dtype": "float32",
}


def random_weights(cfg, seed):
    """Every tensor of Gemma3ForCausalLM under its transformers name and shape, random. Norm
    weights are random offsets from one (the stored value w of (1 + w))."""
    rng = np.random.default_rng(seed)
    C, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    H, KV, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]

    def mat(rows, cols, std=None):
        return rng.normal(0.0, std or cols ** -0.5, (rows, cols)).astype(np.float32)

    def vec(n):
        return rng.normal(0.0, 0.3, n).astype(np.float32)

    w = {"model.embed_tokens.weight": mat(V, C, 0.3), "model.norm.weight": vec(C)}
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        w[p + "input_layernorm.weight"] = vec(C)
        w[p + "self_attn.q_proj.weight"] = mat(H * D, C)
        w[p + "self_attn.k_proj.weight"] = mat(KV * D, C)
        w[p + "self_attn.v_proj.weight"] = mat(KV * D, C)
        w[p + "self_attn.o_proj.weight"] = mat(C, H * D)
        w[p + "self_attn.q_norm.weight"] = vec(D)
        w[p + "self_attn.k_norm.weight"] = vec(D)
        w[p + "post_attention_layernorm.weight"] = vec(C)
        w[p + "pre_feedforward_layernorm.weight"] = vec(C)
        w[p + "mlp.gate_proj.weight"] = mat(I, C)
        w[p + "mlp.up_proj.weight"] = mat(I, C)
        w[p + "mlp.down_proj.weight"] = mat(C, I)
        w[p + "post_feedforward_layernorm.weight"] = vec(C)
    if not cfg.get("tie_word_embeddings", True):
        w["lm_head.weight"] = mat(V, C, 0.3)
    return w


def tokens_for(vocab, n=T):
    return [(i * 7919 + 13) % vocab for i in range(n)]


def incremental_logits(w, cfg, tokens):
    """The logits of `tokens` fed one at a time through a KV cache: every layer keeps the
    rotated keys and the values of the positions it has seen, a sliding layer only the last
    sliding_window of them; each new query attends to all its layer kept (no mask at all)."""
    w, t = g.prepare(w, cfg)
    layers = [g.Layer(w, t, l) for l in range(t["num_hidden_layers"])]
    cache = [([], []) for _ in layers]  # per layer: lists of k [KV, 1, D] and v [KV, 1, D]
    out = []
    for i, tok in enumerate(tokens):
        x = g.embed(w, t, [tok])
        pos = torch.tensor([i])
        for L, (ks, vs) in zip(layers, cache):
            q, k, v = L.qkv(L.norm("input_layernorm", x), pos)
            ks.append(k)
            vs.append(v)
            if L.type == "sliding_attention" and len(ks) > L.window:
                del ks[0], vs[0]  # the key i - W leaves: i - W < j <= i stay
            K, V = torch.cat(ks, dim=1), torch.cat(vs, dim=1)
            y = L.attend(q, K, V, torch.ones(1, K.shape[1], dtype=torch.bool))
            x = L.finish(x, y)
        out.append(g.head(w, t, x))
    return torch.cat(out, dim=0)


def max_diff(a, b):
    return (a - b).abs().max().item()


CHECKS = []


def check(name, ok, detail=""):
    CHECKS.append(ok)
    print("%s  %s%s" % ("ok  " if ok else "FAIL", name, ("  (" + detail + ")") if detail else ""))


def run(tmp):
    tokens = tokens_for(BASE["vocab_size"])

    # The pieces against their definitions.
    x = torch.linspace(-6, 6, 101, dtype=torch.float64)
    check("gelu_tanh equals F.gelu(approximate='tanh')", max_diff(g.gelu_tanh(x), F.gelu(x, approximate="tanh")) < 1e-14)
    m = g.attention_mask(torch.arange(12), torch.arange(12), "sliding_attention", 4)
    check("the sliding row of query 10 (W=4) is keys 7..10", m[10].nonzero().flatten().tolist() == [7, 8, 9, 10])
    full = g.attention_mask(torch.arange(12), torch.arange(12), "full_attention", 4)
    check("the full row of query 10 is keys 0..10", full[10].nonzero().flatten().tolist() == list(range(11)))
    pos = torch.arange(T)
    lin, dflt = {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}, {"rope_type": "default", "rope_theta": 1e6}
    c1, s1 = g.rotary_cos_sin(pos, lin, 16)
    c2, s2 = g.rotary_cos_sin(pos.double() / 8, dflt, 16)
    check("linear rope factor 8 at p equals default rope at p/8", max(max_diff(c1, c2), max_diff(s1, s2)) < 1e-12)
    t6 = g.text_config(dict(BASE, num_hidden_layers=26, layer_types=None, sliding_window_pattern=6))
    check("sliding_window_pattern 6 over 26 layers makes 5, 11, 17, 23 full",
          [i for i, k in enumerate(t6["layer_types"]) if k == "full_attention"] == [5, 11, 17, 23])
    check("embedding scale: bf16 rounds sqrt(640) to 25.25, sqrt(1152) to 34",
          g.embed_scale({"hidden_size": 640}, torch.bfloat16).item() == 25.25
          and g.embed_scale({"hidden_size": 1152}, torch.bfloat16).item() == 34.0)

    # (a) whole sequence == token by token through a KV cache, over variants of the model.
    variants = {
        "base (2 sliding + 1 full, GQA, linear rope)": BASE,
        "tanh capping of scores 2.0 and of logits 3.0": dict(BASE, attn_logit_softcapping=2.0, final_logit_softcapping=3.0),
        "untied head (lm_head.weight)": dict(BASE, tie_word_embeddings=False),
        "every layer sliding, window 1 (a query sees itself only)": dict(BASE, layer_types=["sliding_attention"] * 3, sliding_window=1),
        "multi-query (1 kv head), window 7": dict(BASE, num_key_value_heads=1, sliding_window=7),
    }
    for k, (name, cfg) in enumerate(variants.items()):
        folder = write_folder(os.path.join(tmp, "v%d" % k), cfg, random_weights(cfg, 100 + k))
        c, w = read_model(folder)
        full_pass = g.forward(w, c, tokens)
        inc = incremental_logits(w, c, tokens)
        d = max_diff(full_pass, inc)
        check("(a) KV-cache pass equals the full pass: " + name, d < 1e-10, "max |diff| %.2e, logits up to %.1f"
              % (d, full_pass.abs().max().item()))
        if "capping of scores" in name:
            # The final capping alone is cap * tanh(logits / cap) of the uncapped logits.
            no_final = g.forward(w, dict(c, final_logit_softcapping=None), tokens)
            d = max_diff(full_pass, 3.0 * torch.tanh(no_final / 3.0))
            check("    final_logit_softcapping 3 is 3 tanh(logits / 3) of logits up to %.1f" % no_final.abs().max().item(),
                  d < 1e-12 and no_final.abs().max().item() > 3.0)
            no_attn = g.forward(w, dict(c, attn_logit_softcapping=None), tokens)
            check("    and attn_logit_softcapping 2 changes the logits", max_diff(no_attn, full_pass) > 1e-6)

    # (b) the receptive field of the window.
    def changed_positions(cfg, seed, p):
        c, w = read_model(write_folder(os.path.join(tmp, "rf%d" % seed), cfg, random_weights(cfg, seed)))
        a = g.forward(w, c, tokens)
        other = list(tokens)
        other[p] = (other[p] + 1) % cfg["vocab_size"]
        b = g.forward(w, c, other)
        diff = (a - b).abs().max(dim=1).values
        assert ((diff == 0) | (diff > 1e-8)).all(), "a position changed by a rounding error only"
        return [q for q in range(T) if diff[q] > 0]

    W, p = 4, 10
    for layers in (1, 2, 3):
        cfg = dict(BASE, num_hidden_layers=layers, layer_types=["sliding_attention"] * layers, sliding_window=W)
        reach = layers * (W - 1)
        got = changed_positions(cfg, 200 + layers, p)
        check("(b) %d sliding layer(s), W=%d: token %d changes exactly positions %d..%d" % (layers, W, p, p, p + reach),
              got == list(range(p, p + reach + 1)), "changed %s" % (got[:1] + ["..."] + got[-1:] if got else got))
    got = changed_positions(BASE, 210, p)
    check("(b) with the full layer: token %d changes every position %d..%d" % (p, p, T - 1), got == list(range(p, T)))
    cfg = dict(BASE, layer_types=["full_attention", "sliding_attention", "sliding_attention"])
    got = changed_positions(cfg, 211, 2)
    check("(b) full layer first, then 2 sliding: token 2 changes every later position", got == list(range(2, T)))

    # (c) the other folder layouts read alike.
    weights = random_weights(BASE, 300)
    c, w = read_model(write_folder(os.path.join(tmp, "text"), BASE, weights))
    want = g.forward(w, c, tokens)
    text_keys = {k: v for k, v in BASE.items() if k not in ("architectures", "torch_dtype")}
    # Leave out what Gemma3TextConfig's defaults give (as the published gemma-3-4b does), and
    # give the pattern as the older integer (3: layers 0, 1 slide, layer 2 is full).
    for k in ("rope_theta", "rope_local_base_freq", "rms_norm_eps", "hidden_activation", "layer_types",
              "tie_word_embeddings", "bos_token_id", "eos_token_id", "pad_token_id", "attention_bias",
              "attn_logit_softcapping", "final_logit_softcapping"):
        text_keys.pop(k)
    text_keys["sliding_window_pattern"] = 3
    mm_cfg = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
              "boi_token_index": 255999, "eoi_token_index": 256000, "image_token_index": 262144,
              "mm_tokens_per_image": 256, "text_config": text_keys,
              "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 8}}
    vision = {"vision_tower.vision_model.post_layernorm.weight": np.ones(8, np.float32),
              "multi_modal_projector.mm_input_projection_weight": np.zeros((8, 32), np.float32)}
    for prefix, name in (("language_model.model.", "Google's language_model.model.*"),
                         ("model.language_model.", "transformers 4.52's model.language_model.*")):
        mm_w = {prefix + k[len("model."):]: v for k, v in weights.items()}
        mm_w.update({("model." if prefix.startswith("model.") else "") + k: v for k, v in vision.items()})
        c2, w2 = read_model(write_folder(os.path.join(tmp, "mm_" + prefix.split(".")[0]), mm_cfg, mm_w))
        d = max_diff(g.forward(w2, c2, tokens), want)
        check("(c) multimodal gemma3 folder, " + name + ", defaults and pattern: same logits", d == 0, "max |diff| %.1e" % d)
    v5 = dict(BASE)
    for k in ("rope_theta", "rope_local_base_freq", "rope_scaling"):
        v5.pop(k)
    v5["rope_parameters"] = {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                             "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}
    c3, w3 = read_model(write_folder(os.path.join(tmp, "v5"), v5, weights))
    d = max_diff(g.forward(w3, c3, tokens), want)
    check("(c) transformers 5's rope_parameters: same logits", d == 0, "max |diff| %.1e" % d)
    swapped = dict(BASE, rope_local_base_freq=1000000.0, rope_theta=10000.0)
    c4, w4 = read_model(write_folder(os.path.join(tmp, "swapped"), swapped, weights))
    check("(c) and the two bases matter (swapping them changes the logits)", max_diff(g.forward(w4, c4, tokens), want) > 1e-6)

    # (d) the golden command line.
    out = os.path.join(tmp, "golden.json")
    subprocess.run([sys.executable, os.path.join(HERE, "gemma3_reference.py"), os.path.join(tmp, "mm_language_model"), "7",
                    ",".join(map(str, tokens)), out], check=True)
    with open(out) as f:
        golden = json.load(f)
    pick = golden["vocab_ids"]
    d = max(abs(golden["logits"][t_][i] - want[t_, v].item()) for t_ in range(T) for i, v in enumerate(pick))
    check("(d) the golden command line on the multimodal folder: %d positions, its config.json, same logits" % T,
          len(golden["logits"]) == T and golden["config"]["model_type"] == "gemma3" and d < 1e-6, "max |diff| %.1e" % d)

    # (e) transformers itself, where it is installed.
    try:
        import transformers  # noqa: F401
        from transformers import Gemma3ForCausalLM, Gemma3TextConfig
    except ImportError:
        print("skip  (e) transformers is not importable here; the comparison with Gemma3ForCausalLM did not run")
        return
    hf_cfg = copy.deepcopy(BASE)
    for k in ("architectures", "model_type", "torch_dtype"):
        hf_cfg.pop(k)
    model = Gemma3ForCausalLM(Gemma3TextConfig(**hf_cfg, attn_implementation="eager")).double().eval()
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(v).double() for k, v in weights.items()}, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    with torch.no_grad():
        hf = model(torch.tensor([tokens])).logits[0]
    d = max_diff(hf, want)
    check("(e) equals transformers %s Gemma3ForCausalLM (eager, float64)" % transformers.__version__, d < 1e-9, "max |diff| %.1e" % d)


def main():
    with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
        run(tmp)
    print("%d passed, %d failed" % (sum(CHECKS), len(CHECKS) - sum(CHECKS)))
    sys.exit(0 if all(CHECKS) else 1)


if __name__ == "__main__":
    main()
