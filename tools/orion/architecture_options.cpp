#include "architecture_options.h"

namespace orion::cli {

CLI::Option* add_architecture_options(CLI::App& app, model::InitOptions& o) {
  CLI::Option* arch = app.add_option("--arch", o.arch, "Architecture: gpt2 or llama")->check(CLI::IsMember({"gpt2", "llama"}))->capture_default_str();
  app.add_option("--preset", o.preset,
                 "Sizes of a known model: gpt2 (124M), gpt2-medium, gpt2-large, gpt2-xl; stories110m (llama: dim 768, 12 layers, "
                 "12 heads, hidden 2048, vocab 32000, context 1024; needs --tokenizer)")
      ->check(CLI::IsMember({"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "stories110m"}));
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
  app.add_flag("--tied", o.tied, "llama: tie the output head to the token embedding (no lm_head.weight)");
  app.add_option("--tokenizer", o.tokenizer,
                 "Folder with a tokenizer to use: tokenizer.model (SentencePiece, from orion tokenizer train), or vocab.json "
                 "and merges.txt (default: a byte-level vocabulary of 257 tokens)");
  return arch;
}

}  // namespace orion::cli
