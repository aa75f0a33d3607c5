#include "compile/ane/ane_validator.h"

#include <cmath>

#include "compile/ane/weight_slots.h"
#include "compile/mil/mil_constexpr.h"
#include "compile/mil/mil_ops.h"
#include "compile/mil/mil_syntax.h"
#include "core/error.h"
#include "core/half.h"

namespace orion::compile {

namespace {

using ir::Graph;
using ir::Node;
using ir::Op;

class Checker {
 public:
  Checker(const Graph& g, const AneTarget& t) : g_(g), t_(t) {}

  std::vector<AneViolation> run() {
    for (const Node& n : g_.nodes()) check_node(n);
    check_outputs();
    check_surfaces();
    check_on_chip();
    return std::move(out_);
  }

 private:
  void add(std::string_view id, std::string where, std::string problem) {
    out_.push_back({&ane_rule(id), std::move(where), std::move(problem)});
  }
  void add(std::string_view id, const Node& n, std::string problem) {
    add(id, ir::describe(n), std::move(problem));
    out_.back().node = id_of(n);
  }
  ir::ValueId id_of(const Node& n) const { return static_cast<ir::ValueId>(&n - g_.nodes().data()); }

  void check_node(const Node& n) {
    switch (n.op) {
      case Op::input: return;
      case Op::constant: return check_const(n);
      case Op::gelu: return add("ANE002", n, "gelu has no ANE form");
      case Op::silu: return add("ANE003", n, "silu has no ANE form");
      case Op::rsqrt: return add("ANE038", n, "rsqrt has no ANE form");
      case Op::softmax: return check_softmax(n);
      case Op::conv: return check_conv(n);
      case Op::matmul: return check_matmul(n);
      case Op::cast:
        if (t_.m1_m2) add("ANE014", n, "cast on an M1/M2 target");
        return;
      case Op::reduce_sum:
      case Op::reduce_mean:
      case Op::reduce_max: return check_reduce(n);
      case Op::gather:
        if (const std::optional<LutForm> f = lut_form(g_, id_of(n))) return check_lut(n, *f);
        break;
      case Op::dequantize:
        if (n.attr_int("bits") == 4)
          add("ANE043", n, "int4/uint4 data through constexpr_blockwise_shift_scale, blocks of " +
                               g_.node(n.inputs[1]).type.str() + " scales");
        break;
      default: break;
    }
    if (mil_op_info(n.op).mil_name.empty())
      add("ANE001", n,
          n.op == Op::param ? "a param (weights are baked: bind it as a const, or make it an input)"
                            : "op " + std::string(n.info().name) + " has no MIL form");
  }

  void check_const(const Node& n) {
    const Tensor& v = n.attr<Tensor>("value");
    if (v.dtype() != DType::f16 && v.dtype() != DType::f32) return;
    const Tensor f = v.to(DType::f32);
    std::int64_t bad = 0;
    for (float x : f.span<float>())
      if (std::isinf(x) || std::fabs(x) > 65504.0f) ++bad;
    if (bad > 0)
      add("ANE016", n, std::to_string(bad) + " value(s) are infinite or beyond fp16's 65504");
  }

  void check_conv(const Node& n) {
    const Node& w = g_.node(n.inputs[1]);
    if (!is_constexpr_weight(g_, n.inputs[1])) {
      add("ANE005", n, "its weight " + ir::describe(w) + " is not a const");
      if (n.attr_int("groups") > 1)
        add("ANE006", n, "groups = " + std::to_string(n.attr_int("groups")) + " with a runtime weight");
    }
  }

  void check_matmul(const Node& n) {
    if (!t_.m1_m2) return;
    const Shape& x = g_.node(n.inputs[0]).type.shape;
    if (x.empty()) return;
    const bool tx = n.attr_bool("transpose_x");
    const std::int64_t k = tx ? x[x.size() - 2] : x.back();
    if (k % 32 != 0)
      add("ANE013", n, "inner dimension " + std::to_string(k) + " is not a multiple of 32");
  }

  void check_softmax(const Node& n) {
    const Shape& x = n.type.shape;
    if (x.empty()) return;
    std::int64_t axis = n.attr_int("axis");
    if (axis < 0) axis += static_cast<std::int64_t>(x.size());
    if (axis < 0 || axis >= static_cast<std::int64_t>(x.size())) return;
    const std::int64_t len = x[static_cast<std::size_t>(axis)];
    if (len > 0 && (len & (len - 1)) != 0) add("ANE040", n, "softmax over " + std::to_string(len) + " values");
  }

