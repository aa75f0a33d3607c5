#include "model/llama/llama_gguf.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "core/error.h"
#include "core/memory_limit.h"
#include "core/thread_pool.h"
#include "model/formats/gguf_tokenizer.h"
#include "model/llama/rope.h"

namespace orion::model {

namespace {

// A block's tensors: Hugging Face's name after "model.layers.N.", llama.cpp's after "blk.N.".
constexpr std::pair<std::string_view, std::string_view> kBlockNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.o_proj.bias", "attn_output.bias"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

// llama.cpp's tensor of Llama 3's rope scaling: a divisor per rotary frequency.
constexpr std::string_view kRopeFreqs = "rope_freqs.weight";

std::string key_of(const std::string& arch, std::string_view rest) { return arch + "." + std::string(rest); }

std::int64_t required_int(const GgufFile& g, const std::string& key) {
  const std::optional<std::int64_t> v = g.integer(key);
  if (!v) throw Error::in_file(g.path(), "has no key " + in_quotes(key) + ", which a model of its architecture needs");
  return *v;
}

// Llama 3's rope scaling from rope_freqs.weight: the divisors must be those of transformers'
// llama3 scaling with the parameters every Llama 3.1 and 3.2 release has (factor the largest
// divisor, low_freq_factor 1, high_freq_factor 4, 8192 original positions), which the config
// then carries; anything else is refused rather than approximated.
RopeScaling llama3_scaling_from_freqs(const GgufFile& g, const LlamaConfig& c) {
  const GgufTensorInfo* t = g.find_tensor(kRopeFreqs);
  const std::int64_t half = c.head_dim() / 2;
  if (t->numel() != half || t->dims.size() != 1)
    throw Error::in_file(g.path(), "tensor \"rope_freqs.weight\" has " + std::to_string(t->numel()) + " values; the head size " +
                                       std::to_string(c.head_dim()) + " has " + std::to_string(half) + " rotary frequencies");
  const Tensor f = g.dequantized(*t);
  const std::span<const float> divisors = f.span<float>();
  RopeScaling s;
  s.type = RopeScaling::Type::llama3;
  s.factor = *std::max_element(divisors.begin(), divisors.end());
  s.original_max_position_embeddings = g.integer(key_of("llama", "rope.scaling.original_context_length")).value_or(8192);
  const std::vector<double> plain = rope_inv_freq(c.head_dim(), c.rope_theta, {});
  const std::vector<double> scaled = rope_inv_freq(c.head_dim(), c.rope_theta, s);
  for (std::int64_t i = 0; i < half; ++i) {
    const double want = plain[static_cast<std::size_t>(i)] / scaled[static_cast<std::size_t>(i)];
    if (std::abs(divisors[static_cast<std::size_t>(i)] - want) > 1e-5 * want)
      throw Error::in_file(g.path(), "tensor \"rope_freqs.weight\" divides frequency " + std::to_string(i) + " by " +
                                         std::to_string(divisors[static_cast<std::size_t>(i)]) + ", where Llama 3's rope scaling (factor " +
                                         std::to_string(s.factor) + ", 8192 original positions) divides it by " +
                                         std::to_string(want) + "; Orion implements that scaling only");
  }
  return s;
}

RopeScaling rope_scaling_of(const GgufFile& g, const std::string& arch, const LlamaConfig& c) {
  const std::string type = g.string(key_of(arch, "rope.scaling.type")).value_or("none");
  if (g.find_tensor(kRopeFreqs)) {
    if (arch != "llama" || (type != "none" && type != "llama3"))
      throw Error::in_file(g.path(), "has tensor \"rope_freqs.weight\" with rope scaling " + in_quotes(type) + " in a " + arch +
                                         " model; Orion reads it as Llama 3's scaling only");
    return llama3_scaling_from_freqs(g, c);
  }
  RopeScaling s;
  if (type == "none") {
    // Older files: a linear factor alone.
    if (const std::optional<double> f = g.real(key_of(arch, "rope.scale_linear")); f && *f != 1.0) {
      s.type = RopeScaling::Type::linear;
      s.factor = *f;
    }
    return s;
  }
  if (type != "linear")
    throw Error::in_file(g.path(), "key " + in_quotes(key_of(arch, "rope.scaling.type")) + " is " + in_quotes(type) +
                                       "; Orion implements rope scaling \"linear\" (and Llama 3's, as rope_freqs.weight)");
  s.type = RopeScaling::Type::linear;
  s.factor = g.real(key_of(arch, "rope.scaling.factor")).value_or(0);
  if (s.factor == 0) throw Error::in_file(g.path(), "rope scaling \"linear\" without key " + in_quotes(key_of(arch, "rope.scaling.factor")));
  return s;
}

// llama.cpp's converter reorders each head's query and key rows for `llama` (its rotation pairs
// neighbouring columns where Hugging Face's rotate_half pairs the two halves): GGUF row
// h*D + 2i + j holds Hugging Face's row h*D + j*D/2 + i (i < D/2, j = 0 or 1). Undone here, on
// a weight [heads * D, in] or a bias [heads * D].
Tensor unpermute_rows(const Tensor& t, std::int64_t heads) {
  const std::int64_t rows = t.shape()[0];
  const std::int64_t cols = t.shape().size() > 1 ? t.shape()[1] : 1;
  const std::int64_t D = rows / heads;
  Tensor out(DType::f32, t.shape());
  const float* in = t.data<float>();
  float* o = out.data<float>();
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < D / 2; ++i)
      for (std::int64_t j = 0; j < 2; ++j)
        std::memcpy(o + (h * D + j * (D / 2) + i) * cols, in + (h * D + 2 * i + j) * cols,
                    static_cast<std::size_t>(cols) * sizeof(float));
  return out;
}

}  // namespace

