#pragma once
// What the trainer's tests share: tiny models (a GPT-2 and a Llama with grouped-query attention,
// one vocabulary), data a model can learn by heart, and the options of an overfitting run.
#include <memory>
#include <string>
#include <vector>

#include "core/temp_folder.h"
#include "model/gpt2/gpt2_config.h"
#include "model/llama/llama_config.h"
#include "train/data/token_file.h"
#include "train/trainer.h"

namespace orion::train::testing {

inline model::Gpt2Config tiny_config() {
  model::Gpt2Config c;
  c.n_layer = 2;
  c.n_embd = 32;
  c.n_head = 2;
  c.n_positions = 32;
  c.vocab_size = 61;
  return c;
}

// A token file holding one short sequence (and a copy as its validation split): every window the
// loader draws is part of it, so a model can learn it by heart.
inline std::shared_ptr<const TokenFile> memorisable_data(const TempFolder& tmp, std::int64_t vocab) {
  std::vector<std::int32_t> tokens;
  for (int i = 0; i < 40; ++i) tokens.push_back(static_cast<std::int32_t>((i * 17 + 3) % vocab));
  const std::string path = tmp.path() + "/tokens.bin";
  write_token_file(path, static_cast<std::uint64_t>(vocab), std::nullopt, tokens, tokens);
  return std::make_shared<const TokenFile>(TokenFile::open(path));
}

inline TrainConfig overfit_config(exec::Numerics precision) {
  TrainConfig c;
  c.steps = 150;
  c.batch = 2;
  c.seq = 16;
  c.lr = 1e-2;
  c.warmup = 10;
  c.adamw.weight_decay = 0.0;
  c.precision = precision;
  c.threads = 2;
  return c;
}

// A small Llama with grouped-query attention, the vocabulary of tiny_config().
inline model::LlamaConfig tiny_llama() {
  model::LlamaConfig c;
  c.num_hidden_layers = 2;
  c.hidden_size = 32;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.intermediate_size = 48;
  c.max_position_embeddings = 32;
  c.vocab_size = 61;
  return c;
}

// tiny_llama as Qwen3 (q/k norms, head_dim 20 where dim / heads is 8) with Qwen2's q/k/v biases
// as well, so that one model trains every piece the families add. head_dim above 16: a smaller
// q/k norm gain is written inline in the MIL text, which then changes with every baked step.
inline model::LlamaConfig tiny_qwen3() {
  model::LlamaConfig c = tiny_llama();
  c.model_type = "qwen3";
  c.qk_norm = true;
  c.qkv_bias = true;
  c.head_size = 20;
  return c;
}

}  // namespace orion::train::testing
