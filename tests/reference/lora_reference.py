#!/usr/bin/env python3
"""Independent reference for Orion's LoRA adapters: makes a random adapter for a model folder
written by `orion init`, writes it in PEFT's layout (adapter_config.json and
adapter_model.safetensors, written here by hand), and writes the golden logits of the adapted
model: every targeted weight merged as PEFT merges it (W + alpha / r * B @ A, transposed for
GPT-2's Conv1D weights, stored [in, out]) in float64, then the torch forward of
gpt2_reference.py or llama_reference.py.

Usage: lora_reference.py ARCH MODEL_DIR SEED TOKENS_CSV OUT_JSON ADAPTER_DIR RANK ALPHA
"""
import json
import os
import sys

import numpy as np
import torch

import gpt2_reference
import llama_reference
from golden_io import read_model, write_golden
from hf_folder import write_safetensors

# The linear layers of a block, by the names under which the folder stores their weights.
MODULES = {
    "gpt2": ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"],
    "llama": ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
              "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"],
}


def block_prefix(arch, layer):
    return f"h.{layer}." if arch == "gpt2" else f"model.layers.{layer}."


def main():
    arch, model_dir, seed, tokens_csv, out_path, adapter_dir = sys.argv[1:7]
    rank, alpha = int(sys.argv[7]), float(sys.argv[8])
    cfg, w = read_model(model_dir)
    layers = cfg["n_layer"] if arch == "gpt2" else cfg["num_hidden_layers"]
    rng = np.random.default_rng(int(seed) + 1000)  # SEED is the model's (the test remakes it from it)
    peft = {}
    for l in range(layers):
        for m in MODULES[arch]:
            name = block_prefix(arch, l) + m
            W = w[name + ".weight"]
            fan_in, fan_out = (W.shape[0], W.shape[1]) if arch == "gpt2" else (W.shape[1], W.shape[0])
            # float32 values: what the file holds is exactly what the merge below uses.
            A = rng.uniform(-1, 1, (rank, fan_in)).astype(np.float32) / np.float32(np.sqrt(fan_in))
            B = rng.normal(0, 0.05, (fan_out, rank)).astype(np.float32)
            hf = ("transformer." if arch == "gpt2" else "") + name
            peft[f"base_model.model.{hf}.lora_A.weight"] = A
            peft[f"base_model.model.{hf}.lora_B.weight"] = B
            delta = (alpha / rank) * (torch.from_numpy(B.astype(np.float64)) @ torch.from_numpy(A.astype(np.float64)))
            w[name + ".weight"] = W + (delta.T if arch == "gpt2" else delta)
    os.makedirs(adapter_dir, exist_ok=True)
    write_safetensors(f"{adapter_dir}/adapter_model.safetensors", peft)
    with open(f"{adapter_dir}/adapter_config.json", "w") as f:
        json.dump({"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": rank, "lora_alpha": alpha,
                   "target_modules": [m.split(".")[-1] for m in MODULES[arch]] if arch == "llama" else ["c_attn", "c_proj", "c_fc"],
                   "lora_dropout": 0.0, "bias": "none", "fan_in_fan_out": arch == "gpt2"}, f, indent=2)
        f.write("\n")
    reference = gpt2_reference if arch == "gpt2" else llama_reference
    keys = reference.CONFIG_KEYS
    tokens = [int(t) for t in tokens_csv.split(",")]
    with torch.no_grad():
        logits = reference.forward(w, cfg, tokens)
    write_golden("tests/reference/lora_reference.py", cfg, keys, seed, tokens, logits, out_path,
                 {"lora": {"rank": rank, "alpha": alpha, "adapter": os.path.basename(adapter_dir)}})


if __name__ == "__main__":
    main()
