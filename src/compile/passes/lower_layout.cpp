#include "compile/passes/lower_layout.h"

#include <map>

#include "compile/mil/mil_writer.h"
#include "ir/transforms/rewriter.h"
#include "core/error.h"
#include "ir/type_rules.h"
#include "ir/verifier.h"

namespace orion::compile {

namespace {

using ir::Node;
using ir::Op;
using ir::ValueId;

enum class Layout : std::uint8_t { plain, tokens, head_split, heads };

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::plain: return "plain";
    case Layout::tokens: return "token-major";
    case Layout::head_split: return "head-split";
    case Layout::heads: return "per-head";
  }
  return "?";
}

// The lowered axis of IR axis `axis` (normalized) of a value of `layout`.
int lowered_axis(Layout layout, int axis) {
  switch (layout) {
    case Layout::tokens: return axis == 0 ? 3 : 1;                       // [S, X] -> [1, X, 1, S]
    case Layout::head_split: return axis == 0 ? 3 : axis;                // [S, H, D] -> [1, H, D, S]
    case Layout::heads: return axis + 1;                                 // [H, R, K] -> [1, H, R, K]
    case Layout::plain: break;
  }
  return axis;
}

int ir_rank(Layout layout) { return layout == Layout::tokens ? 2 : 3; }

// A constant's data in `layout`, from its IR shape (right-aligned against the layout's IR rank,
// as broadcasting aligns it).
Tensor convert_const(const Tensor& t, Layout layout) {
  if (t.rank() == 0) return t;
  const int rank = ir_rank(layout);
  Shape s = t.shape();
  while (static_cast<int>(s.size()) < rank) s.insert(s.begin(), 1);
  const Tensor r = t.contiguous().reshape(s);
  switch (layout) {
    case Layout::tokens: {
      const int perm[] = {1, 0};
      return r.permute(perm).contiguous().reshape({1, s[1], 1, s[0]});
    }
    case Layout::head_split: {
      const int perm[] = {1, 2, 0};
      return r.permute(perm).contiguous().reshape({1, s[1], s[2], s[0]});
    }
    case Layout::heads: return r.reshape({1, s[0], s[1], s[2]});
    case Layout::plain: break;
  }
  return t;
}

class Lowering {
 public:
  Lowering(const ir::Graph& g, WeightInputs* weights)
      : g_(g), rw_(g), layout_(static_cast<std::size_t>(g.size()), Layout::plain), runtime_(layout_.size(), false),
        weights_(weights) {}

  ir::Graph run(LowerLayoutCounts& counts) {
    for (ValueId id = 0; id < g_.size(); ++id) {
      const Node& n = g_.node(id);
      if (n.op == Op::input) {
        lower_input(id);
        ++counts.lowered;
        continue;
      }
      if (n.op == Op::param) {
        lower_weight(id);
        ++counts.lowered;
        continue;
      }
      Layout l = Layout::plain;
      for (ValueId in : n.inputs)
        if (layout(in) != Layout::plain) l = layout(in);
      if (l == Layout::plain) {
        if (n.op == Op::slice && runtime(n.inputs[0]) && g_.node(n.inputs[0]).op == Op::param) {
          lower_weight_chunk(id);
          ++counts.lowered;
          continue;
        }
        for (ValueId in : n.inputs)
          if (runtime(in)) unsupported(n, "computes on the runtime weight " + ir::describe(g_.node(in)) + " alone");
        rw_.copy(id);
        continue;
      }
      lower(id, l, counts);
      ++counts.lowered;
    }
    for (ValueId out : g_.outputs())
      if (layout(out) != Layout::tokens)
        throw Error("lower_layout: output " + ir::describe(g_.node(out)) + " is " + layout_name(layout(out)) +
                    ", not a token-major [S, X] value");
    return rw_.finish();
  }

 private:
  Layout layout(ValueId old) const { return layout_[static_cast<std::size_t>(old)]; }

  [[noreturn]] void unsupported(const Node& n, const std::string& why) const {
    throw Error("lower_layout: " + ir::describe(n) + ": " + why);
  }

  void lower_input(ValueId id) {
    const Node& n = g_.node(id);
    if (n.type.rank() != 2 || !is_float(n.type.dtype))
      unsupported(n, "kernel inputs must be float [S, X] token-major values, not " + n.type.str());
    Node c = n;
    c.type.shape = {1, n.type.shape[1], 1, n.type.shape[0]};
    const ValueId now = rw_.add(std::move(c));
    rw_.take_over(id, now);
    layout_[static_cast<std::size_t>(id)] = Layout::tokens;
  }