std::string gguf_tensor_name(std::string_view hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  constexpr std::string_view kLayers = "model.layers.";
  if (!hf.starts_with(kLayers)) return "";
  const std::string_view rest = hf.substr(kLayers.size());
  const std::size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return "";
  for (const auto& [from, to] : kBlockNames)
    if (rest.substr(dot + 1) == from) return "blk." + std::string(rest.substr(0, dot)) + "." + std::string(to);
  return "";
}

LlamaConfig llama_config_from_gguf(const GgufFile& g) {
  const std::optional<std::string> arch = g.string("general.architecture");
  if (!arch) throw Error::in_file(g.path(), "has no key \"general.architecture\"");
  if (std::find(std::begin(kGgufArchitectures), std::end(kGgufArchitectures), *arch) == std::end(kGgufArchitectures))
    throw Error::in_file(g.path(), "key \"general.architecture\" is " + in_quotes(*arch) +
                                       "; Orion reads GGUF files of the architectures llama, qwen2 and qwen3");
  const std::string& a = *arch;
  LlamaConfig c;
  c.model_type = a;
  c.num_hidden_layers = required_int(g, key_of(a, "block_count"));
  c.hidden_size = required_int(g, key_of(a, "embedding_length"));
  c.intermediate_size = required_int(g, key_of(a, "feed_forward_length"));
  c.num_attention_heads = required_int(g, key_of(a, "attention.head_count"));
  c.num_key_value_heads = g.integer(key_of(a, "attention.head_count_kv")).value_or(c.num_attention_heads);
  c.max_position_embeddings = required_int(g, key_of(a, "context_length"));
  const std::optional<double> eps = g.real(key_of(a, "attention.layer_norm_rms_epsilon"));
  if (!eps) throw Error::in_file(g.path(), "has no key " + in_quotes(key_of(a, "attention.layer_norm_rms_epsilon")));
  c.rms_norm_eps = *eps;
  c.rope_theta = g.real(key_of(a, "rope.freq_base")).value_or(10000.0);
  const GgufTensorInfo* embed = g.find_tensor("token_embd.weight");
  if (!embed || embed->dims.size() != 2) throw Error::in_file(g.path(), "has no 2-D tensor \"token_embd.weight\" (the embedding)");
  c.vocab_size = embed->dims[1];
  c.tie_word_embeddings = g.find_tensor("output.weight") == nullptr;
  // Qwen2's q/k/v biases are the family's; Llama's attention_bias shows in its tensors.
  c.qkv_bias = a == "qwen2" || g.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.o_bias = a != "qwen2" && g.find_tensor("blk.0.attn_output.bias") != nullptr;
  c.qk_norm = a == "qwen3";
  const std::int64_t derived = c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0;
  const std::int64_t key_length = g.integer(key_of(a, "attention.key_length")).value_or(derived);
  if (const std::optional<std::int64_t> vl = g.integer(key_of(a, "attention.value_length")); vl && *vl != key_length)
    throw Error::in_file(g.path(), "key " + in_quotes(key_of(a, "attention.value_length")) + " is " + std::to_string(*vl) +
                                       ", not the key heads' " + std::to_string(key_length) + "; Orion's heads have one size");
  if (key_length != derived || a == "qwen3") c.head_size = key_length;
  if (const std::optional<std::int64_t> rot = g.integer(key_of(a, "rope.dimension_count")); rot && *rot != c.head_dim())
    throw Error::in_file(g.path(), "key " + in_quotes(key_of(a, "rope.dimension_count")) + " is " + std::to_string(*rot) +
                                       ", not the head size " + std::to_string(c.head_dim()) + "; Orion rotates whole heads");
  c.rope_scaling = rope_scaling_of(g, a, c);
  c.bos_token_id.reset();
  if (gguf_adds_bos(g)) c.bos_token_id = g.integer("tokenizer.ggml.bos_token_id");
  c.eos_token_ids = gguf_stop_ids(g);
  c.validate(g.path());
  return c;
}

