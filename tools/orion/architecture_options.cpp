#include "architecture_options.h"

namespace orion::cli {

CLI::Option* add_architecture_options(CLI::App& app, model::InitOptions& o) {
  CLI::Option* arch = app.add_option("--arch", o.arch, "Architecture (config.json's model_type): gpt2, llama, mistral, qwen2, qwen3, gemma3_text, qwen3_5_text")
                           ->check(CLI::IsMember({"gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma3_text", "qwen3_5_text"}))->capture_default_str();
  app.add_option("--preset", o.preset,
                 "Shape of a known model: gpt2 (124M), gpt2-medium, gpt2-large, gpt2-xl; stories110m (llama: dim 768, 12 layers, "
                 "12 heads, hidden 2048, vocab 32000, context 1024; needs --tokenizer); the Hugging Face shapes qwen3-0.6b, "
                 "qwen3-1.7b, qwen2.5-0.5b, llama3.2-1b, smollm2-135m, smollm2-360m, tinyllama-1.1b, mistral-7b, gemma3-270m, "
                 "gemma3-1b, qwen3.5-0.8b, qwen3.5-2b (their config.json's sizes, head size, rope, norms and tying); options given beside a preset win "
                 "over its values")
      ->check(CLI::IsMember(model::init_preset_names()));
  app.add_option("--layers", o.layers, "Transformer blocks")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--dim", o.dim, "Model width (n_embd, hidden_size)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--heads", o.heads, "Attention heads")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--kv-heads", o.kv_heads, "llama: key/value heads, dividing --heads (0: as many as --heads)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--context", o.context, "Context length (n_positions, max_position_embeddings)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--hidden", o.hidden, "Feed-forward width (0: gpt2 4 x dim; llama 8/3 x dim rounded up to a multiple of 32)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--vocab", o.vocab, "Vocabulary size (0: the tokenizer's)")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--rope-theta", o.rope_theta, "llama: base of the rotary embeddings' frequencies")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_flag("--tied", o.tied, "llama family: tie the output head to the token embedding (no lm_head.weight)");
  app.add_option("--head-dim", o.head_dim, "llama family: columns per head (0: dim / heads; qwen3 sets it in config.json)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--rms-eps", o.rms_norm_eps, "llama family: RMSNorm's epsilon")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--rope-scaling", o.rope_scaling, "llama family: rope_scaling type, linear or llama3 (default none)")
      ->check(CLI::IsMember({"linear", "llama3"}));
  app.add_option("--rope-factor", o.rope_factor, "llama family: the rope_scaling factor")->check(CLI::Range(1.0, 1024.0))->capture_default_str();
  app.add_option("--rope-original", o.rope_original,
                 "llama3 rope scaling: original_max_position_embeddings (0: context / factor)")->check(CLI::NonNegativeNumber);
  app.add_option("--sliding-window", o.sliding_window, "gemma3_text: the positions a sliding layer's attention reaches")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--global-every", o.global_every,
                 "gemma3_text: every this many layers one is global (the rest slide); qwen3_5_text: one is full attention "
                 "(the rest Gated DeltaNet), 4 unless given")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--linear-key-heads", o.linear_key_heads, "qwen3_5_text: the Gated DeltaNet layers' key heads")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--linear-value-heads", o.linear_value_heads,
                 "qwen3_5_text: their value heads (a multiple of the key heads)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--linear-head-dim", o.linear_head_dim, "qwen3_5_text: their key and value head size")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--partial-rotary", o.partial_rotary, "qwen3_5_text: the share of each full-attention head rotary embeddings rotate")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--rope-local-theta", o.rope_local_theta, "gemma3_text: the sliding layers' rope base")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--query-pre-attn-scalar", o.query_pre_attn_scalar,
                 "gemma3_text: attention scores are scaled by its -1/2 power (0: head size)")->check(CLI::NonNegativeNumber);
  app.add_flag("--attention-bias", o.attention_bias, "llama, mistral, qwen3: biases on q, k, v and o (qwen2 has q/k/v biases always)");
  app.add_option("--shards", o.shards, "Write the weights as this many safetensors shards with an index, as Hugging Face does")
      ->check(CLI::Range(1, 99999))->capture_default_str();
  app.add_option("--dtype", o.dtype, "Weights' dtype in the files: f32, bf16 or f16")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}))->capture_default_str();
  app.add_option("--tokenizer", o.tokenizer,
                 "Folder with a tokenizer to use: tokenizer.model (SentencePiece, from orion tokenizer train), or vocab.json "
                 "and merges.txt (default: a byte-level vocabulary of 257 tokens)");
  return arch;
}

}  // namespace orion::cli
