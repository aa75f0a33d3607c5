#include "compile/passes/quantize_weights.h"

#include <vector>

#include "compile/passes/int4_weights.h"
#include "core/error.h"
#include "compile/mil/mil_writer.h"
#include "compile/passes/lut4_weights.h"
#include "core/absmax_int8.h"
#include "core/half.h"
#include "ir/transforms/rewriter.h"

namespace orion::compile {

namespace {

// 4-bit forms leave weights of at most this many values in fp16, as coremltools' compressors do
// (weight_threshold 2048).
constexpr std::int64_t kMin4BitWeights = 2048;

float fp16_value(std::uint16_t h) { return half_to_float(h); }

// Whether the 4-bit form gives back exactly the fp16 values of `w` [O, C].
bool exact(const Tensor& w, const Int4Weight& q) {
  const std::int64_t cols = w.shape()[1], nb = q.scale.shape()[1], b = cols / nb;
  const float* x = w.data<float>();
  const std::uint16_t* s = q.scale.data<std::uint16_t>();
  const bool is_signed = q.values.dtype() == DType::i8;
  for (std::int64_t i = 0; i < w.numel(); ++i) {
    const std::int64_t k = i / cols * nb + i % cols / b;
    const float z = !q.offset ? 0.0f
                    : q.offset->dtype() == DType::u8 ? q.offset->data<std::uint8_t>()[k]
                                                      : fp16_value(q.offset->data<std::uint16_t>()[k]);
    const float v = is_signed ? reinterpret_cast<const std::int8_t*>(q.values.raw())[i] : reinterpret_cast<const std::uint8_t*>(q.values.raw())[i];
    if (float_to_half(fp16_value(s[k]) * (v - z)) != float_to_half(x[i])) return false;
  }
  return true;
}
bool exact(const Tensor& w, const Lut4Weight& q) {
  const std::int64_t per_table = w.numel() / q.lut.shape()[0];
  const float* x = w.data<float>();
  const std::uint16_t* lut = q.lut.data<std::uint16_t>();
  const std::uint8_t* codes = q.codes.data<std::uint8_t>();
  for (std::int64_t i = 0; i < w.numel(); ++i)
    if (lut[i / per_table * kLut4Entries + codes[i]] != float_to_half(x[i])) return false;
  return true;
}

// The weight `w` [O, C, 1, 1] in `form`, as the value a conv reads; nullopt when the block does
// not divide it, when it is small (4-bit forms), or when it is not a model weight and the form
// would change its values (`model_weight` false: the constants a model's graph writes, RoPE's
// rotation, grouped-query selections, whose 0 and +-1 the 4-bit forms hold exactly).
std::optional<ir::ValueId> quantized(ir::GraphRewriter& rw, const ir::Node& w, WeightForm form, std::int64_t block,
                                     MilDialect dialect, bool model_weight, const Int4Weight* given,
                                     QuantizeWeightsStats& stats) {
  const Shape& s = w.type.shape;
  const std::int64_t rows = s[0], cols = s[1];
  if (given && (form == WeightForm::int4 || form == WeightForm::uint4)) {
    if (given->values.shape() != Shape{rows, cols})
      throw Error("quantize_weights: the 4-bit values of " + w.name + " are " + shape_str(given->values.shape()) +
                  ", the weight is " + shape_str(s));
    ++stats.given;
    stats.data_bytes += rows * cols / 2;
    stats.side_bytes += given->scale.numel() * 2 + (given->offset ? given->offset->nbytes() : 0);
    return add_int4_weight(rw, *given, s, mil_identifier(w.name) + "_" + std::string(weight_form_name(form)));
  }
  const Tensor W = w.attr<Tensor>("value").to(DType::f32).contiguous().reshape({rows, cols});
  switch (form) {
    case WeightForm::int8: {
      const std::int64_t b = block == 0 ? cols : block;
      if (!model_weight || b <= 0 || cols % b != 0) return std::nullopt;
      Tensor q(DType::i8, s);
      Tensor scales(DType::f32, {rows, cols / b, 1, 1});
      quantize_absmax_int8(W.data<float>(), rows, cols, b, q.data<std::int8_t>(), scales.data<float>());
      const ir::ValueId data = rw.constant(std::move(q), w.name + ".int8");
      const ir::ValueId scale = rw.constant(std::move(scales), w.name + ".scale");
      stats.data_bytes += rows * cols;
      stats.side_bytes += rows * (cols / b) * 2;
      return rw.op(ir::Op::dequantize, {data, scale}, {}, w.name + ".dequantized");
    }
    case WeightForm::int4: case WeightForm::uint4: {
      const std::int64_t b = block == 0 ? cols : block;
      if (rows * cols <= kMin4BitWeights || b <= 0 || cols % b != 0) return std::nullopt;
      const Int4Weight q = quantize_int4(W, b, form == WeightForm::uint4 ? Int4Mode::affine : Int4Mode::symmetric, w.name);
      if (!model_weight && !exact(W, q)) return std::nullopt;
      stats.data_bytes += rows * cols / 2;
      stats.side_bytes += q.scale.numel() * 2 + (q.offset ? (q.offset->numel() + 1) / 2 : 0);
      return add_int4_weight(rw, q, s, mil_identifier(w.name) + "_" + std::string(weight_form_name(form)));
    }
    case WeightForm::lut4: {
      const bool ios16 = dialect == MilDialect::ios16;
      const std::int64_t g = ios16 || block == 0 ? rows : block;  // the iOS16 op takes one table
      if (rows * cols <= kMin4BitWeights || g <= 0 || rows % g != 0) return std::nullopt;
      const Lut4Weight q = palettize_lut4(W, g, w.name);
      if (!model_weight && !exact(W, q)) return std::nullopt;
      stats.data_bytes += rows * cols / 2;
      stats.side_bytes += q.lut.numel() * 2;
      return add_lut4_weight(rw, q, s, ios16, mil_identifier(w.name) + "_lut4");
    }
    case WeightForm::fp16: break;
  }
  return std::nullopt;
}

}  // namespace

std::unordered_set<std::string> model_weight_names(const ir::Graph& g) {
  std::unordered_set<std::string> names;
  std::vector<bool> from_params(static_cast<std::size_t>(g.size()), false);
  for (ir::ValueId id = 0; id < g.size(); ++id) {
    const ir::Node& n = g.node(id);
    bool p = n.op == ir::Op::param;
    if (n.op != ir::Op::constant && n.op != ir::Op::input && !n.inputs.empty()) {
      p = true;
      for (ir::ValueId in : n.inputs) p = p && from_params[static_cast<std::size_t>(in)];
    }
    from_params[static_cast<std::size_t>(id)] = p;
    if (p) names.insert(n.name);
  }
  return names;
}

QuantizeWeightsStats quantize_weights(ir::Graph& graph, WeightForm form, std::int64_t block, MilDialect dialect,
                                      const std::unordered_set<std::string>* model_weights, const Int4Weights* given) {
  QuantizeWeightsStats stats;
  if (form == WeightForm::fp16) return stats;
  ir::GraphRewriter rw(graph);
  for (ir::ValueId id = 0; id < graph.size(); ++id) {
    const ir::Node& n = graph.node(id);
    if (n.op != ir::Op::conv) {
      rw.copy(id);
      continue;
    }
    const ir::Node& w = graph.node(n.inputs[1]);
    const Shape& s = w.type.shape;
    constexpr std::string_view kConv = ".conv";  // lower_layout's suffix
    const std::string base = w.name.ends_with(kConv) ? w.name.substr(0, w.name.size() - kConv.size()) : std::string();
    const bool model_weight = !model_weights || (!base.empty() && model_weights->contains(base));
    const Int4Weight* own = nullptr;
    if (given && !base.empty())
      if (auto it = given->find(base); it != given->end()) own = &it->second;
    const bool candidate = w.op == ir::Op::constant && is_float(w.type.dtype) && s.size() == 4 && s[2] == 1 && s[3] == 1;
    const std::optional<ir::ValueId> q =
        candidate ? quantized(rw, w, form, block, dialect, model_weight, own, stats) : std::nullopt;
    if (!q) {
      stats.skipped += candidate ? 1 : 0;
      rw.copy(id);
      continue;
    }
    ir::Node conv = n;
    conv.inputs = {rw.map(n.inputs[0]), *q};
    rw.take_over(id, rw.add(std::move(conv)));  // the conv keeps its name
    ++stats.quantized;
  }
  if (stats.quantized > 0) graph = rw.finish();
  return stats;
}

std::unique_ptr<ir::Pass> quantize_weights_pass(WeightForm form, std::int64_t block, MilDialect dialect,
                                                std::optional<std::unordered_set<std::string>> model_weights,
                                                const Int4Weights* given) {
  return ir::make_pass("quantize_weights", [form, block, dialect, names = std::move(model_weights), given](ir::Graph& g, ir::PassContext& c) {
    const QuantizeWeightsStats s = quantize_weights(g, form, block, dialect, names ? &*names : nullptr, given);
    if (s.quantized + s.skipped == 0) return false;
    const std::string f(weight_form_name(form));
    c.note(std::to_string(s.quantized) + " conv weights to " + f +
           (s.given ? " (" + std::to_string(s.given) + " of them the model's own 4-bit values)" : "") + " (" + std::to_string(s.data_bytes) + " bytes of " + f +
           " values, " + std::to_string(s.side_bytes) + " of scales, offsets or tables)" +
           (s.skipped ? "; " + std::to_string(s.skipped) + " left in fp16 (small, not divided by the block, or a constant the form would change)" : ""));
    return s.quantized > 0;
  });
}

}  // namespace orion::compile
