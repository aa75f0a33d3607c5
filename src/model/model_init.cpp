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

// Hugging Face's GPT-2 sizes, the Llama-shaped model the ANE training results are quoted on,
// and the shapes of the small Hugging Face models people run (their config.json's numbers).
struct Preset {
    const char* name;
    const char* arch;
    std::int64_t layers, dim, heads, kv_heads, head_dim, hidden, context, vocab;
    double theta = 10000.0, eps = 1e-6;
    bool tied = false;
    const char* rope_scaling = "";
};

const std::vector<Preset>& presets() {
  static const model::LlamaConfig s = model::stories110m_config();
  static const std::vector<Preset> all = {
      {"gpt2", "gpt2", 12, 768, 12, 0, 0, 0, 1024, 50257},
      {"gpt2-medium", "gpt2", 24, 1024, 16, 0, 0, 0, 1024, 50257},
      {"gpt2-large", "gpt2", 36, 1280, 20, 0, 0, 0, 1024, 50257},
      {"gpt2-xl", "gpt2", 48, 1600, 25, 0, 0, 0, 1024, 50257},
      {"stories110m", "llama", s.num_hidden_layers, s.hidden_size, s.num_attention_heads, 0, 0, s.intermediate_size,
       s.max_position_embeddings, s.vocab_size},
      {"qwen3-0.6b", "qwen3", 28, 1024, 16, 8, 128, 3072, 40960, 151936, 1e6, 1e-6, true},
      {"qwen3-1.7b", "qwen3", 28, 2048, 16, 8, 128, 6144, 40960, 151936, 1e6, 1e-6, true},
      {"qwen2.5-0.5b", "qwen2", 24, 896, 14, 2, 0, 4864, 32768, 151936, 1e6, 1e-6, true},
      {"llama3.2-1b", "llama", 16, 2048, 32, 8, 0, 8192, 131072, 128256, 500000, 1e-5, true, "llama3"},
      {"smollm2-135m", "llama", 30, 576, 9, 3, 0, 1536, 8192, 49152, 100000, 1e-5, true},
      {"smollm2-360m", "llama", 32, 960, 15, 5, 0, 2560, 8192, 49152, 100000, 1e-5, true},
      {"tinyllama-1.1b", "llama", 22, 2048, 32, 4, 0, 5632, 2048, 32000, 10000, 1e-5, false},
      {"mistral-7b", "mistral", 32, 4096, 32, 8, 0, 14336, 32768, 32768, 1e6, 1e-5, false},
      // Gemma 3's window (512) and global layer every 6th are init's defaults for gemma3_text.
      {"gemma3-270m", "gemma3_text", 18, 640, 4, 1, 256, 2048, 32768, 262144, 1e6, 1e-6, true},
      {"gemma3-1b", "gemma3_text", 26, 1152, 4, 1, 256, 6912, 32768, 262144, 1e6, 1e-6, true},
      // Qwen3.5's Gated DeltaNet shape (16 key and 16 value heads of 128, a full layer every
      // 4th, a quarter of each head rotated) is init's default for qwen3_5_text.
      {"qwen3.5-0.8b", "qwen3_5_text", 24, 1024, 8, 2, 256, 3584, 262144, 248320, 1e7, 1e-6, true},
      {"qwen3.5-2b", "qwen3_5_text", 24, 2048, 8, 2, 256, 6144, 262144, 248320, 1e7, 1e-6, true},
  };
  return all;
}

void apply_preset(InitOptions& o) {
  for (const Preset& p : presets())
    if (o.preset == p.name) {
      const bool llama_family = std::string_view(p.arch) != "gpt2";
      if (o.arch_given && o.arch != p.arch)
        throw Error("--preset " + o.preset + " is a " + p.arch + " model, not --arch " + o.arch);
      auto take = [&](const char* option, auto& field, auto value) {
        if (!o.given.contains(option)) field = value;
      };
      o.arch = p.arch;
      take("--layers", o.layers, p.layers);
      take("--dim", o.dim, p.dim);
      take("--heads", o.heads, p.heads);
      take("--hidden", o.hidden, p.hidden);
      take("--context", o.context, p.context);
      take("--vocab", o.vocab, o.vocab == 0 ? p.vocab : o.vocab);
      if (llama_family && o.preset != "stories110m") {
        take("--kv-heads", o.kv_heads, p.kv_heads);
        take("--head-dim", o.head_dim, p.head_dim);
        take("--rope-theta", o.rope_theta, p.theta);
        take("--rms-eps", o.rms_norm_eps, p.eps);
        take("--tied", o.tied, p.tied);
        take("--rope-scaling", o.rope_scaling, std::string(p.rope_scaling));
        if (o.rope_scaling == "llama3") {  // Llama 3.2's
          take("--rope-factor", o.rope_factor, 32.0);
          take("--rope-original", o.rope_original, std::int64_t{8192});
        }
      }
      return;
    }
  throw Error("unknown preset '" + o.preset + "'");
}