  bool runtime(ValueId old) const { return runtime_[static_cast<std::size_t>(old)]; }

  // A param as a runtime weight: a fixed-length input [1, A, 1, B_pad] (kernel_io.h), its
  // columns past B (zeros, written by the host) sliced off on entry. Made when first read, so
  // that a param read only in chunks (lower_weight_chunk) is no input of its own.
  void lower_weight(ValueId id) {
    const Node& n = g_.node(id);
    const Shape& s = n.type.shape;
    if ((s.size() != 1 && s.size() != 2) || !is_float(n.type.dtype))
      unsupported(n, "runtime weights are float [N] or [A, B] params, not " + n.type.str());
    runtime_[static_cast<std::size_t>(id)] = true;
  }

  // A chunk of a runtime weight (chunk_matmuls cut it for the on-chip budget): an input of its
  // own that carries that part of the param, so that the host writes only it.
  void lower_weight_chunk(ValueId id) {
    const Node& n = g_.node(id);
    const Node& p = g_.node(n.inputs[0]);
    const auto& begin = n.attr_ints("begin");
    const auto& end = n.attr_ints("end");
    int axis = -1;
    for (std::size_t a = 0; a < begin.size(); ++a)
      if (begin[a] != 0 || end[a] != p.type.shape[a]) {
        if (axis >= 0 || p.type.rank() != 2) unsupported(n, "slices the runtime weight " + ir::describe(p) + " on more than one axis");
        axis = static_cast<int>(a);
      }
    if (axis < 0) {  // the whole param after all
      rw_.set_map(id, weight_input(n.inputs[0]));
      runtime_[static_cast<std::size_t>(id)] = true;
      return;
    }
    const auto a = static_cast<std::size_t>(axis);
    emit_weight_input(id, {p.name, axis, begin[a], end[a]},
                      p.name + "_" + std::to_string(axis) + "_" + std::to_string(begin[a]) + "_" + std::to_string(end[a]));
  }

  // The kernel input of runtime weight `old` (a param), made on its first read.
  ValueId weight_input(ValueId old) {
    if (!rw_.mapped(old)) emit_weight_input(old, {g_.node(old).name}, g_.node(old).name);
    return rw_.map(old);
  }

  void emit_weight_input(ValueId old, WeightInput carried, const std::string& name) {
    const Node& n = g_.node(old);
    const Shape& s = n.type.shape;
    const std::int64_t A = s.size() == 2 ? s[0] : 1, B = s.back(), padded = (B + 31) / 32 * 32;
    Node in = n;
    in.op = Op::input;
    in.inputs.clear();
    in.attrs = ir::make_attrs(Op::input, {});
    in.name = "w_" + mil_identifier(name);
    in.type.shape = {1, A, 1, padded};
    ValueId now = rw_.add(std::move(in));
    if (weights_) (*weights_)[rw_.node(now).name] = std::move(carried);
    if (padded != B)
      now = rw_.op(Op::slice, {now}, {{"begin", std::vector<std::int64_t>(4, 0)}, {"end", std::vector<std::int64_t>{1, A, 1, B}}},
                   rw_.node(now).name + ".cols");
    rw_.set_map(old, now);
    runtime_[static_cast<std::size_t>(old)] = true;
  }

  // `old` (a plain value) in `l`: constants converted once per layout.
  ValueId operand(ValueId old, Layout l, const Node& reader) {
    if (layout(old) == l) return rw_.map(old);
    if (layout(old) != Layout::plain)
      unsupported(reader, "mixes a " + std::string(layout_name(layout(old))) + " and a " + layout_name(l) + " operand");
    const Node& c = g_.node(old);
    if (runtime(old)) {
      // A vector broadcasts along the last IR axis: the channels of a token-major value
      // ([1, N, 1, 1]), a head's columns of a head-split one ([1, 1, N, 1], Qwen3's q/k norms).
      if ((l != Layout::tokens && l != Layout::head_split) || c.type.rank() != 1)
        unsupported(reader, "reads the runtime weight " + ir::describe(c) + " as a " + layout_name(l) +
                                " operand: only vectors on token-major and head-split values are lowered");
      const std::int64_t N = c.type.shape[0];
      auto [it, fresh] = converted_.try_emplace({old, l}, -1);
      if (fresh)
        it->second = rw_.op(Op::reshape, {weight_input(old)},
                            {{"shape", l == Layout::tokens ? std::vector<std::int64_t>{1, N, 1, 1}
                                                           : std::vector<std::int64_t>{1, 1, N, 1}}},
                            rw_.node(weight_input(old)).name + (l == Layout::tokens ? ".ane" : ".ane_heads"));
      return it->second;
    }
    if (c.op != Op::constant)
      unsupported(reader, "reads " + ir::describe(c) + ", which is neither lowered nor a const");
    if (c.type.rank() == 0) return rw_.map(old);
    if (c.type.rank() > ir_rank(l)) unsupported(reader, "const " + ir::describe(c) + " has too many axes to broadcast");
    auto [it, fresh] = converted_.try_emplace({old, l}, -1);
    if (fresh) it->second = rw_.constant(convert_const(c.attr<Tensor>("value"), l), c.name + ".ane");
    return it->second;
  }

