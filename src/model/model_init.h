#pragma once
// Making a new model folder with seeded random weights: what `orion init` does, and `orion train
// --init` before it trains.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace orion::model {

struct InitOptions {
  std::string out;  // the model folder to write
  std::string arch = "gpt2";
  bool arch_given = false;  // --arch was on the command line (a preset must then agree with it)
  // The size options given on the command line by name ("--layers"): a preset leaves them as
  // given (a preset's shape with two layers, say).
  std::set<std::string> given;
  std::string preset;
  std::int64_t layers = 4, dim = 256, heads = 4, kv_heads = 0, context = 256, vocab = 0, hidden = 0;
  // The Llama family's (model/llama/llama_config.h): 0 head_dim is dim / heads.
  std::int64_t head_dim = 0;
  double rope_theta = 10000.0, rms_norm_eps = 1e-6;
  std::string rope_scaling;  // "", "linear" or "llama3"
  double rope_factor = 8.0;
  std::int64_t rope_original = 0;  // llama3's original_max_position_embeddings; 0: context / factor
  bool attention_bias = false;     // llama, mistral, qwen3: biases on q, k, v and o
  // Gemma 3's (gemma3_text): the sliding layers' window and rope base, every how many layers one
  // is global, the attention's query_pre_attn_scalar (0: head_dim).
  std::int64_t sliding_window = 512, global_every = 6;
  double rope_local_theta = 10000.0, query_pre_attn_scalar = 0;
  // Qwen3.5's (qwen3_5_text): every how many layers one is full attention (--global-every, 4
  // unless given), the Gated DeltaNet layers' heads and head size, the rotated share of a head.
  std::int64_t linear_key_heads = 16, linear_value_heads = 16, linear_head_dim = 128;
  double partial_rotary = 0.25;
  bool tied = false;
  // How the weights are written: Hugging Face's sharded layout when shards > 1.
  std::int64_t shards = 1;
  std::string dtype = "f32";  // f32, bf16 or f16
  std::uint64_t seed = 0;
  std::string tokenizer;
  bool force = false;  // replace an existing model in `out`
};

// Writes the model folder o.out as a whole (a kill leaves the old folder or the new one) and
// returns one line saying what it wrote. Throws orion::Error for options that do not make a
// model, a folder holding files that are not a model's, an existing model without o.force, or
// a model larger than the machine's memory.
std::string init_model(InitOptions o);

// The names --preset takes: GPT-2's sizes, stories110m and the Hugging Face shapes.
std::vector<std::string> init_preset_names();

}  // namespace orion::model