// The files a model folder made by init may hold; any other file in the folder stops init.
constexpr const char* kModelFiles[] = {model::kConfigFile, text::kBpeVocabFile, text::kBpeMergesFile,
                                      text::kSentencePieceFile, text::kTokenizerJsonFile, text::kTokenizerConfigFile,
                                      text::kGenerationConfigFile};

bool is_model_file(const std::string& name) {
  return is_checkpoint_file(name) ||
         std::find(std::begin(kModelFiles), std::end(kModelFiles), name) != std::end(kModelFiles);
}

CheckpointLayout checkpoint_layout(const InitOptions& o) {
  if (o.dtype != "f32" && o.dtype != "bf16" && o.dtype != "f16")
    throw Error("--dtype " + o.dtype + ": the weights are written as f32, bf16 or f16");
  return {.shards = o.shards, .dtype = o.dtype == "bf16" ? DType::bf16 : o.dtype == "f16" ? DType::f16 : DType::f32};
}

std::int64_t vocab_for(const InitOptions& o, const text::Tokenizer& tok) {
  const std::int64_t v = o.vocab > 0 ? o.vocab : tok.vocab_size();
  if (v < text::text_vocab_size(tok))
    throw Error("--vocab " + std::to_string(v) + " is smaller than the tokenizer's " + std::to_string(text::text_vocab_size(tok)) +
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
  write_model_folder(o.out, model::gpt2_init_weights(c, o.seed), model::gpt2_config_json(c), tok, checkpoint_layout(o));
  return init_summary("wrote %s: gpt2, %lld layers, dim %lld, %lld heads, context %lld, vocab %lld, %.1fM params, seed %llu (%.1f s)",
              o.out.c_str(), static_cast<long long>(c.n_layer), static_cast<long long>(c.n_embd),
              static_cast<long long>(c.n_head), static_cast<long long>(c.n_positions),
              static_cast<long long>(c.vocab_size), static_cast<double>(c.parameter_count()) / 1e6,
              static_cast<unsigned long long>(o.seed), sw.seconds());
}

std::string init_llama(const InitOptions& o, const text::Tokenizer& tok) {
  model::LlamaConfig c;
  c.model_type = o.arch;
  const bool gemma = o.arch == "gemma3_text", qwen3_5 = o.arch == "qwen3_5_text";
  c.qkv_bias = o.arch == "qwen2" || o.attention_bias;
  c.o_bias = o.arch != "qwen2" && o.attention_bias;
  if (o.attention_bias && o.arch == "qwen2") throw Error("--attention-bias: Qwen2 has its q/k/v biases always and none on o");
  c.head_size = o.head_dim > 0 ? o.head_dim : (o.arch == "qwen3" || gemma || qwen3_5) ? o.dim / o.heads : 0;
  c.rms_norm_eps = o.rms_norm_eps;
  c.torch_dtype = o.dtype == "bf16" ? "bfloat16" : o.dtype == "f16" ? "float16" : "float32";
  if (o.rope_scaling == "linear" || o.rope_scaling == "llama3") {
    c.rope_scaling.type = o.rope_scaling == "linear" ? RopeScaling::Type::linear : RopeScaling::Type::llama3;
    c.rope_scaling.factor = o.rope_factor;
    c.rope_scaling.original_max_position_embeddings =
        o.rope_original > 0 ? o.rope_original : std::max<std::int64_t>(1, static_cast<std::int64_t>(o.context / o.rope_factor));
  } else if (!o.rope_scaling.empty()) {
    throw Error("--rope-scaling " + o.rope_scaling + ": linear or llama3");
  }
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
  c.eos_token_ids = {*tok.eos_id()};
  if (tok.bos_id())
    c.bos_token_id = *tok.bos_id();
  else
    c.bos_token_id.reset();
  if (gemma) {
    if (o.global_every < 1) throw Error("--global-every must be at least 1");
    c.sliding_window = o.sliding_window;
    c.rope_local_theta = o.rope_local_theta;
    c.query_pre_attn_scalar = o.query_pre_attn_scalar > 0 ? o.query_pre_attn_scalar : static_cast<double>(c.head_dim());
    for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) c.sliding_layers.push_back((l + 1) % o.global_every != 0);
  }
  if (qwen3_5) {
    const std::int64_t full_every = o.given.contains("--global-every") ? o.global_every : 4;
    if (full_every < 1) throw Error("--global-every must be at least 1");
    for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) c.linear_layers.push_back((l + 1) % full_every != 0);
    c.linear = {.key_heads = o.linear_key_heads, .value_heads = o.linear_value_heads, .key_head_dim = o.linear_head_dim,
                .value_head_dim = o.linear_head_dim, .conv_kernel = 4};
    c.partial_rotary_factor = o.partial_rotary;
  }
  // The family's switches (q/k norms, Gemma's norms, scales, ...) as its config.json gives them:
  // the parser is their one source.
  c = model::parse_llama_config(model::llama_config_json(c), "orion init");
  Stopwatch sw;
  check_fits_in_memory(static_cast<std::uint64_t>(c.parameter_count()) * sizeof(float), "the weights (f32)", "orion init");
  write_model_folder(o.out, model::llama_init_weights(c, o.seed), model::llama_config_json(c), tok, checkpoint_layout(o));
  return init_summary("wrote %s: %s, %lld layers, dim %lld, %lld heads (%lld key/value), hidden %lld, context %lld, vocab %lld (%s), "
              "%s embeddings, %.1fM params, seed %llu (%.1f s)",
              o.out.c_str(), c.model_type.c_str(), static_cast<long long>(c.num_hidden_layers), static_cast<long long>(c.hidden_size),
              static_cast<long long>(c.num_attention_heads), static_cast<long long>(c.num_key_value_heads),
              static_cast<long long>(c.intermediate_size), static_cast<long long>(c.max_position_embeddings),
              static_cast<long long>(c.vocab_size), std::string(tok.kind()).c_str(), c.tie_word_embeddings ? "tied" : "untied",
              static_cast<double>(c.parameter_count()) / 1e6, static_cast<unsigned long long>(o.seed), sw.seconds());
}

}  // namespace