LlamaModel llama_model_from_gguf(const GgufFile& g, std::int64_t context, const ParamFilter& keep) {
  LlamaConfig c = llama_config_from_gguf(g);
  c.context_cap = std::max(c.context_cap, context);
  const ParamShapes all = llama_param_shapes(c), params = kept_params(all, keep);
  std::int64_t count = 0;
  for (const auto& [name, shape] : params) count += shape_numel(shape);
  check_fits_in_memory(static_cast<std::uint64_t>(count) * sizeof(float), "the weights dequantised to f32", g.path());
  std::vector<const GgufTensorInfo*> sources;
  std::set<std::string, std::less<>> used;
  for (const auto& [name, shape] : all) {
    const std::string gguf = gguf_tensor_name(name);
    const GgufTensorInfo* t = g.find_tensor(gguf);
    const std::string where = "tensor " + in_quotes(gguf) + " (" + name + ")";
    if (!t) throw Error::in_file(g.path(), "has no " + where + ", which its " + c.model_type + " config needs");
    if (t->shape() != shape)
      throw Error::in_file(g.path(), where + " has the shape " + shape_str(t->shape()) + "; its config (" + c.model_type + ", " +
                                         std::to_string(c.num_hidden_layers) + " layers of width " + std::to_string(c.hidden_size) +
                                         ") needs " + shape_str(shape));
    if (!t->type_info().dequantised)
      throw Error::in_file(g.path(), where + " is " + std::string(t->type_info().name) +
                                         "; Orion reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K and Q6_K tensors");
    if (!keep || keep(name)) sources.push_back(t);
    used.insert(gguf);
  }
  for (const GgufTensorInfo& t : g.tensors())
    if (!used.count(t.name) && t.name != kRopeFreqs)
      throw Error::in_file(g.path(), "tensor " + in_quotes(t.name) + " is not one of a " + c.model_type +
                                         " model's (its config has no place for it)");
  // Dequantised tensor by tensor on the machine's threads; llama's query and key rows back in
  // Hugging Face's order.
  std::vector<Tensor> weights(params.size());
  ThreadPool pool;
  pool.parallel_for(0, static_cast<std::int64_t>(params.size()), 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      const auto k = static_cast<std::size_t>(i);
      Tensor w = g.dequantized(*sources[k]);
      const std::string& name = params[k].first;
      if (c.model_type == "llama" && name.find(".self_attn.q_proj.") != std::string::npos) w = unpermute_rows(w, c.num_attention_heads);
      if (c.model_type == "llama" && name.find(".self_attn.k_proj.") != std::string::npos) w = unpermute_rows(w, c.num_key_value_heads);
      weights[k] = std::move(w);
    }
  });
  TensorMap map;
  for (std::size_t k = 0; k < params.size(); ++k) map.emplace(params[k].first, std::move(weights[k]));
  return LlamaModel::from_weights(std::move(c), std::move(map), g.path(), keep);
}

}  // namespace orion::model
