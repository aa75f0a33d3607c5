#include "model/lora/lora_model.h"

#include <filesystem>

#include "core/error.h"
#include "model/lora/lora_graph.h"

namespace orion::model {

ir::Graph lora_base_graph(const CausalLm& lm) { return lm.decoding_graph(1, 0, false); }

LoraAdapter read_lora_adapter(const std::string& dir, const CausalLm& lm) {
  return read_lora_adapter(dir, lora_base_graph(lm), lm.arch());
}

AnyModel merged_model(const AnyModel& base, const LoraAdapter& adapter) {
  const CausalLm& lm = causal_lm(base);
  TensorMap merged = merge_lora(lm.weights(), lora_base_graph(lm), adapter);
  const std::string source = adapter.source.empty() ? "(merged)" : adapter.source;
  return std::visit(
      [&](const auto& m) -> AnyModel {
        using M = std::decay_t<decltype(m)>;
        return M::from_weights(m.config(), std::move(merged), source);
      },
      base);
}

int write_merged_model(const ModelFolder& md, const LoraAdapter& adapter, const std::string& out, bool replace) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& own : {md.dir, adapter.source})
    if (!own.empty() && fs::exists(own, ec) && fs::exists(out, ec) && fs::equivalent(own, out, ec))
      throw Error::in_file(out, "is the folder merge-lora reads from; choose another output folder");
  if (fs::exists(out, ec) && !replace) throw Error::in_file(out, "exists already (--force replaces it)");
  const CausalLm& lm = md.lm();
  const TensorMap merged = merge_lora(lm.weights(), lora_base_graph(lm), adapter);
  write_model_folder(out, merged, lm.config_json(), *md.tokenizer);
  return static_cast<int>(lora_modules(lora_base_graph(lm), adapter.config).size());
}

}  // namespace orion::model
