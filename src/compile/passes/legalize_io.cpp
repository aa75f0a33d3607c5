#include "compile/passes/legalize_io.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "compile/passes/lower_layout.h"
#include "ir/transforms/rewriter.h"
#include "core/error.h"
#include "ir/type_rules.h"
#include "ir/verifier.h"

namespace orion::compile {

namespace {

using ir::Node;
using ir::Op;
using ir::ValueId;

constexpr std::int64_t kFp16Bytes = 2;

bool is_surface(const ir::TensorType& t) {
  return t.rank() == 4 && t.shape[0] == 1 && t.shape[2] == 1;
}

// The causal mask [..., S, S] grown to [..., P, P] as legalize_io.h describes.
Tensor extend_mask(const Tensor& mask, std::int64_t P) {
  const Shape& s = mask.shape();
  const std::int64_t S = s.back();
  const float masked = mask.dtype() == DType::f32 ? -std::numeric_limits<float>::infinity() : -65504.0f;
  const std::vector<float> v = mask.to_floats();
  std::int64_t outer = 1;
  for (std::size_t i = 0; i + 2 < s.size(); ++i) outer *= s[i];
  std::vector<float> out(static_cast<std::size_t>(outer * P * P));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < P; ++i)
      for (std::int64_t j = 0; j < P; ++j) {
        float x;
        if (i < S && j < S) x = v[static_cast<std::size_t>((o * S + i) * S + j)];
        else if (i < S) x = masked;       // a real query never sees a padded key
        else x = j <= i ? 0.0f : masked;  // a padded query: causal, never an all-masked row
        out[static_cast<std::size_t>((o * P + i) * P + j)] = x;
      }
  Shape shape = s;
  shape[shape.size() - 1] = shape[shape.size() - 2] = P;
  return Tensor::from_floats(shape, out).to(mask.dtype());
}

class Padding {
 public:
  // Inputs named in `fixed` keep their S.
  Padding(const ir::Graph& g, std::int64_t P, const std::set<std::string, std::less<>>& fixed)
      : g_(g), rw_(g), P_(P), fixed_(fixed), masked_(static_cast<std::size_t>(g.size())), zero_past_(masked_.size()) {}

  ir::Graph run() {
    for (ValueId id = 0; id < g_.size(); ++id) {
      const Node& n = g_.node(id);
      if (n.op == Op::input && !fixed_.contains(n.name)) {
        Node c = n;
        c.type.shape[3] = P_;
        rw_.take_over(id, rw_.add(std::move(c)));
        continue;
      }
      std::vector<ValueId> ins;
      bool grew = false;
      for (ValueId in : n.inputs) {
        ins.push_back(rw_.map(in));
        grew = grew || rw_.node(ins.back()).type != g_.node(in).type;
      }
      if (!grew) {
        rw_.copy(id);
        continue;
      }
      pad(id, std::move(ins));
    }
    return rw_.finish();
  }

 private:
  [[noreturn]] void refuse(const Node& n, const std::string& why) const {
    throw Error("legalize_io: " + ir::describe(n) + ": " + why);
  }
  const Shape& old_shape(ValueId old) const { return g_.node(old).type.shape; }
  const Shape& new_shape(ValueId now) const { return rw_.node(now).type.shape; }
  bool axis_grew(const Node& n, std::size_t input, std::size_t axis, const std::vector<ValueId>& ins) const {
    return old_shape(n.inputs[input])[axis] != new_shape(ins[input])[axis];
  }

