#!/usr/bin/env python3
"""Orion from Python, end to end: load a Qwen3-shaped model folder, chat with it, fine-tune a
LoRA adapter on JSONL chat data with a callback that plots the loss, and evaluate perplexity
before and after.

    python3 python/examples/finetune.py MODEL_DIR DATA_DIR OUT_DIR [--steps N]

MODEL_DIR: a model folder, e.g. `scripts/make_hf_folder.sh qwen3 /tmp/qwen3` (a tiny random
one) or a downloaded Qwen3-0.6B; DATA_DIR: train.jsonl and valid.jsonl, e.g.
`scripts/make_chat_dataset.py /tmp/chat`. The loss plot is OUT_DIR/loss.png when matplotlib is
installed, else a text plot on the terminal (and `orion plot OUT_DIR/metrics.jsonl` draws an SVG).
"""
import argparse
import json
import math
import pathlib

import orion


def text_plot(losses, width=60, height=12):
    """The losses as rows of characters, the first step on the left."""
    lo, hi = min(losses), max(losses)
    span = hi - lo or 1.0
    n = min(width, len(losses))
    columns = [losses[int(i * len(losses) / n)] for i in range(n)]
    rows = []
    for r in range(height, -1, -1):
        level = lo + span * r / height
        rows.append(f"{level:8.3f} |" + "".join("*" if abs(v - level) <= span / height / 2 else " " for v in columns))
    return "\n".join(rows)


def plot(losses, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(text_plot(losses))
        return
    plt.figure(figsize=(6, 3.5))
    plt.plot(range(1, len(losses) + 1), losses)
    plt.xlabel("step")
    plt.ylabel("loss")
    plt.tight_layout()
    plt.savefig(out / "loss.png")
    print(f"wrote {out / 'loss.png'}")


def perplexity(model, records):
    """exp of the mean next-token loss over the records' texts, each as chat prompts render it."""
    losses = []
    for r in records:
        ids = model.tokenizer.apply_chat_template(r["messages"], add_generation_prompt=False, tokenize=True)
        losses.extend(model.loss(ids[: model.context]))
    return math.exp(sum(losses) / len(losses))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=30)
    a = p.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(pathlib.Path(a.data) / "valid.jsonl") as f:
        valid = [json.loads(line) for line in f if line.strip()][:8]

    model = orion.load(a.model)
    print(model, model.config["model_type"], f"{model.vocab_size} tokens")
    question = [{"role": "user", "content": "What is the capital of France?"}]
    print("before:", model.chat(question, max_tokens=24, temperature=0)["content"])
    before = perplexity(model, valid)

    losses = []

    def on_step(step):
        losses.append(step.loss)
        print(f"\rstep {step.step}/{step.steps}  loss {step.loss:.4f}  {step.tokens_per_s:.0f} tok/s  "
              f"peak {step.peak_mb:.0f} MB", end="", flush=True)

    result = orion.train(a.model, data=a.data, out=str(out), steps=a.steps, lora=8, batch=2, seq=64, lr=1e-2,
                         mask_prompt=True, on_step=on_step)
    print(f"\ntrained {result['steps']} steps: loss {result['first_loss']:.4f} -> {result['last_loss']:.4f}; "
          f"adapter {result['final_checkpoint']}")
    plot(losses, out)

    tuned = orion.load(a.model, lora=result["final_checkpoint"])
    print("after:", tuned.chat(question, max_tokens=24, temperature=0)["content"])
    print(f"validation perplexity {before:.2f} -> {perplexity(tuned, valid):.2f}")


if __name__ == "__main__":
    main()
