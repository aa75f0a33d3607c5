#!/usr/bin/env python3
"""Writes a small chat dataset in the JSONL layout `orion train --data` reads: OUT/train.jsonl,
OUT/valid.jsonl and OUT/test.jsonl, each record {"messages": [...]} (the default), or
{"prompt", "completion"} (--format completion) or {"text"} (--format text).

The conversations are made up and deterministic (--seed): a user asks about one of a few
dozen facts (capitals, arithmetic, colours of things) and the assistant answers in one fixed
style, so that a fine-tune has something learnable and a test can check that it learnt it.
A fifth of the chats have a system prompt and a fifth are two turns long. Only the standard
library is used: no network, no packages.

Usage: scripts/make_chat_dataset.py OUT [--records N] [--seed S] [--format chat|completion|text]
"""
import argparse
import json
import os
import random

CAPITALS = [("France", "Paris"), ("Japan", "Tokyo"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Egypt", "Cairo"),
            ("Kenya", "Nairobi"), ("Peru", "Lima"), ("Norway", "Oslo"), ("Chile", "Santiago"), ("Canada", "Ottawa"),
            ("Greece", "Athens"), ("Poland", "Warsaw"), ("Cuba", "Havana"), ("Iran", "Tehran"), ("Mali", "Bamako")]
COLOURS = [("grass", "green"), ("the sky", "blue"), ("snow", "white"), ("coal", "black"), ("a banana", "yellow"),
           ("a tomato", "red"), ("an orange", "orange"), ("a plum", "purple")]
SYSTEMS = ["You are a helpful assistant.", "Answer briefly.", "You are a geography and maths tutor."]


def question(rng):
    kind = rng.randrange(3)
    if kind == 0:
        country, capital = rng.choice(CAPITALS)
        return f"What is the capital of {country}?", f"The capital of {country} is {capital}."
    if kind == 1:
        a, b = rng.randrange(2, 20), rng.randrange(2, 20)
        return f"What is {a} plus {b}?", f"{a} plus {b} is {a + b}."
    thing, colour = rng.choice(COLOURS)
    return f"What colour is {thing}?", f"{thing[0].upper() + thing[1:]} is {colour}."


def chat(rng):
    messages = []
    if rng.randrange(5) == 0:
        messages.append({"role": "system", "content": rng.choice(SYSTEMS)})
    for _ in range(2 if rng.randrange(5) == 0 else 1):
        q, a = question(rng)
        messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    return messages


def record(rng, fmt):
    if fmt == "chat":
        return {"messages": chat(rng)}
    q, a = question(rng)
    if fmt == "completion":
        return {"prompt": q + "\n", "completion": a}
    return {"text": q + "\n" + a}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--records", type=int, default=400, help="training records (valid and test get a tenth each)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--format", choices=["chat", "completion", "text"], default="chat")
    a = p.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    for name, n in [("train", a.records), ("valid", max(1, a.records // 10)), ("test", max(1, a.records // 10))]:
        with open(os.path.join(a.out, name + ".jsonl"), "w", encoding="utf-8") as f:
            for _ in range(n):
                f.write(json.dumps(record(rng, a.format), ensure_ascii=False) + "\n")
    print(f"wrote {a.out}: {a.records} training, {max(1, a.records // 10)} validation and test records ({a.format})")


if __name__ == "__main__":
    main()
