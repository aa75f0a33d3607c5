#include "model/gpt2_ane_package.h"

#include "compile/partition.h"
#include "core/error.h"
#include "model/gpt2.h"

namespace orion::model {

namespace {

nlohmann::json session_block(const Gpt2Config& c, bool decode, std::int64_t capacity) {
  nlohmann::json cache = nlohmann::json::array();
  for (int l = 0; l < c.n_layer; ++l)
    for (const char* kv : {"k", "v"}) {
      const std::string layer = std::to_string(l);
      nlohmann::json e = {{"new", std::string(kv) + "." + layer}};
      if (decode) e["past"] = std::string("past_") + kv + "." + layer;
      cache.push_back(e);
    }
  nlohmann::json s = {{"tokens", "tokens"}, {"positions", "positions"}, {"logits", "logits"}, {"cache", cache}};
  if (decode) {
    s["mask"] = "mask";
    s["capacity"] = capacity;
  }
  return s;
}

}  // namespace

std::vector<compile::ProgramSpec> gpt2_ane_programs(const Gpt2Config& c, const Gpt2PackageShape& shape) {
  const std::int64_t capacity = shape.capacity > 0 ? shape.capacity : c.n_positions - 1;
  if (shape.window < 1 || shape.window > c.n_positions)
    throw Error("gpt2 package: a prefill window of " + std::to_string(shape.window) + " tokens does not fit the context of " +
                std::to_string(c.n_positions));
  if (capacity < 2 || capacity + 1 > c.n_positions)
    throw Error("gpt2 package: a decode cache of " + std::to_string(capacity) + " positions needs 2 to " +
                std::to_string(c.n_positions - 1));
  std::vector<compile::ProgramSpec> out;
  out.push_back({"prefill", gpt2_graph(c, {.seq = shape.window, .past = 0}), shape.window, {},
                 session_block(c, false, 0)});
  ir::Graph decode = gpt2_graph(c, {.seq = 1, .past = capacity});
  auto varying = compile::shape_varying_nodes(decode, gpt2_graph(c, {.seq = 1, .past = capacity - 1}));
  out.push_back({"decode", std::move(decode), 1, std::move(varying), session_block(c, true, capacity)});
  return out;
}

nlohmann::json gpt2_package_model_info(const Gpt2Config& c, const std::string& source) {
  return {{"architecture", "gpt2"}, {"source", source},       {"n_layer", c.n_layer},
          {"n_embd", c.n_embd},     {"n_head", c.n_head},     {"vocab_size", c.vocab_size},
          {"n_positions", c.n_positions}};
}

}  // namespace orion::model
