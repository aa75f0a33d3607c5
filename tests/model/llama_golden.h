#pragma once
// The Llama goldens' config and model, shared by the tests that hold a Llama-family model to
// them (llama_test.cpp, mlx_quantized_test.cpp).
#include <nlohmann/json.hpp>
#include <utility>

#include "core/half.h"
#include "model/golden_logits.h"
#include "model/llama/llama_config.h"
#include "model/llama/llama_model.h"

namespace orion::model {

// The golden's config: the original Llama goldens carry a few keys (model_type llama implied),
// the family goldens their whole config.json.
inline LlamaConfig llama_golden_config(const testing::GoldenLogits& g) {
  LlamaConfig c = parse_llama_config(
      [&] {
        nlohmann::json j = g.config;
        if (!j.contains("model_type")) j["model_type"] = "llama";
        return j.dump();
      }(),
      g.name);
  return c;
}

// The golden's model: the seed's weights, rounded as the checkpoint the reference read stored them.
inline LlamaModel llama_golden_model(const testing::GoldenLogits& g) {
  const LlamaConfig c = llama_golden_config(g);
  TensorMap w = llama_init_weights(c, g.seed);
  if (c.torch_dtype == "bfloat16")
    for (auto& [name, t] : w) round_to_bf16(t.span<float>());
  return LlamaModel::from_weights(c, std::move(w), g.name);
}

}  // namespace orion::model
