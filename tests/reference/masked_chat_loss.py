#!/usr/bin/python3
"""Independent reference for `orion perplexity --data FILE.jsonl --mask-prompt`: the masked
loss of chat records, computed as Hugging Face's stack computes it, with nothing of Orion's.

For each record (one conversation ending with an assistant turn):
  - the chat template from tokenizer_config.json rendered by python3-jinja2 in transformers'
    environment (render_chat.py's): the whole conversation, and the prompt, which is the
    messages before the last one with add_generation_prompt=True (mlx-lm's --mask-prompt);
  - both texts tokenized by Hugging Face's JavaScript tokenizers (hf_tokenize.mjs, no special
    tokens added, as apply_chat_template tokenizes);
  - the model's logits from llama_reference.py's float64 torch forward pass (gemma3_reference.py's
    for a Gemma 3 folder, qwen3_5_reference.py's for a Qwen3.5 one);
  - the loss: mean over the positions after the prompt's tokens of -log softmax(logits)[next].
The records' losses are pooled over all their answer tokens (the mean over every trained
token, not the mean of the records' means).

Usage: masked_chat_loss.py MODEL_DIR RECORDS.jsonl NODE_MODULES OUT.json [EMBED_SCALE]
EMBED_SCALE multiplies the embedding (tied to the head) after reading, as the C++ test does to
the folder before Orion reads it: a model made by `orion init` starts with logits so small that
every loss is about log(vocabulary), whatever the tokens; scaled, the loss depends on them.
OUT gets {"loss": float, "tokens": int, "records": [{"prompt_tokens", "tokens"}...]}.
"""
import json
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_io import read_model  # noqa: E402
import gemma3_reference  # noqa: E402
import llama_reference  # noqa: E402
import qwen3_5_reference  # noqa: E402
import render_chat  # noqa: E402


def environment():
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[render_chat.Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = render_chat.tojson
    env.globals["raise_exception"] = render_chat.raise_exception
    env.globals["strftime_now"] = render_chat.strftime_now
    return env


def special_tokens(config):
    out = {}
    for k, v in config.items():
        if k.endswith("_token") and v is not None:
            out[k] = v["content"] if isinstance(v, dict) else v
    return out


def tokenize(node_modules, model_dir, texts):
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "texts.json"), os.path.join(tmp, "ids.json")
        with open(src, "w", encoding="utf-8") as f:
            json.dump(texts, f, ensure_ascii=False)
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run(["node", os.path.join(here, "hf_tokenize.mjs"), node_modules, model_dir, src, dst], check=True)
        with open(dst, encoding="utf-8") as f:
            return [r["ids"] for r in json.load(f)]


def main():
    model_dir, records_path, node_modules, out_path = sys.argv[1:5]
    scale = float(sys.argv[5]) if len(sys.argv) > 5 else 1.0
    with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    template = environment().from_string(config["chat_template"])
    special = special_tokens(config)
    with open(records_path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    texts = []
    for r in records:
        messages = r["messages"]
        assert messages[-1]["role"] == "assistant"
        for msgs, gen in ((messages, False), (messages[:-1], True)):
            texts.append(template.render(**special, messages=msgs, tools=None, documents=None, add_generation_prompt=gen))
    ids = tokenize(node_modules, model_dir, texts)
    cfg, w = read_model(model_dir)
    # Each family's own reference: Gemma 3's, or the Llama family's.
    forward = {"gemma3_text": gemma3_reference.forward, "qwen3_5_text": qwen3_5_reference.forward}.get(
        cfg.get("model_type"), llama_reference.forward)
    w["model.embed_tokens.weight"] = w["model.embed_tokens.weight"] * scale
    total, count, per = 0.0, 0, []
    with torch.no_grad():
        for i in range(len(records)):
            full, prompt = ids[2 * i], ids[2 * i + 1]
            assert full[:len(prompt)] == prompt, "the prompt's tokens are not how the conversation's begin"
            logits = forward(w, cfg, full)
            logp = torch.log_softmax(logits, dim=-1)
            for t in range(len(prompt), len(full)):
                total -= logp[t - 1, full[t]].item()
                count += 1
            per.append({"prompt_tokens": len(prompt), "tokens": len(full)})
    with open(out_path, "w") as f:
        json.dump({"generator": "tests/reference/masked_chat_loss.py (torch %s, float64; python3-jinja2; "
                   "@huggingface/tokenizers)" % torch.__version__,
                   "embed_scale": scale, "loss": total / count, "tokens": count, "records": per}, f, indent=1)


if __name__ == "__main__":
    main()