  // A token-major [T, K] value read by a per-head op on [H, T, K]: an additive attention mask
  // given at run time (a decode step's, over its KV cache; the host writes it token-major).
  // Moved to the per-head layout as the head split moves q, with one head:
  // [1, K, 1, T] -> reshape [1, 1, K, T] -> transpose [1, 1, T, K], broadcast over the heads.
  ValueId as_heads(ValueId old, const Node& reader) {
    const Node& v = g_.node(old);
    if (v.type.rank() != 2) unsupported(reader, "reads the token-major " + ir::describe(v) + " as per-head values");
    auto [it, fresh] = as_heads_.try_emplace(old, -1);
    if (fresh) {
      const Shape& s = rw_.node(rw_.map(old)).type.shape;
      const ValueId split = rw_.op(Op::reshape, {rw_.map(old)}, {{"shape", std::vector<std::int64_t>{1, 1, s[1], s[3]}}},
                                   v.name + ".head");
      it->second = rw_.op(Op::transpose, {split}, {{"perm", std::vector<std::int64_t>{0, 1, 3, 2}}}, v.name + ".heads");
    }
    return it->second;
  }

  // A node like `n` on new inputs with new attributes, its type inferred; it takes n's name.
  ValueId emit(ValueId old, Op op, std::vector<ValueId> inputs, ir::NamedAttrs attrs, Layout l) {
    const Node& n = g_.node(old);
    const ValueId now = rw_.op(op, std::move(inputs), std::move(attrs), n.name + ".lowered");
    rw_.take_over(old, now);
    layout_[static_cast<std::size_t>(old)] = l;
    return now;
  }

  void lower(ValueId id, Layout l, LowerLayoutCounts& counts) {
    const Node& n = g_.node(id);
    switch (n.info().cls) {
      case ir::OpClass::binary: {
        Layout common = Layout::plain;
        bool tokens_as_heads = false;
        for (ValueId in : n.inputs)
          if (layout(in) != Layout::plain) {
            const Layout li = layout(in);
            if (common != Layout::plain && li != common) {
              if ((li == Layout::tokens && common == Layout::heads) || (li == Layout::heads && common == Layout::tokens)) {
                tokens_as_heads = true;
                common = Layout::heads;
                continue;
              }
              unsupported(n, "mixes " + std::string(layout_name(common)) + " and " + layout_name(li) + " operands");
            }
            common = li;
          }
        auto arg = [&](ValueId in) {
          return tokens_as_heads && layout(in) == Layout::tokens ? as_heads(in, n) : operand(in, common, n);
        };
        emit(id, n.op, {arg(n.inputs[0]), arg(n.inputs[1])}, {}, common);
        return;
      }
      case ir::OpClass::unary:
        emit(id, n.op, {rw_.map(n.inputs[0])}, ir::named_attrs(n), l);
        return;
      default: break;
    }
    switch (n.op) {
      case Op::clamp:
      case Op::cast: emit(id, n.op, {rw_.map(n.inputs[0])}, ir::named_attrs(n), l); return;
      case Op::matmul: return lower_matmul(id, counts);
      case Op::reduce_sum:
      case Op::reduce_mean:
      case Op::reduce_max: {
        if (!n.attr_bool("keep_dims")) unsupported(n, "reductions without keep_dims are not lowered");
        std::vector<std::int64_t> axes;
        for (std::int64_t a : n.attr_ints("axes")) axes.push_back(lowered_axis(l, ir::normalize_axis(a, ir_rank(l))));
        ir::NamedAttrs attrs = ir::named_attrs(n);
        ir::set_attr(attrs, "axes", axes);
        emit(id, n.op, {rw_.map(n.inputs[0])}, std::move(attrs), l);
        return;
      }
      case Op::softmax: {
        ir::NamedAttrs attrs = ir::named_attrs(n);
        ir::set_attr(attrs, "axis", std::int64_t{lowered_axis(l, ir::normalize_axis(n.attr_int("axis"), ir_rank(l)))});
        emit(id, n.op, {rw_.map(n.inputs[0])}, std::move(attrs), l);
        return;
      }
      case Op::slice: return lower_slice(id, l);
      case Op::reshape: return lower_reshape(id, l);
      case Op::transpose: return lower_transpose(id, l);
      default: unsupported(n, "reads a " + std::string(layout_name(l)) + " value and has no lowering");
    }
  }

