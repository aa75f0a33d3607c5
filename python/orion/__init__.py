"""Orion for Python: load a model folder and generate, chat, score, fine-tune and compile it for
the Neural Engine, on the same library as the `orion` command.

    import orion
    model = orion.load("Qwen3-0.6B")                       # a model folder or a GGUF file
    print(model.generate("Once upon a time", max_tokens=32, temperature=0))
    for piece in model.generate("Once upon a time", stream=True):
        print(piece, end="", flush=True)
    answer = model.chat([{"role": "user", "content": "Hello"}])
    logits = model.logits(model.encode("Some text"))       # NumPy, no copy
    orion.train("Qwen3-0.6B", data="chat/", out="run", steps=100, lora=8,
                on_step=lambda s: print(s.step, s.loss))
    orion.compile("Qwen3-0.6B", target="ane", out="qwen3.pkg")
    orion.inspect("qwen3.pkg")

Every computation runs with the GIL released. Orion's errors are orion.Error, whose message is
the line the `orion` command prints; a bad argument is orion.ArgumentError (also a ValueError).
"""
from ._orion import (
    ArgumentError,
    Error,
    Model,
    Stream,
    Tokenizer,
    TrainStep,
    compile,
    inspect,
    load,
    train,
)

__version__ = "0.1.0"

__all__ = [
    "ArgumentError",
    "Error",
    "Model",
    "Stream",
    "Tokenizer",
    "TrainStep",
    "compile",
    "inspect",
    "load",
    "train",
]
