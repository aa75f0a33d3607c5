#include "model/lora/lora_adapter.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/atomic_folder.h"
#include "core/error.h"
#include "core/json_parse.h"
#include "core/random.h"
#include "model/formats/safetensors.h"
#include "model/lora/lora_graph.h"

namespace orion::model {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kPeftPrefix = "base_model.model.";
constexpr std::string_view kLoraA = ".lora_A.weight", kLoraB = ".lora_B.weight";

// Where the architecture's Hugging Face model keeps the graphs' names: GPT2LMHeadModel holds
// the blocks under "transformer.", LlamaForCausalLM's names are the graphs' already.
std::string_view hf_module_prefix(std::string_view arch) { return arch == "gpt2" ? "transformer." : ""; }

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error::in_file(path, "cannot be read");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A target_modules entry PEFT would read as a regular expression, which Orion does not.
bool looks_like_regex(std::string_view s) { return s.find_first_of("*+?()[]|^$\\") != std::string_view::npos; }

LoraConfig parse_adapter_config(const std::string& path) {
  const json j = parse_json(read_text_file(path), path);
  const auto bad = [&](const std::string& key, const std::string& what) { return Error::in_file(path, key + ": " + what); };
  if (!j.is_object()) throw bad("/", "expected an object");
  if (j.value("peft_type", std::string("LORA")) != "LORA")
    throw bad("peft_type", "is " + j.at("peft_type").dump() + "; Orion reads LoRA adapters only");
  LoraConfig c;
  if (!j.contains("r") || !j.at("r").is_number_integer() || j.at("r").get<std::int64_t>() < 1 ||
      j.at("r").get<std::int64_t>() > 65536)
    throw bad("r", "expected a positive integer rank");
  c.rank = static_cast<int>(j.at("r").get<std::int64_t>());
  if (!j.contains("lora_alpha") || !j.at("lora_alpha").is_number()) throw bad("lora_alpha", "expected a number");
  c.alpha = j.at("lora_alpha").get<double>();
  const auto flag = [&](const char* key) {
    if (!j.contains(key) || j.at(key).is_null()) return false;
    if (!j.at(key).is_boolean()) throw bad(key, "expected true or false");
    return j.at(key).get<bool>();
  };
  c.rslora = flag("use_rslora");
  if (flag("use_dora")) throw bad("use_dora", "DoRA adapters are not supported, only plain LoRA");
  if (j.contains("bias") && j.at("bias") != "none") throw bad("bias", "is " + j.at("bias").dump() + "; only \"none\" is supported");
  for (const char* key : {"modules_to_save", "layers_to_transform", "layers_pattern"})
    if (j.contains(key) && !j.at(key).is_null() && !(j.at(key).is_array() && j.at(key).empty()))
      throw bad(key, "is set; Orion applies adapters to whole layers of every block only");
  for (const char* key : {"rank_pattern", "alpha_pattern"})
    if (j.contains(key) && !j.at(key).is_null() && !(j.at(key).is_object() && j.at(key).empty()))
      throw bad(key, "per-module ranks and alphas are not supported");
  if (!j.contains("target_modules")) throw bad("target_modules", "missing");
  const json& t = j.at("target_modules");
  std::vector<std::string> targets;
  if (t.is_string()) {
    targets.push_back(t.get<std::string>());
  } else if (t.is_array()) {
    for (const json& e : t) {
      if (!e.is_string() || e.get<std::string>().empty()) throw bad("target_modules", "expected module names");
      targets.push_back(e.get<std::string>());
    }
  } else {
    throw bad("target_modules", "expected a list of module names");
  }
  for (const std::string& s : targets)
    if (looks_like_regex(s) || s == "all-linear")
      throw bad("target_modules", "'" + s + "' is a pattern; Orion reads lists of module names");
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
  c.targets = std::move(targets);
  return c;
}

}  // namespace