  void lower_matmul(ValueId id, LowerLayoutCounts& counts) {
    const Node& n = g_.node(id);
    const Layout lx = layout(n.inputs[0]), ly = layout(n.inputs[1]);
    if (lx == Layout::heads && ly == Layout::heads) {
      // y made per-head by the head transpose ([1, H, D, S] -> [1, H, S, D]): the matmul reads
      // the head split instead with its transpose_y flag flipped, so that keys and values (a
      // decode step's cache of thousands of positions) are never copied transposed.
      ValueId y = rw_.map(n.inputs[1]);
      ir::NamedAttrs attrs = ir::named_attrs(n);
      const Node& t = g_.node(n.inputs[1]);
      if (t.op == Op::transpose && layout(t.inputs[0]) == Layout::head_split) {
        y = rw_.map(t.inputs[0]);
        ir::set_attr(attrs, "transpose_y", !n.attr_bool("transpose_y"));
      }
      emit(id, Op::matmul, {rw_.map(n.inputs[0]), y}, std::move(attrs), Layout::heads);
      return;
    }
    const Node& w = g_.node(n.inputs[1]);
    if (lx == Layout::tokens && runtime(n.inputs[1]) && w.type.rank() == 2 && !n.attr_bool("transpose_x")) {
      // y^T [N, S] = op(W)^T x^T: W [A, B] as [1, 1, A, B], transposed by the flag unless the
      // IR already reads it transposed.
      const Shape xs = rw_.node(rw_.map(n.inputs[0])).type.shape;  // a copy: rw_.op may move the nodes
      const ValueId wm = rw_.op(Op::reshape, {weight_input(n.inputs[1])},
                                {{"shape", std::vector<std::int64_t>{1, 1, w.type.shape[0], w.type.shape[1]}}}, n.name + ".w");
      const ValueId xm = rw_.op(Op::reshape, {rw_.map(n.inputs[0])},
                                {{"shape", std::vector<std::int64_t>{1, 1, xs[1], xs[3]}}}, n.name + ".x");
      const ValueId y = rw_.op(Op::matmul, {wm, xm},
                               {{"transpose_x", !n.attr_bool("transpose_y")}, {"transpose_y", false}}, n.name + ".yt");
      const Shape ys = rw_.node(y).type.shape;
      emit(id, Op::reshape, {y}, {{"shape", std::vector<std::int64_t>{1, ys[2], 1, ys[3]}}}, Layout::tokens);
      ++counts.weight_matmuls;
      return;
    }
    if (lx != Layout::tokens || ly != Layout::plain || w.op != Op::constant || w.type.rank() != 2 ||
        n.attr_bool("transpose_x"))
      unsupported(n, "only x [S, C] @ const [C, N] (a linear layer) and per-head matmuls are lowered; "
                     "runtime weights are not yet");
    Tensor wt = w.attr<Tensor>("value").contiguous();
    if (!n.attr_bool("transpose_y")) {  // [C, N] -> [N, C]
      const int perm[] = {1, 0};
      wt = wt.permute(perm).contiguous();
    }
    const Shape& s = wt.shape();
    const ValueId weight = rw_.constant(wt.reshape({s[0], s[1], 1, 1}), w.name + ".conv");
    emit(id, Op::conv, {rw_.map(n.inputs[0]), weight}, pointwise_conv_attrs(), Layout::tokens);
    ++counts.convs;
  }