  void pad(ValueId id, std::vector<ValueId> ins) {
    const Node& n = g_.node(id);
    ir::NamedAttrs attrs = ir::named_attrs(n);
    const auto rank = static_cast<std::size_t>(g_.node(n.inputs[0]).type.rank());
    switch (n.op) {
      case Op::reshape: {
        std::vector<std::int64_t> shape = n.attr_ints("shape");
        if (!axis_grew(n, 0, rank - 1, ins) || shape.empty() || shape.back() != old_shape(n.inputs[0]).back())
          refuse(n, "a reshape that does not keep the sequence on the last axis");
        shape.back() = P_;
        ir::set_attr(attrs, "shape", shape);
        break;
      }
      case Op::slice: {
        std::vector<std::int64_t> begin = n.attr_ints("begin"), end = n.attr_ints("end");
        for (std::size_t a = 0; a < rank; ++a)
          if (axis_grew(n, 0, a, ins)) {
            if (begin[a] != 0 || end[a] != old_shape(n.inputs[0])[a]) refuse(n, "a slice of the sequence axis");
            end[a] = new_shape(ins[0])[a];
          }
        ir::set_attr(attrs, "end", end);
        break;
      }
      case Op::reduce_sum:
      case Op::reduce_mean:
      case Op::reduce_max: {
        // Over padded keys, only what the extended mask makes neutral: the max of masked
        // scores (the padded keys' are the mask value), the sum of their exponentials (0).
        const auto in = static_cast<std::size_t>(n.inputs[0]);
        const bool neutral = (n.op == Op::reduce_max && masked_[in]) || (n.op == Op::reduce_sum && zero_past_[in]);
        for (std::int64_t a : n.attr_ints("axes"))
          if (axis_grew(n, 0, static_cast<std::size_t>(ir::normalize_axis(a, static_cast<int>(rank))), ins) && !neutral)
            refuse(n, "a reduction over the padded sequence would mix padded tokens into real ones");
        break;
      }
      case Op::sub:
        // Masked scores less a row's own value (a max, one column) stay masked on padded keys.
        pad_binary_operands(id, ins);
        masked_[static_cast<std::size_t>(id)] =
            masked_[static_cast<std::size_t>(n.inputs[0])] && old_shape(n.inputs[1]).back() == 1;
        break;
      case Op::exp:
        // exp of masked scores: exactly 0 on the padded keys, as a softmax of them.
        zero_past_[static_cast<std::size_t>(id)] = masked_[static_cast<std::size_t>(n.inputs[0])];
        break;
      case Op::softmax: {
        const auto a = static_cast<std::size_t>(ir::normalize_axis(n.attr_int("axis"), static_cast<int>(rank)));
        if (axis_grew(n, 0, a, ins)) {
          if (!masked_[static_cast<std::size_t>(n.inputs[0])])
            refuse(n, "a softmax over the padded sequence that no extended causal mask hides");
          zero_past_[static_cast<std::size_t>(id)] = true;
        }
        break;
      }
      case Op::matmul: {
        const std::size_t inner = n.attr_bool("transpose_x") ? rank - 2 : rank - 1;
        if (axis_grew(n, 0, inner, ins) && !zero_past_[static_cast<std::size_t>(n.inputs[0])])
          refuse(n, "contracts over the padded sequence with weights that are not zero there");
        break;
      }
      default:
        if (n.info().cls == ir::OpClass::binary) pad_binary_operands(id, ins);
        break;
    }
    ValueId now = -1;
    try {
      now = rw_.op(n.op, std::move(ins), std::move(attrs), n.name + ".padded");
    } catch (const Error& e) {
      refuse(n, std::string("cannot be padded: ") + e.what());
    }
    rw_.take_over(id, now);
  }

  // A const operand that no longer broadcasts against the other, grown: only the causal mask.
  void pad_binary_operands(ValueId id, std::vector<ValueId>& ins) {
    const Node& n = g_.node(id);
    for (std::size_t k = 0; k < 2; ++k) {
      const Node& c = g_.node(n.inputs[k]);
      if (c.op != Op::constant) continue;
      const Shape& other_old = old_shape(n.inputs[1 - k]);
      const Shape& other_new = new_shape(ins[1 - k]);
      const Shape& cs = c.type.shape;
      std::vector<std::size_t> padded;  // const axes that must grow
      for (std::size_t a = 0; a < cs.size() && a < other_old.size(); ++a) {
        const std::size_t ca = cs.size() - 1 - a, oa = other_old.size() - 1 - a;
        if (cs[ca] != 1 && other_old[oa] != other_new[oa]) padded.push_back(ca);
      }
      if (padded.empty()) continue;
      const bool mask_axes = padded.size() == 2 && cs.size() >= 2 && padded[0] == cs.size() - 1 &&
                             padded[1] == cs.size() - 2 && cs[cs.size() - 1] == cs[cs.size() - 2];
      if (!mask_axes || n.op != Op::add)
        refuse(n, "const " + ir::describe(c) + " spans the padded sequence and is not an additive [.., S, S] mask");
      auto [it, fresh] = masks_.try_emplace(n.inputs[k], -1);
      if (fresh) it->second = rw_.constant(extend_mask(c.attr<Tensor>("value"), P_), c.name + ".padded");
      ins[k] = it->second;
      masked_[static_cast<std::size_t>(id)] = true;
    }
  }

