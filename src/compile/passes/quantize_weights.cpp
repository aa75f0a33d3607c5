#include "compile/passes/quantize_weights.h"

#include <vector>

#include "core/absmax_int8.h"
#include "ir/transforms/rewriter.h"

namespace orion::compile {

QuantizeWeightsStats quantize_weights(ir::Graph& graph, std::int64_t block) {
  QuantizeWeightsStats stats;
  ir::GraphRewriter rw(graph);
  for (ir::ValueId id = 0; id < graph.size(); ++id) {
    const ir::Node& n = graph.node(id);
    if (n.op != ir::Op::conv) {
      rw.copy(id);
      continue;
    }
    const ir::Node& w = graph.node(n.inputs[1]);
    const Shape& s = w.type.shape;
    const bool candidate = w.op == ir::Op::constant && is_float(w.type.dtype) && s.size() == 4 && s[2] == 1 && s[3] == 1;
    const std::int64_t cols = candidate ? s[1] : 0, b = block == 0 ? cols : block;
    if (!candidate || b <= 0 || cols % b != 0) {
      stats.skipped += candidate ? 1 : 0;
      rw.copy(id);
      continue;
    }
    const Tensor W = w.attr<Tensor>("value").to(DType::f32).contiguous();
    Tensor q(DType::i8, s);
    Tensor scales(DType::f32, {s[0], cols / b, 1, 1});
    quantize_absmax_int8(W.data<float>(), s[0], cols, b, q.data<std::int8_t>(), scales.data<float>());
    const ir::ValueId data = rw.constant(std::move(q), w.name + ".int8");
    const ir::ValueId scale = rw.constant(std::move(scales), w.name + ".scale");
    const ir::ValueId dq = rw.op(ir::Op::dequantize, {data, scale}, {}, w.name + ".dequantized");
    ir::Node conv = n;
    conv.inputs = {rw.map(n.inputs[0]), dq};
    rw.set_map(id, rw.add(std::move(conv)));
    ++stats.quantized;
    stats.int8_bytes += s[0] * cols;
    stats.scale_bytes += s[0] * (cols / b) * 2;
  }
  if (stats.quantized > 0) graph = rw.finish();
  return stats;
}

std::unique_ptr<ir::Pass> quantize_weights_pass(std::int64_t block) {
  return ir::make_pass("quantize_weights", [block](ir::Graph& g, ir::PassContext& c) {
    const QuantizeWeightsStats s = quantize_weights(g, block);
    if (s.quantized + s.skipped == 0) return false;
    c.note(std::to_string(s.quantized) + " conv weights to int8 (" + std::to_string(s.int8_bytes) + " bytes of int8, " +
           std::to_string(s.scale_bytes) + " of fp16 scales)" +
           (s.skipped ? "; " + std::to_string(s.skipped) + " left in fp16 (the block does not divide their channels)" : ""));
    return s.quantized > 0;
  });
}

}  // namespace orion::compile
