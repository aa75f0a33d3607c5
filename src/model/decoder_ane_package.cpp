#include "model/decoder_ane_package.h"

#include <algorithm>
#include <array>

#include "compile/ane/partition.h"
#include "core/error.h"
#include "model/gpt2/gpt2.h"

namespace orion::model {

namespace {

constexpr std::int64_t kCacheSlotMultiple = 32;  // LegalizeIoOptions::seq_multiple

nlohmann::json session_block(std::int64_t layers, bool decode, std::int64_t capacity, std::int64_t local_window,
                             std::int64_t sequences = 1, const std::vector<bool>& recurrent = {}) {
  nlohmann::json cache = nlohmann::json::array(), state = nlohmann::json::array();
  for (std::int64_t l = 0; l < layers; ++l) {
    const bool carried = !recurrent.empty() && recurrent[static_cast<std::size_t>(l)];
    using Kinds = std::array<const char*, 2>;
    for (const char* kind : carried ? Kinds{"conv", "state"} : Kinds{"k", "v"}) {
      const std::string layer = std::to_string(l);
      nlohmann::json e = {{"new", std::string(kind) + "." + layer}};
      if (decode) e["past"] = std::string("past_") + kind + "." + layer;
      (carried ? state : cache).push_back(e);
    }
  }
  nlohmann::json s = {{"tokens", "tokens"}, {"positions", "positions"}, {"logits", "logits"}, {"cache", cache}};
  if (!state.empty()) s["state"] = state;
  if (decode) {
    s["mask"] = "mask";
    s["capacity"] = capacity;
    if (sequences > 1) s["sequences"] = sequences;
    if (local_window > 0) {
      s["mask_local"] = "mask_local";
      s["window"] = local_window;
    }
  }
  return s;
}

nlohmann::json model_info(std::string_view arch, const std::string& config_json, const std::string& source) {
  return {{"architecture", arch}, {"source", source}, {"config", nlohmann::json::parse(config_json)}};
}

}  // namespace

std::vector<compile::ProgramSpec> decoder_ane_programs(const AneGraphAt& graph_at, std::int64_t layers,
                                                       std::int64_t context, const AnePackageShape& shape,
                                                       const std::string& arch, std::int64_t local_window,
                                                       const AneRecurrence& recurrence) {
  const std::vector<bool>& rec = recurrence.layers;
  if (std::find(rec.begin(), rec.end(), true) != rec.end() && (shape.chunk > 1 || shape.batch > 1))
    throw Error(arch + " package: a model with recurrent layers has no extend or decode_batch program yet (no --ane-chunk, --batch)");
  auto host_of = [&](const ir::Graph& g) {
    return recurrence.host_of ? recurrence.host_of(g) : std::set<std::string, std::less<>>{};
  };
  // On the device the cache's surfaces are never padded (legalize_io: fixed-length inputs). A
  // context too short for one bucket of slots keeps attention on the host by default, where any
  // capacity works, rather than refusing a model that is only small.
  const bool host_attention = shape.host_attention || (shape.capacity == 0 && context - 1 < kCacheSlotMultiple);
  const std::int64_t slots = host_attention ? 1 : kCacheSlotMultiple;
  const std::int64_t capacity = shape.capacity > 0 ? shape.capacity : (context - 1) / slots * slots;
  if (shape.window < 1 || shape.window > context)
    throw Error(arch + " package: a prefill window of " + std::to_string(shape.window) +
                " tokens does not fit the context of " + std::to_string(context));
  if (capacity < 2 || capacity + 1 > context)
    throw Error(arch + " package: a decode cache of " + std::to_string(capacity) + " positions needs 2 to " +
                std::to_string(context - 1) + " (the model runs " + std::to_string(context) + " positions)");
  if (capacity % slots != 0)
    throw Error(arch + " package: a decode cache kept on the ANE has a multiple of " + std::to_string(slots) +
                " slots (ANE011), not " + std::to_string(capacity) + " (or put attention on the host)");
  std::set<std::string, std::less<>> ends;
  for (std::int64_t l = 0; l < layers; ++l) ends.insert("layer_out." + std::to_string(l));
  std::vector<compile::ProgramSpec> out;
  ir::Graph prefill = graph_at(shape.window, 0, 1);
  std::set<std::string, std::less<>> prefill_host = host_of(prefill);
  out.push_back({"prefill", std::move(prefill), shape.window, std::move(prefill_host), session_block(layers, false, 0, 0, 1, rec), ends});
  ir::Graph decode = graph_at(1, capacity, 1);
  std::set<std::string, std::less<>> host = host_of(decode);
  if (host_attention) host.merge(compile::shape_varying_nodes(decode, graph_at(1, capacity - 1, 1)));
  out.push_back({"decode", std::move(decode), 1, std::move(host), session_block(layers, true, capacity, local_window, 1, rec), ends});
  if (shape.chunk > 1) {
    if (host_attention) throw Error(arch + " package: an extend program keeps its cache on the device (no --host-attention)");
    if (shape.chunk > capacity)
      throw Error(arch + " package: a chunk of " + std::to_string(shape.chunk) + " tokens is more than the cache's " +
                  std::to_string(capacity) + " slots");
    nlohmann::json block = session_block(layers, true, capacity, local_window);
    block["chunk"] = shape.chunk;
    out.push_back({"extend", graph_at(shape.chunk, capacity, 1), shape.chunk, {}, std::move(block), ends});
  }
  if (shape.batch > 1) {
    if (host_attention) throw Error(arch + " package: a batched decode program keeps its caches on the device (no --host-attention)");
    const std::int64_t B = shape.batch;
    out.push_back({"decode_batch", graph_at(B, B * capacity, B), B, {}, session_block(layers, true, capacity, local_window, B), ends});
  }
  return out;
}

std::vector<compile::ProgramSpec> ane_programs(const CausalLm& m, const AnePackageShape& shape) {
  AneRecurrence recurrence;
  for (std::int64_t l = 0; l < m.layers(); ++l) recurrence.layers.push_back(m.recurrent_state(l).has_value());
  recurrence.host_of = [&](const ir::Graph& g) { return m.ane_host_nodes(g); };
  return decoder_ane_programs([&](std::int64_t seq, std::int64_t past, std::int64_t n) { return m.ane_graph(seq, past, n, shape.residual_scale); },
                              m.layers(), m.context(), shape, std::string(m.arch()), m.local_window(), recurrence);
}

std::vector<compile::ProgramSpec> gpt2_ane_programs(const Gpt2Config& c, const AnePackageShape& shape) {
  return decoder_ane_programs([&](std::int64_t seq, std::int64_t past, std::int64_t n) {
                                return gpt2_graph(c, {.seq = seq, .past = past, .ane_form = true, .sequences = n});
                              },
                              c.n_layer, c.n_positions, shape, "gpt2");
}

nlohmann::json package_model_info(const CausalLm& m, const std::string& source) {
  return model_info(m.arch(), m.config_json(), source);
}

nlohmann::json gpt2_package_model_info(const Gpt2Config& c, const std::string& source) {
  return model_info("gpt2", gpt2_config_json(c), source);
}

}  // namespace orion::model
