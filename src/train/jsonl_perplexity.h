#pragma once
// The loss of a model (and a LoRA adapter) on JSONL records, the way training evaluates its
// validation split: the records encoded with the model folder's tokenizer and chat template
// (train/data/record_encoder.h), batched by length, the model's training graph run forward,
// the loss the mean over the trained targets only. `orion perplexity --data` prints it.
#include <cstdint>
#include <string>

#include "exec/cpu/executor.h"
#include "train/loss_evaluator.h"

namespace orion::train {

struct JsonlPerplexityOptions {
  std::string model_dir, data;  // a model folder and a .jsonl file
  std::string lora;             // an adapter folder; empty: none
  bool mask_prompt = false;
  std::int64_t batch = 4;
  std::int64_t seq = 0;  // records are cut to seq + 1 tokens; 0: the longest record's, in 32s, up to the context
  exec::Numerics numerics = exec::Numerics::f32;
  int threads = 0;
};

struct JsonlPerplexity {
  EvalResult result;
  std::size_t records = 0, truncated = 0;
  std::int64_t seq = 0;
};

JsonlPerplexity jsonl_perplexity(const JsonlPerplexityOptions& options);

}  // namespace orion::train