  // A palettized weight (constexpr_lut_to_dense): whole rows of at least 8 output channels a LUT.
  void check_lut(const Node& n, const LutForm& f) {
    constexpr std::int64_t kMinRows = 8;
    const Shape& dims = n.type.shape;
    if (f.tables.empty()) return;  // one LUT for the whole weight
    bool whole_rows = true;
    for (std::size_t d = 1; d < f.tables.size(); ++d) whole_rows = whole_rows && f.tables[d] == 1;
    const std::int64_t rows = dims[0] / f.tables[0];
    if (!whole_rows || rows < kMinRows)
      add("ANE044", n, std::to_string(shape_numel(f.tables)) + " LUTs over " + shape_str(dims) + " (" +
                           (whole_rows ? std::to_string(rows) + " output channels each" : "LUTs along the input channels") + ")");
  }

  void check_reduce(const Node& n) {
    const Shape& x = g_.node(n.inputs[0]).type.shape;
    std::int64_t len = 1;
    for (std::int64_t a : n.attr_ints("axes")) {
      const std::int64_t axis = a < 0 ? a + static_cast<std::int64_t>(x.size()) : a;
      if (axis >= 0 && axis < static_cast<std::int64_t>(x.size())) len *= x[static_cast<std::size_t>(axis)];
    }
    if (len > kMaxFp16ReductionLength)
      add("ANE017", n, "reduces " + std::to_string(len) + " values in fp16");
  }

  void check_outputs() {
    for (ir::ValueId id : g_.outputs()) {
      const Node& n = g_.node(id);
      if (n.op == Op::input || n.op == Op::constant || n.op == Op::param)
        add("ANE007", n, "is returned but not computed in the kernel");
    }
  }

  // ANE008, ANE009 and ANE011 for one surface.
  void check_surface(const Node& n, const char* role) {
    const ir::TensorType& t = n.type;
    const Shape& s = t.shape;
    if (s.size() != 4 || s[0] != 1) {
      add("ANE008", n, std::string(role) + " of type " + t.str() + " is not [1, C, H, W]");
      return;
    }
    const bool fp32_ok = !t_.m1_m2 && t.dtype == DType::f32;
    if (t.dtype != DType::f16 && !fp32_ok)
      add("ANE009", n, std::string(role) + " of type " + t.str() + (t_.m1_m2 ? " on an M1/M2 target" : ""));
    const auto elem = static_cast<std::int64_t>(dtype_size(t.dtype));
    if (s[3] * elem < kMinLastAxisBytes)
      add("ANE011", n, std::string(role) + " of type " + t.str() + " has " + std::to_string(s[3] * elem) +
                           " bytes on its last axis");
  }

  // One allocation size per direction (ANE010) and the minimum size of a surface (ANE012) are
  // the runtime's to keep: legalize_io pads Orion's kernels so that the largest surface of each
  // direction reaches the minimum and records it in KernelIo, the runtime allocates every
  // surface at that size, and ane-sim checks the surfaces it is given. Tensors smaller than
  // their surface are legal: each sits packed at its start (ANE028).
  void check_surfaces() {
    for (ir::ValueId id : g_.nodes_of(Op::input)) check_surface(g_.node(id), "input");
    for (ir::ValueId id : g_.outputs()) check_surface(g_.node(id), "output");
  }

  void check_on_chip() {
    std::int64_t bytes = 0;
    for (ir::ValueId id : g_.nodes_of(Op::constant)) bytes += g_.node(id).type.numel() * 2;  // fp16 on the device
    if (bytes > t_.on_chip_bytes)
      add("ANE015", "kernel", std::to_string(bytes) + " bytes of fp16 weights, over the " +
                                  std::to_string(t_.on_chip_bytes) + " on chip");
  }