  void lower_slice(ValueId id, Layout l) {
    const Node& n = g_.node(id);
    const ir::TensorType& lowered = rw_.node(rw_.map(n.inputs[0])).type;
    std::vector<std::int64_t> begin(4, 0), end(lowered.shape.begin(), lowered.shape.end());
    const auto& b = n.attr_ints("begin");
    const auto& e = n.attr_ints("end");
    for (int i = 0; i < ir_rank(l); ++i) {
      const auto m = static_cast<std::size_t>(lowered_axis(l, i));
      begin[m] = b[static_cast<std::size_t>(i)];
      end[m] = e[static_cast<std::size_t>(i)];
    }
    emit(id, Op::slice, {rw_.map(n.inputs[0])}, {{"begin", begin}, {"end", end}}, l);
  }

  void lower_reshape(ValueId id, Layout l) {
    const Node& n = g_.node(id);
    const Shape& from = g_.node(n.inputs[0]).type.shape;
    const Shape& to = n.type.shape;
    if (l == Layout::tokens && to.size() == 3 && to[0] == from[0] && to[1] * to[2] == from[1]) {
      emit(id, Op::reshape, {rw_.map(n.inputs[0])}, {{"shape", std::vector<std::int64_t>{1, to[1], to[2], to[0]}}},
           Layout::head_split);
      return;
    }
    if (l == Layout::head_split && to.size() == 2 && to[0] == from[0] && to[1] == from[1] * from[2]) {
      emit(id, Op::reshape, {rw_.map(n.inputs[0])}, {{"shape", std::vector<std::int64_t>{1, to[1], 1, to[0]}}},
           Layout::tokens);
      return;
    }
    unsupported(n, "only the head split [S, C] <-> [S, H, D] is lowered among reshapes");
  }

  void lower_transpose(ValueId id, Layout l) {
    const Node& n = g_.node(id);
    const std::vector<std::int64_t> swap01{1, 0, 2};
    if ((l == Layout::head_split || l == Layout::heads) && n.attr_ints("perm") == swap01) {
      emit(id, Op::transpose, {rw_.map(n.inputs[0])}, {{"perm", std::vector<std::int64_t>{0, 1, 3, 2}}},
           l == Layout::head_split ? Layout::heads : Layout::head_split);
      return;
    }
    unsupported(n, "only the head transposes [S, H, D] <-> [H, S, D] are lowered");
  }

  const ir::Graph& g_;
  ir::GraphRewriter rw_;
  std::vector<Layout> layout_;  // by old value
  std::map<std::pair<ValueId, Layout>, ValueId> converted_;
  std::map<ValueId, ValueId> as_heads_;  // by old token-major value
  std::vector<bool> runtime_;            // by old value: a runtime weight's param
  WeightInputs* weights_;
};

}  // namespace

LowerLayoutCounts lower_layout(ir::Graph& graph, WeightInputs* weights) {
  LowerLayoutCounts counts;
  ir::Graph lowered = Lowering(graph, weights).run(counts);
  if (counts.lowered) graph = std::move(lowered);
  return counts;
}

ir::NamedAttrs pointwise_conv_attrs() {
  return {{"strides", std::vector<std::int64_t>{1, 1}},
          {"pads", std::vector<std::int64_t>{0, 0, 0, 0}},
          {"dilations", std::vector<std::int64_t>{1, 1}},
          {"groups", std::int64_t{1}}};
}

bool kernel_op(ir::Op op) {
  switch (ir::op_info(op).cls) {
    case ir::OpClass::binary:
    case ir::OpClass::unary:
    case ir::OpClass::normalize:  // softmax; layer_norm and rms_norm once legalized
    case ir::OpClass::reduce: return true;
    default: break;
  }
  switch (op) {
    case Op::clamp:
    case Op::cast:
    case Op::matmul:
    case Op::slice:
    case Op::reshape:
    case Op::transpose: return true;
    default: return false;
  }
}

std::unique_ptr<ir::Pass> lower_layout_pass(WeightInputs* weights) {
  return ir::make_pass("lower_layout", [weights](ir::Graph& g, ir::PassContext& c) {
    const LowerLayoutCounts k = lower_layout(g, weights);
    if (k.lowered == 0) return false;
    c.note("lowered " + std::to_string(k.lowered) + " nodes to [1, C, 1, S], " + std::to_string(k.convs) +
           " linear layers as 1x1 conv, " + std::to_string(k.weight_matmuls) + " on runtime weights as matmul");
    return true;
  });
}

}  // namespace orion::compile