std::vector<std::string> init_preset_names() {
  std::vector<std::string> out;
  for (const Preset& p : presets()) out.emplace_back(p.name);
  return out;
}

std::string init_model(InitOptions o) {
  if (!o.preset.empty()) apply_preset(o);
  const fs::path dir(o.out);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw Error::in_file(o.out, "is not a folder");
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (!is_model_file(e.path().filename().string()))
      throw Error::in_file(e.path().string(), "is not a model folder's file; orion init writes the folder as a whole and "
                                              "would delete it, so choose a new or empty folder");
  for (const auto& e : fs::directory_iterator(dir, ec))
    if ((e.path().filename() == model::kConfigFile || is_checkpoint_file(e.path().filename().string())) && !o.force)
      throw Error::in_file(e.path().string(), "exists already (use --force to overwrite)");
  if (o.preset == "stories110m" && o.tokenizer.empty())
    throw Error("--preset stories110m needs --tokenizer DIR with its 32000-token SentencePiece model "
                "(train one with: orion tokenizer train --vocab 32000 --in TEXT --out DIR)");
  const std::shared_ptr<const text::Tokenizer> tok =
      o.tokenizer.empty() ? std::make_shared<const text::BpeTokenizer>(text::BpeTokenizer::byte_level())
                          : model::load_tokenizer(o.tokenizer);
  for (const char* option : {"--sliding-window", "--global-every", "--rope-local-theta", "--query-pre-attn-scalar"})
    if (o.arch != "gemma3_text" && o.given.contains(option) && !(o.arch == "qwen3_5_text" && std::string_view(option) == "--global-every"))
      throw Error(std::string(option) + " is a Gemma 3 option (--arch gemma3_text), not " + o.arch + "'s");
  for (const char* option : {"--linear-key-heads", "--linear-value-heads", "--linear-head-dim", "--partial-rotary"})
    if (o.arch != "qwen3_5_text" && o.given.contains(option))
      throw Error(std::string(option) + " is a Qwen3.5 option (--arch qwen3_5_text), not " + o.arch + "'s");
  if (is_llama_family(o.arch)) return init_llama(o, *tok);
  return init_gpt2(o, *tok);
}


}  // namespace orion::model