LoraAdapter init_lora_adapter(const ir::Graph& base, const LoraConfig& config, std::uint64_t seed) {
  LoraAdapter a;
  a.config = config;
  Rng rng(seed);
  for (const LoraModule& m : lora_modules(base, config)) {
    Tensor A(DType::f32, {config.rank, m.in});
    const float bound = 1.0f / std::sqrt(static_cast<float>(m.in));
    for (float& v : A.span<float>()) v = rng.uniform(-bound, bound);
    a.weights.emplace(lora_a_name(m.name), std::move(A));
    a.weights.emplace(lora_b_name(m.name), Tensor(DType::f32, {m.out, config.rank}));  // zero-filled
  }
  if (a.weights.empty()) throw Error("lora: the targets name no linear layer of the model");
  return a;
}

std::string lora_adapter_config_json(const LoraConfig& c, std::string_view arch, const std::string& base_model) {
  const json j = {{"peft_type", "LORA"},
                  {"task_type", "CAUSAL_LM"},
                  {"base_model_name_or_path", base_model},
                  {"r", c.rank},
                  {"lora_alpha", c.alpha},
                  {"lora_dropout", 0.0},
                  {"target_modules", c.targets},
                  {"bias", "none"},
                  {"fan_in_fan_out", arch == "gpt2"},  // GPT-2's Conv1D stores [in, out]
                  {"use_rslora", c.rslora},
                  {"use_dora", false},
                  {"modules_to_save", nullptr},
                  {"layers_to_transform", nullptr},
                  {"rank_pattern", json::object()},
                  {"alpha_pattern", json::object()},
                  {"init_lora_weights", true},
                  {"inference_mode", true}};
  return j.dump(2) + "\n";
}

TensorMap to_peft_names(const TensorMap& weights, std::string_view arch) {
  TensorMap out;
  for (const auto& [name, t] : weights) out.emplace(std::string(kPeftPrefix) + std::string(hf_module_prefix(arch)) + name, t);
  return out;
}

TensorMap from_peft_names(const TensorMap& tensors, std::string_view arch, const std::string& source) {
  TensorMap out;
  const std::string_view hf = hf_module_prefix(arch);
  for (const auto& [name, t] : tensors) {
    std::string_view n = name;
    if (!n.starts_with(kPeftPrefix) || !(n.ends_with(kLoraA) || n.ends_with(kLoraB)))
      throw Error::in_file(source, "tensor '" + name + "' is not a LoRA matrix (expected base_model.model.<module>.lora_A.weight or .lora_B.weight)");
    n.remove_prefix(kPeftPrefix.size());
    if (!hf.empty() && n.starts_with(hf)) n.remove_prefix(hf.size());
    if (!out.emplace(std::string(n), t.to(DType::f32).contiguous()).second)
      throw Error::in_file(source, "tensor '" + name + "' appears twice under different prefixes");
  }
  return out;
}

void write_lora_adapter(const std::string& dir, const LoraAdapter& a, std::string_view arch, const std::string& base_model,
                        bool replace) {
  AtomicFolderWriter folder(dir);
  write_file_atomic(folder.file(kAdapterConfigFile), lora_adapter_config_json(a.config, arch, base_model));
  const TensorMap peft = to_peft_names(a.weights, arch);
  write_safetensors(folder.file(kAdapterWeightsFile), {peft.begin(), peft.end()}, {{"format", "pt"}});
  folder.commit(replace);
}

void check_lora_weights(const TensorMap& weights, const ir::Graph& base, const LoraConfig& config, const std::string& source) {
  const std::vector<LoraModule> modules = lora_modules(base, config);
  std::set<std::string> targeted_by_some;
  for (const std::string& t : config.targets) {
    LoraConfig one = config;
    one.targets = {t};
    if (lora_modules(base, one).empty())
      throw Error::in_file(source, "target_modules: '" + t + "' names no linear layer of the base model");
  }
  std::set<std::string> expected;
  for (const LoraModule& m : modules) {
    const std::pair<std::string, Shape> want[] = {{lora_a_name(m.name), {config.rank, m.in}},
                                                  {lora_b_name(m.name), {m.out, config.rank}}};
    for (const auto& [name, shape] : want) {
      expected.insert(name);
      const auto it = weights.find(name);
      if (it == weights.end()) throw Error::in_file(source, "has no tensor for " + name + " (targeted by the adapter's config)");
      if (it->second.shape() != shape)
        throw Error::in_file(source, name + " has shape " + shape_str(it->second.shape()) + "; rank " +
                                         std::to_string(config.rank) + " on the base model's " + m.name + " (" +
                                         std::to_string(m.in) + " in, " + std::to_string(m.out) + " out) needs " +
                                         shape_str(shape));
    }
  }
  for (const auto& [name, t] : weights)
    if (!expected.contains(name))
      throw Error::in_file(source, "tensor " + name + " is no targeted linear layer of the base model");
}

