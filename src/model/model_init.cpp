// orion init's work (model_init.h): the architecture's config from the options, seeded weights by
// the architecture's own initialisation, and the folder written as a whole.
#include "model/model_init.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <iterator>

#include "core/atomic_file.h"
#include "core/atomic_folder.h"
#include "core/error.h"
#include "core/memory_limit.h"
#include "core/stopwatch.h"
#include "model/gpt2/gpt2_model.h"
#include "model/llama/llama_model.h"
#include "model/formats/safetensors.h"
#include "model/model_folder.h"
#include "text/tokenizer_files.h"

namespace orion::model {

namespace {

namespace fs = std::filesystem;

// The line that says what init wrote, printf-style.
[[gnu::format(printf, 1, 2)]] std::string init_summary(const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  std::string out(static_cast<std::size_t>(std::vsnprintf(nullptr, 0, format, args)), '\0');
  va_end(args);
  std::vsnprintf(out.data(), out.size() + 1, format, again);
  va_end(again);
  return out;
}

// Hugging Face's GPT-2 sizes, and the Llama-shaped model the ANE training results are quoted on.
void apply_preset(InitOptions& o) {
  struct P { const char* name; const char* arch; std::int64_t layers, dim, heads, hidden, context, vocab; };
  const model::LlamaConfig s = model::stories110m_config();
  for (const P& p : {P{"gpt2", "gpt2", 12, 768, 12, 0, 1024, 50257}, P{"gpt2-medium", "gpt2", 24, 1024, 16, 0, 1024, 50257},
                     P{"gpt2-large", "gpt2", 36, 1280, 20, 0, 1024, 50257}, P{"gpt2-xl", "gpt2", 48, 1600, 25, 0, 1024, 50257},
                     P{"stories110m", "llama", s.num_hidden_layers, s.hidden_size, s.num_attention_heads, s.intermediate_size,
                       s.max_position_embeddings, s.vocab_size}})
    if (o.preset == p.name) {
      if (o.arch_given && o.arch != p.arch)
        throw Error("--preset " + o.preset + " is a " + p.arch + " model, not --arch " + o.arch);
      o.arch = p.arch;
      o.layers = p.layers;
      o.dim = p.dim;
      o.heads = p.heads;
      o.hidden = p.hidden;
      o.context = p.context;
      if (o.vocab == 0) o.vocab = p.vocab;
      return;
    }
  throw Error("unknown preset '" + o.preset + "'");
}

// The files a model folder made by init may hold; any other file in the folder stops init.
constexpr const char* kModelFiles[] = {model::kConfigFile, model::kWeightsFile, text::kBpeVocabFile, text::kBpeMergesFile,
                                      text::kSentencePieceFile};

std::int64_t vocab_for(const InitOptions& o, const text::Tokenizer& tok) {
  const std::int64_t v = o.vocab > 0 ? o.vocab : tok.vocab_size();
  if (v < tok.vocab_size())
    throw Error("--vocab " + std::to_string(v) + " is smaller than the tokenizer's " + std::to_string(tok.vocab_size()) +
                " tokens");
  return v;
}

std::string init_gpt2(const InitOptions& o, const text::Tokenizer& tok) {
  if (o.kv_heads != 0 || o.tied) throw Error("--kv-heads and --tied are Llama options (--arch llama); GPT-2 always ties its head");
  model::Gpt2Config c;
  c.n_layer = o.layers;
  c.n_embd = o.dim;
  c.n_head = o.heads;
  c.n_positions = o.context;
  c.n_inner = o.hidden;
  c.vocab_size = vocab_for(o, tok);
  if (!tok.eos_id()) throw Error("the tokenizer has no end-of-text token, which GPT-2 needs");
  c.eos_token_id = *tok.eos_id();
  c.validate("orion init");
  check_fits_in_memory(c.weight_bytes(sizeof(float)), "the weights (f32)", "orion init");

  Stopwatch sw;
  write_model_folder(o.out, model::gpt2_init_weights(c, o.seed), model::gpt2_config_json(c), tok);
  return init_summary("wrote %s: gpt2, %lld layers, dim %lld, %lld heads, context %lld, vocab %lld, %.1fM params, seed %llu (%.1f s)",
              o.out.c_str(), static_cast<long long>(c.n_layer), static_cast<long long>(c.n_embd),
              static_cast<long long>(c.n_head), static_cast<long long>(c.n_positions),
              static_cast<long long>(c.vocab_size), static_cast<double>(c.parameter_count()) / 1e6,
              static_cast<unsigned long long>(o.seed), sw.seconds());
}

std::string init_llama(const InitOptions& o, const text::Tokenizer& tok) {
  model::LlamaConfig c;
  c.num_hidden_layers = o.layers;
  c.hidden_size = o.dim;
  c.num_attention_heads = o.heads;
  c.num_key_value_heads = o.kv_heads > 0 ? o.kv_heads : o.heads;
  // Llama's rule of thumb: 2/3 of 4 x dim, rounded up to a multiple of 32 (768 -> 2048).
  c.intermediate_size = o.hidden > 0 ? o.hidden : (8 * o.dim / 3 + 31) / 32 * 32;
  c.max_position_embeddings = o.context;
  c.rope_theta = o.rope_theta;
  c.tie_word_embeddings = o.tied;
  c.vocab_size = vocab_for(o, tok);
  if (!tok.eos_id()) throw Error("the tokenizer has no end-of-text token, which generation needs");
  c.eos_token_id = *tok.eos_id();
  if (tok.bos_id())
    c.bos_token_id = *tok.bos_id();
  else
    c.bos_token_id.reset();
  c.validate("orion init");
  Stopwatch sw;
  write_model_folder(o.out, model::llama_init_weights(c, o.seed), model::llama_config_json(c), tok);
  return init_summary("wrote %s: llama, %lld layers, dim %lld, %lld heads (%lld key/value), hidden %lld, context %lld, vocab %lld (%s), "
              "%s embeddings, %.1fM params, seed %llu (%.1f s)",
              o.out.c_str(), static_cast<long long>(c.num_hidden_layers), static_cast<long long>(c.hidden_size),
              static_cast<long long>(c.num_attention_heads), static_cast<long long>(c.num_key_value_heads),
              static_cast<long long>(c.intermediate_size), static_cast<long long>(c.max_position_embeddings),
              static_cast<long long>(c.vocab_size), std::string(tok.kind()).c_str(), c.tie_word_embeddings ? "tied" : "untied",
              static_cast<double>(c.parameter_count()) / 1e6, static_cast<unsigned long long>(o.seed), sw.seconds());
}

}  // namespace

std::string init_model(InitOptions o) {
  if (!o.preset.empty()) apply_preset(o);
  const fs::path dir(o.out);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw Error::in_file(o.out, "is not a folder");
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (std::find(std::begin(kModelFiles), std::end(kModelFiles), e.path().filename().string()) == std::end(kModelFiles))
      throw Error::in_file(e.path().string(), "is not a model folder's file; orion init writes the folder as a whole and "
                                              "would delete it, so choose a new or empty folder");
  for (const char* f : {model::kConfigFile, model::kWeightsFile})
    if (fs::exists(dir / f) && !o.force)
      throw Error::in_file((dir / f).string(), "exists already (use --force to overwrite)");
  if (o.preset == "stories110m" && o.tokenizer.empty())
    throw Error("--preset stories110m needs --tokenizer DIR with its 32000-token SentencePiece model "
                "(train one with: orion tokenizer train --vocab 32000 --in TEXT --out DIR)");
  const std::shared_ptr<const text::Tokenizer> tok =
      o.tokenizer.empty() ? std::make_shared<const text::BpeTokenizer>(text::BpeTokenizer::byte_level())
                          : model::load_tokenizer(o.tokenizer);
  if (o.arch == "llama")
    return init_llama(o, *tok);
  return init_gpt2(o, *tok);
}


}  // namespace orion::model
