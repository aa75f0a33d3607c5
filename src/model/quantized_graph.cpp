#include "model/quantized_graph.h"

#include <map>
#include <optional>

#include "core/error.h"
#include "ir/transforms/rewriter.h"

namespace orion::model {

namespace {

using ir::ValueId;

// The words of a matrix as the op takes them: the bytes of its uint32 words, a view.
Tensor word_bytes(const Tensor& words) {
  const Tensor w = words.contiguous();
  return w.view_bytes(DType::u8, {w.dim(0), w.dim(1) * 4});
}

struct Bound {
  const QuantizedMatrix* matrix;
  Tensor bytes;
  ValueId words, scales, biases;
  std::optional<ValueId> whole;  // the whole matrix widened, made when a reader needs it
};

class Binder {
 public:
  Binder(const ir::Graph& g, const QuantizedMatrices& q, std::size_t chunk_bytes)
      : g_(g), q_(q), chunk_bytes_(chunk_bytes), rw_(g) {}

  ir::Graph run() {
    for (ValueId id = 0; id < g_.size(); ++id) {
      const ir::Node& n = g_.node(id);
      if (n.op == ir::Op::param && q_.contains(n.name)) bind(id, n);
      else if (n.op == ir::Op::gather && bound_.contains(n.inputs[0]) && n.attr_int("axis") == 0) lookup(id, n);
      else if (n.op == ir::Op::matmul && bound_.contains(n.inputs[1]) && chunked(n)) product(id, n);
      else {
        for (ValueId in : n.inputs)
          if (bound_.contains(in)) rw_.set_map(in, whole(in));
        rw_.copy(id);
      }
    }
    for (ValueId out : g_.outputs())
      if (bound_.contains(out)) rw_.set_map(out, whole(out));
    return rw_.finish();
  }

 private:
  ir::NamedAttrs bits(const Bound& b) const { return {{"bits", std::int64_t{b.matrix->format.bits}}}; }

  void bind(ValueId id, const ir::Node& n) {
    const QuantizedMatrix& m = q_.find(n.name)->second;
    if (n.type.shape != Shape{m.rows(), m.cols()})
      throw Error("param " + n.name + " is " + n.type.str() + ", its quantized matrix is " +
                  shape_str(Shape{m.rows(), m.cols()}));
    Bound b{&m, word_bytes(m.words), 0, 0, 0, {}};
    b.words = rw_.constant(b.bytes, n.name + ".words");
    b.scales = rw_.constant(m.scales, n.name + ".scales");
    b.biases = rw_.constant(m.biases, n.name + ".biases");
    bound_.emplace(id, std::move(b));
  }

  ValueId whole(ValueId param) {
    Bound& b = bound_.at(param);
    if (!b.whole) b.whole = rw_.op(ir::Op::dequantize_affine, {b.words, b.scales, b.biases}, bits(b), g_.node(param).name);
    return *b.whole;
  }

  // The rows a lookup takes, widened alone.
  void lookup(ValueId id, const ir::Node& n) {
    const Bound& b = bound_.at(n.inputs[0]);
    const ValueId idx = rw_.map(n.inputs[1]);
    const ir::NamedAttrs axis{{"axis", std::int64_t{0}}};
    const ValueId words = rw_.op(ir::Op::gather, {b.words, idx}, axis, n.name + ".words");
    const ValueId scales = rw_.op(ir::Op::gather, {b.scales, idx}, axis, n.name + ".scales");
    const ValueId biases = rw_.op(ir::Op::gather, {b.biases, idx}, axis, n.name + ".biases");
    rw_.take_over(id, rw_.op(ir::Op::dequantize_affine, {words, scales, biases}, bits(b), n.name));
  }

  std::int64_t chunk_rows(const QuantizedMatrix& m) const {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(chunk_bytes_ / (static_cast<std::size_t>(m.cols()) * 4)));
  }
  // x W^T with W larger than a chunk.
  bool chunked(const ir::Node& n) const {
    const QuantizedMatrix& m = *bound_.at(n.inputs[1]).matrix;
    return n.attr_bool("transpose_y") && !n.attr_bool("transpose_x") && m.rows() > chunk_rows(m);
  }

  // x W^T as the concatenation of x W_c^T over chunks W_c of W's rows, each widened alone.
  void product(ValueId id, const ir::Node& n) {
    const Bound& b = bound_.at(n.inputs[1]);
    const QuantizedMatrix& m = *b.matrix;
    const ValueId x = rw_.map(n.inputs[0]);
    const std::string& w = g_.node(n.inputs[1]).name;
    std::vector<ValueId> parts;
    for (std::int64_t r0 = 0, step = chunk_rows(m); r0 < m.rows(); r0 += step) {
      const std::int64_t r1 = std::min(m.rows(), r0 + step);
      const std::string c = w + ".rows" + std::to_string(r0);
      const ValueId words = rw_.constant(b.bytes.slice(0, r0, r1), c + ".words");
      const ValueId scales = rw_.constant(m.scales.slice(0, r0, r1), c + ".scales");
      const ValueId biases = rw_.constant(m.biases.slice(0, r0, r1), c + ".biases");
      const ValueId part = rw_.op(ir::Op::dequantize_affine, {words, scales, biases}, bits(b), c);
      parts.push_back(rw_.op(ir::Op::matmul, {x, part}, ir::named_attrs(n), n.name + ".rows" + std::to_string(r0)));
    }
    rw_.take_over(id, rw_.op(ir::Op::concat, std::move(parts), {{"axis", std::int64_t{-1}}}, n.name));
  }

  const ir::Graph& g_;
  const QuantizedMatrices& q_;
  std::size_t chunk_bytes_;
  ir::GraphRewriter rw_;
  std::map<ValueId, Bound> bound_;
};

}  // namespace

ir::Graph bind_quantized(const ir::Graph& graph, const QuantizedMatrices& quantized, std::size_t chunk_bytes) {
  if (quantized.empty()) return graph;
  return Binder(graph, quantized, chunk_bytes).run();
}

}  // namespace orion::model
