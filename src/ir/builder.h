#pragma once
// Builder: writes graphs in code that reads like the model it builds. Every call checks its
// inputs at once (type rule of the op table), so a mistake is reported at the line that made it.
//
//   Builder b("mlp");
//   Value x = b.input("x", DType::f32, {16, 64});
//   Value h = b.gelu(b.matmul(x, b.param("w1", DType::f32, {64, 256})));
//   b.output(h);
//   Graph g = b.finish();
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace orion::ir {

struct Value {
  ValueId id = -1;
};

using NamedAttrs = std::vector<std::pair<std::string, AttrValue>>;

// Appends a node of `op` on `inputs` to `g`, its attributes completed from the op table and its
// type inferred (an error names the node); the name is used as given. For passes that assemble
// graphs node by node outside a Builder.
ValueId append_op(Graph& g, Op op, std::vector<ValueId> inputs, NamedAttrs attrs, std::string name);

class Builder {
 public:
  explicit Builder(std::string graph_name = "main") : graph_(std::move(graph_name)) {}

  // Names given while a scope is open are prefixed by it ("h0." + "attn." + "q").
  void push_scope(std::string prefix);
  void pop_scope();
  // Gives a value a readable name (prefixed by the open scopes); names must be unique.
  Value name(Value v, const std::string& name);

  Value input(const std::string& name, DType dtype, Shape shape);
  Value param(const std::string& name, DType dtype, Shape shape);
  Value constant(Tensor value);
  Value scalar(float value, DType dtype = DType::f32);  // a rank-0 constant

  Value matmul(Value x, Value y, bool transpose_x = false, bool transpose_y = false);
  // 2-D convolution (no bias): x [N, Cin, H, W], weight [Cout, Cin/groups, kh, kw]; pads are
  // [top, bottom, left, right].
  Value conv(Value x, Value weight, std::vector<std::int64_t> strides = {1, 1},
             std::vector<std::int64_t> pads = {0, 0, 0, 0},
             std::vector<std::int64_t> dilations = {1, 1}, std::int64_t groups = 1);
  Value add(Value x, Value y) { return op(Op::add, {x, y}); }
  Value sub(Value x, Value y) { return op(Op::sub, {x, y}); }
  Value mul(Value x, Value y) { return op(Op::mul, {x, y}); }
  Value div(Value x, Value y) { return op(Op::div, {x, y}); }
  Value pow(Value x, Value y) { return op(Op::pow, {x, y}); }
  Value neg(Value x) { return op(Op::neg, {x}); }
  Value exp(Value x) { return op(Op::exp, {x}); }
  Value log(Value x) { return op(Op::log, {x}); }
  Value sqrt(Value x) { return op(Op::sqrt, {x}); }
  Value rsqrt(Value x) { return op(Op::rsqrt, {x}); }
  Value tanh(Value x) { return op(Op::tanh, {x}); }
  Value sigmoid(Value x) { return op(Op::sigmoid, {x}); }
  Value relu(Value x) { return op(Op::relu, {x}); }
  Value gelu(Value x) { return op(Op::gelu, {x}); }
  Value silu(Value x) { return op(Op::silu, {x}); }
  Value softmax(Value x, std::int64_t axis = -1);
  Value layer_norm(Value x, Value gamma, Value beta, double epsilon = 1e-5);
  Value rms_norm(Value x, Value weight, double epsilon = 1e-6);
  Value reduce_sum(Value x, std::vector<std::int64_t> axes, bool keep_dims = false);
  Value reduce_mean(Value x, std::vector<std::int64_t> axes, bool keep_dims = false);
  Value reduce_max(Value x, std::vector<std::int64_t> axes, bool keep_dims = false);
  Value reshape(Value x, std::vector<std::int64_t> shape);
  Value transpose(Value x, std::vector<std::int64_t> perm);
  Value slice(Value x, std::vector<std::int64_t> begin, std::vector<std::int64_t> end);
  Value concat(const std::vector<Value>& xs, std::int64_t axis);
  Value gather(Value table, Value indices, std::int64_t axis = 0);
  // gather's adjoint: a tensor with `size` rows along `axis`, updates added at their indices.
  Value scatter_add(Value updates, Value indices, std::int64_t size, std::int64_t axis = 0);
  Value broadcast_to(Value x, std::vector<std::int64_t> shape);
  Value cast(Value x, DType dtype);
  Value clamp(Value x, double min, double max);
  Value where(Value cond, Value a, Value b) { return op(Op::where, {cond, a, b}); }
  // Per-row loss of logits [..., V] against i32 targets [...], and its gradient.
  Value softmax_cross_entropy(Value logits, Value targets) {
    return op(Op::softmax_cross_entropy, {logits, targets});
  }
  Value softmax_cross_entropy_grad(Value logits, Value targets, Value dloss) {
    return op(Op::softmax_cross_entropy_grad, {logits, targets, dloss});
  }

  // Any op of the table, with attributes by name (defaults fill the rest).
  Value op(Op op, const std::vector<Value>& inputs, NamedAttrs attrs = {});

  const TensorType& type(Value v) const { return graph_.node(v.id).type; }
  const Shape& shape(Value v) const { return type(v).shape; }
  void output(Value v) { graph_.outputs().push_back(v.id); }

  // The finished graph, verified. The builder is empty afterwards.
  Graph finish();

 private:
  Value add_source(Op op, const std::string& name, TensorType type, NamedAttrs attrs);
  std::string scoped(const std::string& name) const;
  std::string fresh_name(std::string_view base);

  Graph graph_;
  std::vector<std::string> scopes_;
  int counter_ = 0;
};

}  // namespace orion::ir