LoraAdapter read_lora_adapter(const std::string& dir, const ir::Graph& base, std::string_view arch) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error::in_file(dir, "not an adapter folder (no such directory)");
  const std::string config_path = (fs::path(dir) / kAdapterConfigFile).string();
  const std::string weights_path = (fs::path(dir) / kAdapterWeightsFile).string();
  for (const std::string& p : {config_path, weights_path})
    if (!fs::is_regular_file(p, ec)) throw Error::in_file(p, "missing: a LoRA adapter folder holds adapter_config.json and adapter_model.safetensors");
  LoraAdapter a;
  a.source = dir;
  a.config = parse_adapter_config(config_path);
  const SafetensorsFile file = SafetensorsFile::open(weights_path);
  TensorMap tensors;
  for (const SafetensorsEntry& e : file.entries()) tensors.emplace(e.name, file.tensor_as(e.name, DType::f32));
  a.weights = from_peft_names(tensors, arch, weights_path);
  check_lora_weights(a.weights, base, a.config, weights_path);
  // The targets as Orion names them ("q_proj" -> "self_attn.q_proj"), so that adapters of the
  // same layers share a package whatever their config's spelling; a config that adapts only
  // some blocks has no such form.
  LoraConfig canonical = a.config;
  canonical.targets.clear();
  for (const std::string& t : lora_all_targets(arch))
    if (lora_targets_module(a.config, "block." + t)) canonical.targets.push_back(t);
  std::sort(canonical.targets.begin(), canonical.targets.end());
  const auto names = [&](const LoraConfig& c) {
    std::vector<std::string> out;
    for (const LoraModule& m : lora_modules(base, c)) out.push_back(m.name);
    return out;
  };
  if (names(canonical) != names(a.config))
    throw Error::in_file(config_path, "target_modules: adapts some blocks' layers and not others'; Orion adapts a layer in every block");
  a.config = std::move(canonical);
  return a;
}

TensorMap lora_runtime_weights(const LoraAdapter& adapter) {
  TensorMap out;
  const float scale = static_cast<float>(adapter.config.scale());
  for (const auto& [name, t] : adapter.weights) {
    Tensor c = t.to(DType::f32).contiguous().clone();
    if (name.ends_with(kLoraB))
      for (float& v : c.span<float>()) v *= scale;
    out.emplace(name, std::move(c));
  }
  return out;
}

TensorMap merge_lora(const TensorMap& base_weights, const ir::Graph& base, const LoraAdapter& adapter) {
  TensorMap out = base_weights;
  const float scale = static_cast<float>(adapter.config.scale());
  for (const LoraModule& m : lora_modules(base, adapter.config)) {
    const std::string w_name = m.name + ".weight";
    const Tensor A = adapter.weights.at(lora_a_name(m.name)).to(DType::f32).contiguous();
    const Tensor B = adapter.weights.at(lora_b_name(m.name)).to(DType::f32).contiguous();
    Tensor w = base_weights.at(w_name).to(DType::f32).contiguous().clone();
    const auto a = A.span<const float>(), b = B.span<const float>();
    auto p = w.span<float>();
    const std::int64_t r = adapter.config.rank;
    // delta[o][i] = scale * sum_k B[o][k] A[k][i], accumulated in double: merging must not
    // lose what a small adapter adds to a large weight.
    for (std::int64_t o = 0; o < m.out; ++o)
      for (std::int64_t i = 0; i < m.in; ++i) {
        double d = 0;
        for (std::int64_t k = 0; k < r; ++k) d += static_cast<double>(b[o * r + k]) * a[k * m.in + i];
        p[m.out_major ? o * m.in + i : i * m.out + o] += static_cast<float>(scale * d);
      }
    out[w_name] = std::move(w);
  }
  return out;
}

}  // namespace orion::model