  const Graph& g_;
  const AneTarget& t_;
  std::vector<AneViolation> out_;
};

}  // namespace

std::string AneViolation::message() const {
  return std::string(rule->id) + (is_error() ? " " : " warning ") + where + ": " + problem + " (" +
         std::string(rule->summary) + ") Fix: " + std::string(rule->fix) + ".";
}

std::vector<AneViolation> check_kernel_graph(const ir::Graph& kernel, const AneTarget& target) {
  return Checker(kernel, target).run();
}


namespace {

// ANE045: the iOS18 additions to the compile-time weight ops, in a program of the iOS16 opset.
template <class Add>
void check_ios16_weight_forms(const MilOperation& op, const Add& add) {
  if (op.op == "constexpr_blockwise_shift_scale") add("constexpr_blockwise_shift_scale is an iOS18 op");
  if (op.op == "constexpr_lut_to_dense") {
    bool shape = false;
    for (const MilNamedArg& a : op.args) shape = shape || a.name == "shape";
    for (const MilNamedLiteral& a : op.attrs) shape = shape || a.name == "shape";
    if (!shape) add("constexpr_lut_to_dense without a shape: the iOS18 form (LUTs per block, typed indices)");
  }
  for (const MilVar& v : op.outputs)
    if (mil_sub_byte_type(v.type.dtype)) add(v.name + " is " + v.type.dtype + ", a type iOS16 does not have");
  for (const MilNamedLiteral& a : op.attrs)
    if (mil_sub_byte_type(a.value.type.dtype)) add(a.name + " is " + a.value.type.dtype + ", a type iOS16 does not have");
}

}  // namespace

std::vector<AneViolation> check_mil_program(const MilAst& program, const AneTarget& target,
                                            std::string_view file) {
  std::vector<AneViolation> out;
  const auto at = [&](const MilPos& p, std::string_view what) {
    return std::string(file) + ":" + std::to_string(p.line) + ":" + std::to_string(p.column) + " " +
           std::string(what);
  };
  const auto add = [&](std::string_view id, std::string where, std::string problem) {
    out.push_back({&ane_rule(id), std::move(where), std::move(problem)});
  };
  if (target.m1_m2 && program.version != "1.0")
    add("ANE024", at(program.pos, "program"), "program(" + program.version + ") on an M1/M2 target");
  for (const MilFunction& f : program.functions) {
    if (target.m1_m2 && f.opset != "ios16")
      add("ANE024", at(f.pos, f.name), "opset " + f.opset + " on an M1/M2 target");
    for (const MilOperation& op : f.ops) {
      if (f.opset == "ios16") check_ios16_weight_forms(op, [&](std::string problem) {
        add("ANE045", at(op.op_pos, op.op), std::move(problem));
      });
      if (op.op == "tile") add("ANE020", at(op.op_pos, op.op), "tile is emitted");
      if (op.op == "concat") {
        bool interleave = false;
        for (const MilNamedArg& a : op.args) {
          if (a.name == "interleave") interleave = true;
          if ((a.name == "axis" || a.name == "interleave") && a.value.kind == MilValue::Kind::literal)
            add("ANE004", at(a.pos, op.op), "concat's " + a.name + " is an inline literal");
        }
        if (!interleave) add("ANE004", at(op.op_pos, op.op), "concat has no interleave argument");
      }
      if (op.op == "scaled_dot_product_attention")
        add("ANE021", at(op.op_pos, op.op), "scaled_dot_product_attention is emitted");
      if (op.op == "const") continue;
      for (const MilNamedArg& a : op.args) {
        const bool concat_form = op.op == "concat" && (a.name == "axis" || a.name == "interleave");  // ANE004's
        // A constexpr op's weight tensor in the blob is neither a scalar nor a list: Core ML's own
        // files give them inline.
        const bool weight_tensor = op.op.starts_with("constexpr_") && a.value.kind == MilValue::Kind::literal &&
                                   a.value.literal.is_blob;
        if (a.value.kind == MilValue::Kind::literal && !concat_form && !weight_tensor)
          add("ANE018", at(a.pos, op.op), "argument " + a.name + " is an inline literal");
        if (op.op == "conv" && a.name == "bias")
          add("ANE019", at(a.pos, op.op), "conv has a bias argument");
      }
    }
    for (const auto& [name, pos] : f.outputs)
      for (const MilVar& in : f.inputs)
        if (in.name == name) add("ANE007", at(pos, name), "the input " + name + " is returned");
    const WeightSlots slots = count_weight_slots(f);
    if (target.m1_m2)
      for (const auto& [path, tensors] : slots.tensors_per_file)
        if (tensors > 1)
          add("ANE039", at(f.pos, f.name), path + " holds " + std::to_string(tensors) + " weight tensors on an M1/M2 target");
  }
  return out;
}

std::vector<AneViolation> validate_kernel_graph(const ir::Graph& kernel, const AneTarget& target,
                                                std::string_view name) {
  return refuse_errors(check_kernel_graph(kernel, target), name);
}

std::vector<AneViolation> refuse_errors(std::vector<AneViolation> violations, std::string_view name) {
  std::vector<AneViolation> warnings;
  std::string errors;
  int count = 0;
  for (AneViolation& v : violations) {
    if (!v.is_error()) {
      warnings.push_back(std::move(v));
      continue;
    }
    errors += "\n  " + v.message();
    ++count;
  }
  if (count > 0)
    throw Error("kernel " + std::string(name) + " breaks " + std::to_string(count) +
                " ANE rule(s); no program was written:" + errors);
  return warnings;
}

}  // namespace orion::compile