  const ir::Graph& g_;
  ir::GraphRewriter rw_;
  std::int64_t P_;
  const std::set<std::string, std::less<>>& fixed_;
  std::vector<bool> masked_;     // by old value: an add of an extended mask
  std::vector<bool> zero_past_;  // by old value: a softmax of such an add (0 on padded keys)
  std::map<ValueId, ValueId> masks_;
};

KernelIoTensor io_tensor(const Node& n, std::int64_t P, std::int64_t min_channels, bool fixed = false) {
  KernelIoTensor t{n.name, n.type.shape, n.type.shape, 0, fixed, {}};
  t.padded[3] = P;
  t.padded[1] = std::max(t.padded[1], min_channels);
  t.bytes = shape_numel(t.padded) * kFp16Bytes;
  return t;
}

}  // namespace

std::int64_t padded_sequence(std::int64_t seq, std::int64_t min_channels, const LegalizeIoOptions& o) {
  if (seq <= 0 || min_channels <= 0 || o.seq_multiple <= 0) throw Error("legalize_io: empty surfaces");
  const std::int64_t per_column = min_channels * kFp16Bytes;
  const std::int64_t need = std::max(seq, (o.min_surface_bytes + per_column - 1) / per_column);
  return (need + o.seq_multiple - 1) / o.seq_multiple * o.seq_multiple;
}

// Inputs and outputs widened to the channels `targets` gives them (LegalizeIoOptions::pad_channels,
// fixed-length inputs): a wider input sliced back on entry, an output embedded by a 1x1 conv.
ir::Graph pad_channels(const ir::Graph& g, const std::map<std::string, std::int64_t, std::less<>>& targets) {
  const auto channels_of = [&](const Node& n) {
    auto it = targets.find(n.name);
    return it == targets.end() ? n.type.shape[1] : it->second;
  };
  ir::GraphRewriter rw(g);
  for (ValueId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    // Only inputs are widened; other nodes (constants, scalars) may have no channel axis.
    if (n.op != Op::input || n.type.shape[1] >= channels_of(n)) {
      rw.copy(id);
      continue;
    }
    const std::int64_t channels = channels_of(n);
    Node wide = n;
    wide.type.shape[1] = channels;
    const ValueId in = rw.add(std::move(wide));
    rw.take_over(id, in);
    std::vector<std::int64_t> begin(4, 0), end(n.type.shape.begin(), n.type.shape.end());
    rw.set_map(id, rw.op(Op::slice, {in}, {{"begin", begin}, {"end", end}}, n.name + ".channels"));
  }
  ir::Graph out = rw.finish();
  for (ValueId& o : out.outputs()) {
    const Node& n = out.node(o);
    const std::int64_t c = n.type.shape[1], channels = channels_of(n);
    if (c >= channels) continue;
    const std::string name = n.name;
    std::string inner = name + ".narrow";
    for (int i = 1; out.find(inner); ++i) inner = name + ".narrow_" + std::to_string(i);
    out.node(o).name = inner;
    std::vector<float> embed(static_cast<std::size_t>(channels * c), 0.0f);
    for (std::int64_t i = 0; i < c; ++i) embed[static_cast<std::size_t>(i * c + i)] = 1.0f;
    Node w;
    w.op = Op::constant;
    w.name = inner + ".embed";
    w.type = {n.type.dtype, {channels, c, 1, 1}};
    w.attrs = ir::make_attrs(Op::constant, {{"value", Tensor::from_floats({channels, c, 1, 1}, embed).to(n.type.dtype)}});
    const ValueId wid = out.add(std::move(w));
    o = ir::append_op(out, Op::conv, {o, wid}, pointwise_conv_attrs(), name);
  }
  return out;
}

