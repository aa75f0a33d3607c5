#include "compile/passes/to_fp16.h"

#include <cmath>

#include "core/half.h"
#include "ir/verifier.h"

namespace orion::compile {

namespace {

constexpr std::uint16_t kHalfExpMask = 0x7C00;
constexpr std::uint16_t kHalfMantMask = 0x03FF;
constexpr std::uint16_t kHalfSign = 0x8000;
constexpr std::uint16_t kHalfMaxBits = 0x7BFF;  // 65504

bool half_is_inf(std::uint16_t h) { return (h & kHalfExpMask) == kHalfExpMask && (h & kHalfMantMask) == 0; }

}  // namespace

Tensor saturate_to_fp16(const Tensor& t, Fp16Stats& stats) {
  const Tensor c = t.contiguous();
  const std::span<const float> in = c.span<const float>();
  Tensor out(DType::f16, t.shape());
  const std::span<std::uint16_t> h = out.span<std::uint16_t>();
  floats_to_halves(in, h);
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (half_is_inf(h[i])) {
      h[i] = static_cast<std::uint16_t>((h[i] & kHalfSign) | kHalfMaxBits);
      ++stats.saturated;
      if (std::isinf(in[i])) ++stats.infinite;
    } else if ((h[i] & ~kHalfSign) == 0 && in[i] != 0) {
      ++stats.flushed;
    }
  }
  stats.values += static_cast<std::int64_t>(in.size());
  ++stats.constants;
  return out;
}

Fp16Stats to_fp16(ir::Graph& graph) {
  Fp16Stats stats;
  for (ir::Node& n : graph.nodes()) {
    if (n.op == ir::Op::constant && n.type.dtype == DType::f32) {
      const std::int64_t sat = stats.saturated, inf = stats.infinite, flushed = stats.flushed;
      Tensor v = saturate_to_fp16(n.attr<Tensor>("value"), stats);
      n.attrs = ir::make_attrs(ir::Op::constant, {{"value", std::move(v)}});
      if (stats.saturated > sat || stats.flushed > flushed)
        stats.notes.push_back(ir::describe(n) + ": of " + std::to_string(n.type.numel()) + " values, " +
                              std::to_string(stats.saturated - sat) + " saturated to +-65504 (" +
                              std::to_string(stats.infinite - inf) + " of them infinite), " +
                              std::to_string(stats.flushed - flushed) + " became zero");
    }
    if (n.op == ir::Op::cast && n.attr<DType>("dtype") == DType::f32)
      n.attrs[static_cast<std::size_t>(ir::attr_index(ir::Op::cast, "dtype"))] = DType::f16;
    if (n.type.dtype == DType::f32) {
      n.type.dtype = DType::f16;
      ++stats.retyped;
    }
  }
  return stats;
}

std::unique_ptr<ir::Pass> to_fp16_pass() {
  return ir::make_pass("to_fp16", [](ir::Graph& g, ir::PassContext& c) {
    Fp16Stats s = to_fp16(g);
    for (std::string& note : s.notes) c.note(std::move(note));
    if (s.constants)
      c.note(std::to_string(s.constants) + " constants (" + std::to_string(s.values) + " values) to fp16: " +
             std::to_string(s.saturated) + " saturated to +-65504 (" + std::to_string(s.infinite) +
             " of them infinite), " + std::to_string(s.flushed) + " became zero");
    return s.retyped > 0 || s.constants > 0;
  });
}

}  // namespace orion::compile

namespace orion::compile {

std::int64_t widen_to_f32(ir::Graph& graph) {
  std::int64_t retyped = 0;
  for (ir::Node& n : graph.nodes()) {
    if (n.op == ir::Op::constant && n.type.dtype == DType::f16)
      n.attrs = ir::make_attrs(ir::Op::constant, {{"value", n.attr<Tensor>("value").to(DType::f32)}});
    if (n.op == ir::Op::cast && n.attr<DType>("dtype") == DType::f16)
      n.attrs[static_cast<std::size_t>(ir::attr_index(ir::Op::cast, "dtype"))] = DType::f32;
    if (n.type.dtype == DType::f16) {
      n.type.dtype = DType::f32;
      ++retyped;
    }
  }
  return retyped;
}

}  // namespace orion::compile
