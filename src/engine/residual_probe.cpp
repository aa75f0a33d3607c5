#include "engine/residual_probe.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "exec/cpu/executor.h"

namespace orion::engine {

std::vector<std::int32_t> residual_probe_tokens(const model::CausalLm& m, std::int64_t n) {
  n = std::min(n, m.context());
  std::vector<std::int32_t> t;
  if (const std::optional<std::int32_t> bos = m.bos_token_id()) t.push_back(*bos);
  for (std::int64_t i = 0; static_cast<std::int64_t>(t.size()) < n; ++i)
    t.push_back(static_cast<std::int32_t>((i * 7919 + 13) % m.vocab_size()));
  return t;
}

double residual_peak(const model::CausalLm& m, std::span<const std::int32_t> tokens) {
  const auto T = static_cast<std::int64_t>(tokens.size());
  ir::Graph g = m.decoding_graph(T, 0, false);
  // The layers' outputs become the graph's, after its own (logits and caches).
  const std::size_t first = g.outputs().size();
  for (std::int64_t l = 0; l < m.layers(); ++l) {
    const std::optional<ir::ValueId> id = g.find("layer_out." + std::to_string(l));
    if (!id) throw Error(std::string(m.arch()) + ": the graph names no layer_out." + std::to_string(l));
    g.outputs().push_back(*id);
  }
  TensorMap in = m.weights();
  std::vector<std::int32_t> pos(tokens.size());
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(i);
  in["tokens"] = Tensor::from_ints({T}, tokens);
  in["positions"] = Tensor::from_ints({T}, pos);
  const std::vector<Tensor> out = exec::CpuExecutor(std::move(g)).run(in);
  double peak = 0;
  for (std::size_t i = first; i < out.size(); ++i)
    for (const float v : out[i].contiguous().span<float>()) peak = std::max(peak, static_cast<double>(std::abs(v)));
  return peak;
}

double residual_scale_for(double peak) {
  if (!std::isfinite(peak)) throw Error("the residual stream is not finite even in f32 on the CPU");
  double s = 1;
  while (peak / s > kResidualCeiling) s *= 2;
  return s;
}

}  // namespace orion::engine