KernelIo legalize_io(ir::Graph& graph, const LegalizeIoOptions& options) {
  std::vector<ValueId> ins = graph.nodes_of(Op::input), outs = graph.outputs();
  if (ins.empty() || outs.empty()) throw Error("legalize_io: a kernel needs inputs and outputs");
  KernelIo io;
  const auto weight_of = [&](const Node& n) -> const WeightInput* {
    if (!options.weights || n.op != Op::input) return nullptr;
    auto it = options.weights->find(n.name);
    return it == options.weights->end() ? nullptr : &it->second;
  };
  // The tokens: the first activation input's S (a kernel of weights alone: its first output's).
  const Node* first = &graph.node(outs.front());
  for (ValueId id : ins)
    if (!weight_of(graph.node(id))) {
      first = &graph.node(id);
      break;
    }
  io.seq = options.seq > 0 ? options.seq : first->type.shape.size() == 4 ? first->type.shape[3] : 0;
  std::int64_t min_channels = std::numeric_limits<std::int64_t>::max();
  std::set<std::string, std::less<>> fixed;
  for (const auto* list : {&ins, &outs})
    for (ValueId id : *list) {
      const Node& n = graph.node(id);
      if (list == &ins && weight_of(n)) {
        if (!is_surface(n.type) || n.type.shape[3] % options.seq_multiple != 0)
          throw Error("legalize_io: runtime weight " + ir::describe(n) + " of type " + n.type.str() +
                      " is not a [1, A, 1, B_pad] surface (run lower_layout first)");
        fixed.insert(n.name);
        continue;
      }
      if (is_surface(n.type) && n.type.shape[3] != io.seq && options.seq > 0 && list == &ins) {
        if (n.type.shape[3] % options.seq_multiple != 0)
          throw Error("legalize_io: fixed-length input " + ir::describe(n) + " of type " + n.type.str() +
                      " must have a multiple of " + std::to_string(options.seq_multiple) +
                      " positions: they are not padded (ANE011)");
        fixed.insert(n.name);
        continue;
      }
      if (!is_surface(n.type) || n.type.shape[3] != io.seq)
        throw Error("legalize_io: " + ir::describe(n) + " of type " + n.type.str() +
                    " is not a [1, C, 1, S] value of the kernel's one sequence length (run lower_layout first)");
      min_channels = std::min(min_channels, n.type.shape[1]);
    }
  if (min_channels == std::numeric_limits<std::int64_t>::max()) throw Error("legalize_io: a kernel needs token inputs or outputs");
  std::int64_t wide = 0;  // channels every I/O tensor has at least, with pad_channels
  if (options.pad_channels) {
    io.padded_seq = (std::max(io.seq, options.seq_multiple) + options.seq_multiple - 1) / options.seq_multiple * options.seq_multiple;
    wide = (options.min_surface_bytes + io.padded_seq * kFp16Bytes - 1) / (io.padded_seq * kFp16Bytes);
  } else {
    io.padded_seq = padded_sequence(io.seq, min_channels, options);
  }
  std::map<std::string, std::int64_t, std::less<>> widen;  // name -> channels, for pad_channels()
  for (ValueId id : ins) {
    const Node& n = graph.node(id);
    if (fixed.contains(n.name)) {
      const std::int64_t S = n.type.shape[3], per_column = S * kFp16Bytes;
      io.inputs.push_back(io_tensor(n, S, (options.min_surface_bytes + per_column - 1) / per_column, true));
      if (const WeightInput* w = weight_of(n)) {
        io.inputs.back().weight = w->param;
        io.inputs.back().weight_axis = w->axis;
        io.inputs.back().weight_begin = w->begin;
        io.inputs.back().weight_end = w->end;
      }
    } else {
      io.inputs.push_back(io_tensor(n, io.padded_seq, wide));
    }
    widen[n.name] = io.inputs.back().padded[1];
  }
  for (ValueId id : outs) {
    io.outputs.push_back(io_tensor(graph.node(id), io.padded_seq, wide));
    widen[io.outputs.back().name] = io.outputs.back().padded[1];
  }
  for (auto* list : {&io.inputs, &io.outputs})
    std::sort(list->begin(), list->end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  // One allocation per direction (ANE010): the largest surface's. A smaller tensor sits packed
  // at the start of its larger surface, which is how the device reads it (ANE028).
  const auto largest = [](const std::vector<KernelIoTensor>& list) {
    std::int64_t m = 0;
    for (const KernelIoTensor& t : list) m = std::max(m, t.bytes);
    return m;
  };
  io.input_bytes = largest(io.inputs);
  io.output_bytes = largest(io.outputs);
  bool narrow = false;
  for (const auto* list : {&io.inputs, &io.outputs})
    for (const KernelIoTensor& t : *list) narrow = narrow || t.padded[1] != t.logical[1];
  if (narrow) graph = pad_channels(graph, widen);
  if (io.padded_seq != io.seq) graph = Padding(graph, io.padded_seq, fixed).run();
  return io;
}

std::unique_ptr<ir::Pass> legalize_io_pass(KernelIo& io, LegalizeIoOptions options) {
  return ir::make_pass("legalize_io", [&io, options](ir::Graph& g, ir::PassContext& c) {
    io = legalize_io(g, options);
    c.note("sequence " + std::to_string(io.seq) + " padded to " + std::to_string(io.padded_seq) + ": surfaces of " +
           std::to_string(io.input_bytes) + " bytes in, " + std::to_string(io.output_bytes) + " bytes out");
    return io.padded_seq != io.seq;
  });
}

}  // namespace orion::compile
