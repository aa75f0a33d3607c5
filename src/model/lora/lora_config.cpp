#include "model/lora/lora_config.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/llama/llama_config.h"

namespace orion::model {

namespace {

struct ArchTargets {
  std::vector<std::string> all;
  std::map<std::string, std::vector<std::string>, std::less<>> names;  // a name of the list -> suffixes
};

const ArchTargets& arch_targets(std::string_view arch) {
  static const ArchTargets gpt2{
      {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"},
      {{"qkv", {"attn.c_attn"}},
       {"c_attn", {"attn.c_attn"}},
       {"o", {"attn.c_proj"}},
       {"up", {"mlp.c_fc"}},
       {"c_fc", {"mlp.c_fc"}},
       {"down", {"mlp.c_proj"}},
       {"c_proj", {"attn.c_proj", "mlp.c_proj"}},
       {"attn.c_attn", {"attn.c_attn"}},
       {"attn.c_proj", {"attn.c_proj"}},
       {"mlp.c_fc", {"mlp.c_fc"}},
       {"mlp.c_proj", {"mlp.c_proj"}}}};
  static const ArchTargets llama{
      {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
       "mlp.down_proj"},
      {}};
  // Qwen3.5's Gated DeltaNet layers have their own projections beside the full layers'.
  static const std::vector<std::string> gated_delta = {"linear_attn.in_proj_qkv", "linear_attn.in_proj_z", "linear_attn.in_proj_b",
                                                       "linear_attn.in_proj_a", "linear_attn.out_proj"};
  auto named = [](ArchTargets t) {
    for (const std::string& s : t.all) {
      const std::string leaf = s.substr(s.find('.') + 1);  // q_proj
      t.names[leaf] = {s};
      t.names[s] = {s};
      if (leaf.ends_with("_proj")) t.names[leaf.substr(0, leaf.size() - 5)] = {s};  // q
    }
    return t;
  };
  if (arch == "gpt2") return gpt2;
  if (arch == "qwen3_5_text") {
    static const ArchTargets qwen3_5 = named({[] {
                                                 std::vector<std::string> all = llama.all;
                                                 all.insert(all.end(), gated_delta.begin(), gated_delta.end());
                                                 return all;
                                               }(),
                                               {}});
    return qwen3_5;
  }
  if (is_llama_family(arch)) {
    static const ArchTargets llama_named = named(llama);
    return llama_named;
  }
  throw Error("lora: no LoRA targets are known for the architecture '" + std::string(arch) + "'");
}

std::vector<std::string> split_list(std::string_view list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    std::string item(list.substr(start, comma - start));
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    out.push_back(item);
    start = comma + 1;
  }
  return out;
}

}  // namespace

double LoraConfig::scale() const { return rslora ? alpha / std::sqrt(static_cast<double>(rank)) : alpha / rank; }

nlohmann::json LoraConfig::identity() const {
  return {{"rank", rank}, {"alpha", alpha}, {"rslora", rslora}, {"targets", targets}};
}

std::vector<std::string> lora_all_targets(std::string_view arch) { return arch_targets(arch).all; }

std::vector<std::string> lora_targets(std::string_view arch, std::string_view list) {
  const ArchTargets& t = arch_targets(arch);
  if (list.empty() || list == "all") {
    std::vector<std::string> all = t.all;
    std::sort(all.begin(), all.end());
    return all;
  }
  std::vector<std::string> out;
  int qkv = 0;  // GPT-2's q, k and v: one layer
  for (const std::string& item : split_list(list)) {
    if (arch == "gpt2" && (item == "q" || item == "k" || item == "v")) {
      ++qkv;
      continue;
    }
    const auto it = t.names.find(item);
    if (it == t.names.end()) {
      std::string known;
      for (const auto& [name, suffixes] : t.names) known += (known.empty() ? "" : ", ") + name;
      if (arch == "gpt2") known += ", and q,k,v together";
      throw Error("--lora-targets: '" + item + "' is not a linear layer of a " + std::string(arch) +
                  " block (" + known + ")");
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  if (qkv != 0 && qkv != 3)
    throw Error("--lora-targets: GPT-2 computes q, k and v in one layer (c_attn): name all three, or c_attn");
  if (qkv == 3) out.push_back("attn.c_attn");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool lora_targets_module(const LoraConfig& config, std::string_view module) {
  return std::any_of(config.targets.begin(), config.targets.end(), [&](const std::string& t) {
    return module == t || (module.size() > t.size() && module.ends_with(t) && module[module.size() - t.size() - 1] == '.');
  });
}

}  // namespace orion::model
