#include "compile/mil/mil_to_ir.h"

#include <cstdio>

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <optional>
#include <unordered_map>

#include "compile/mil/mil_constexpr.h"
#include "compile/mil/mil_ops.h"
#include "compile/mil/mil_parser.h"
#include "compile/mil/mil_syntax.h"
#include "compile/blob/weight_blob_reader.h"
#include "core/error.h"
#include "core/half.h"
#include "core/parse_real.h"
#include "ir/builder.h"
#include "ir/verifier.h"

namespace orion::compile {

namespace {

using ir::Graph;
using ir::Node;
using ir::Op;
using ir::ValueId;

bool is_integer_dtype(std::string_view d) {
  for (std::string_view n : {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
    if (n == d) return true;
  return false;
}
bool is_float_dtype(std::string_view d) { return d == "fp16" || d == "fp32" || d == "fp64"; }

// A number's text as a double: hex floats (with or without fraction and exponent), decimals,
// exponents, inf and nan, each with an optional '-'.
std::optional<double> read_real(std::string_view s) {
  bool neg = false;
  if (!s.empty() && s[0] == '-') {
    neg = true;
    s.remove_prefix(1);
  }
  double v = 0;
  if (s == "inf") v = std::numeric_limits<double>::infinity();
  else if (s == "nan") v = std::numeric_limits<double>::quiet_NaN();
  else {
    auto fmt = std::chars_format::general;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      s.remove_prefix(2);
      fmt = std::chars_format::hex;
    }
    const auto r = parse_real(s.data(), s.data() + s.size(), v, fmt);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  }
  return neg ? -v : v;
}

struct Defined {
  enum class Kind : std::uint8_t { input, constant, op } kind;
  ValueId id = -1;                      // -1: a folded const (no node)
  const MilOperation* op = nullptr;     // the const's operation
  MilPos pos;
};

// An argument of an op, from its argument list (`value`) or its attribute block (`literal`).
struct GivenArg {
  const MilValue* value = nullptr;
  const MilLiteral* literal = nullptr;
  MilPos at;
};
using GivenArgs = std::map<std::string, GivenArg>;

class Converter {
 public:
  Converter(std::string_view file, const std::string& folder) : file_(file), folder_(folder) {}
  Graph run(const MilAst& ast);

 private:
  [[noreturn]] void fail(MilPos at, const std::string& message) const {
    throw Error::at_line(file_, at.line, at.column, message);
  }
  std::string ir_name(const std::string& mil, MilPos at);
  ir::TensorType ir_type(const MilType& t, const std::string& what) const;
  Tensor tensor_of(const MilLiteral& lit, const std::string& what);
  const MilLiteral& const_val(const MilOperation& op) const;
  const Defined& lookup(const std::string& name, MilPos at) const;
  void define(const std::string& name, MilPos at, Defined d);
  void add_const(const MilOperation& op, bool node);
  void add_op(const MilOperation& op);
  void add_quantization_op(const MilOperation& op);
  void add_lut_op(const MilOperation& op);
  GivenArgs given_args(const MilOperation& op) const;
  const MilLiteral* arg_literal(const GivenArg& a) const;
  Tensor arg_tensor(const GivenArg& a, const std::string& what);
  ValueId arg_value(const GivenArg& a, const std::string& what, const std::string& fallback);
  std::string arg_dtype(const GivenArg& a) const;
  // `wanted`, or a suffixed variant no node has.
  std::string unique_ir_name(const std::string& wanted) const;
  // The node of the const named `name`: a const read only by constexpr ops in a sub-byte type
  // becomes one here, the first time an op reads it, under its own name.
  ValueId const_value(const std::string& name, MilPos at, const std::string& what);
  void add_node(Node n, std::vector<std::pair<std::string, ir::AttrValue>> attrs, const MilOperation& op);
  ValueId const_node(Tensor t, const std::string& name);

  // Attribute literals.
  std::vector<std::int64_t> ints_of(const MilLiteral& lit, const std::string& what) const;
  std::int64_t int_of(const MilLiteral& lit, const std::string& what) const;
  bool bool_of(const MilLiteral& lit, const std::string& what) const;
  double real_of(const MilLiteral& lit, const std::string& what) const;
  std::string string_of(const MilLiteral& lit, const std::string& what) const;
  void require_scalar(const MilLiteral& lit, const std::string& what) const;

  std::string_view file_;
  std::string folder_;
  Graph graph_{"main"};
  std::unordered_map<std::string, Defined> names_;
  std::unordered_map<std::string, std::string> ir_names_;  // IR name -> MIL name
  std::map<std::string, WeightBlobReader> blobs_;
  std::set<ValueId> sub_byte_consts_;  // consts of a sub-byte MIL type
};

std::string Converter::ir_name(const std::string& mil, MilPos at) {
  std::string s = mil;
  for (char& c : s)
    if (c == '@') c = '_';
  const auto [it, fresh] = ir_names_.emplace(s, mil);
  if (!fresh && it->second != mil)
    fail(at, "the names '" + mil + "' and '" + it->second + "' both become the IR name '" + s + "'");
  return s;
}

ir::TensorType Converter::ir_type(const MilType& t, const std::string& what) const {
  const auto dt = ir_dtype_from_mil(t.dtype);
  if (!dt) fail(t.pos, what + ": dtype " + t.dtype + " has no IR equivalent (fp16, fp32, int32, int8, uint8, bool)");
  return {*dt, t.shape};
}

const Defined& Converter::lookup(const std::string& name, MilPos at) const {
  const auto it = names_.find(name);
  if (it == names_.end()) fail(at, "undefined value '" + name + "' (a value must be defined before it is used)");
  return it->second;
}

void Converter::define(const std::string& name, MilPos at, Defined d) {
  if (const auto it = names_.find(name); it != names_.end())
    fail(at, "the value '" + name + "' is already defined at line " + std::to_string(it->second.pos.line));
  d.pos = at;
  names_.emplace(name, d);
}

void Converter::require_scalar(const MilLiteral& lit, const std::string& what) const {
  if (lit.is_blob || lit.elements.size() != 1)
    fail(lit.pos, what + " must be a single value, not " + std::to_string(lit.elements.size()) + " values");
}

std::vector<std::int64_t> Converter::ints_of(const MilLiteral& lit, const std::string& what) const {
  if (!is_integer_dtype(lit.type.dtype) || lit.is_blob || lit.type.shape.size() > 1)
    fail(lit.pos, what + " must be an integer scalar or list, not " + lit.type.dtype +
                      (lit.type.shape.size() > 1 ? " of rank " + std::to_string(lit.type.shape.size()) : ""));
  const std::int64_t want = lit.type.shape.empty() ? 1 : lit.type.shape[0];
  if (static_cast<std::int64_t>(lit.elements.size()) != want)
    fail(lit.pos, what + ": the literal has " + std::to_string(lit.elements.size()) + " values, its type " +
                      std::to_string(want));
  std::vector<std::int64_t> out;
  for (const MilElement& e : lit.elements) {
    std::int64_t v = 0;
    const auto r = std::from_chars(e.text.data(), e.text.data() + e.text.size(), v);
    if (e.kind != MilElement::Kind::number || r.ec != std::errc() || r.ptr != e.text.data() + e.text.size())
      fail(e.pos, what + ": '" + e.text + "' is not an integer that fits in 64 bits");
    if (lit.type.dtype == "int32" && (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max()))
      fail(e.pos, what + ": " + e.text + " is out of range for int32");
    out.push_back(v);
  }
  return out;
}

std::int64_t Converter::int_of(const MilLiteral& lit, const std::string& what) const {
  require_scalar(lit, what);
  return ints_of(lit, what)[0];
}

bool Converter::bool_of(const MilLiteral& lit, const std::string& what) const {
  require_scalar(lit, what);
  if (lit.type.dtype != "bool" || lit.elements[0].kind != MilElement::Kind::boolean)
    fail(lit.pos, what + " must be a bool, not " + lit.type.dtype);
  return lit.elements[0].text == "true";
}

double Converter::real_of(const MilLiteral& lit, const std::string& what) const {
  require_scalar(lit, what);
  const MilElement& e = lit.elements[0];
  if (!is_float_dtype(lit.type.dtype) && !is_integer_dtype(lit.type.dtype))
    fail(lit.pos, what + " must be a number, not " + lit.type.dtype);
  const auto v = read_real(e.text);
  if (e.kind != MilElement::Kind::number || !v) fail(e.pos, what + ": '" + e.text + "' is not a number");
  // The value the literal's dtype holds.
  if (lit.type.dtype == "fp16") return half_to_float(float_to_half(static_cast<float>(*v)));
  if (lit.type.dtype == "fp32") return static_cast<float>(*v);
  return *v;
}

std::string Converter::string_of(const MilLiteral& lit, const std::string& what) const {
  require_scalar(lit, what);
  if (lit.type.dtype != "string" || lit.elements[0].kind != MilElement::Kind::string)
    fail(lit.pos, what + " must be a string, not " + lit.type.dtype);
  return lit.elements[0].text;
}

Tensor Converter::tensor_of(const MilLiteral& lit, const std::string& what) {
  // A sub-byte type is held one value per byte: int4 in i8, the unsigned types in u8.
  const std::optional<BlobDType> sub_byte = mil_sub_byte_type(lit.type.dtype);
  const ir::TensorType t = sub_byte ? ir::TensorType{sub_byte_min(*sub_byte) < 0 ? DType::i8 : DType::u8, lit.type.shape}
                                    : ir_type(lit.type, what);
  if (lit.is_blob) {
    constexpr std::string_view kPrefix = "@model_path/";
    const std::string& p = lit.blob_path;
    if (p.compare(0, kPrefix.size(), kPrefix) != 0)
      fail(lit.pos, what + ": BLOBFILE path '" + p + "' must start with @model_path/");
    const std::string rel = p.substr(kPrefix.size());
    // Only files under the model folder: no absolute paths, no "..", no empty parts.
    std::size_t start = 0;
    while (true) {
      const std::size_t slash = rel.find('/', start);
      const std::string part = rel.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      if (part.empty() || part == "." || part == "..")
        fail(lit.pos, what + ": BLOBFILE path '" + p + "' must name a file under @model_path/ (no empty, '.' or '..' parts)");
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    if (folder_.empty())
      fail(lit.pos, what + ": BLOBFILE needs a model folder for @model_path, and none was given");
    try {
      auto it = blobs_.find(rel);
      if (it == blobs_.end()) it = blobs_.emplace(rel, WeightBlobReader::open(folder_ + "/" + rel)).first;
      if (sub_byte) return it->second.sub_byte_tensor(lit.blob_offset, *sub_byte, t.shape);
      return it->second.tensor(lit.blob_offset, t.dtype, t.shape);
    } catch (const Error& e) {
      fail(lit.pos, what + ": " + e.what());
    }
  }
  const std::int64_t n = t.numel();
  if (static_cast<std::int64_t>(lit.elements.size()) != n)
    fail(lit.pos, what + ": the literal has " + std::to_string(lit.elements.size()) + " values, its type " +
                      lit.type.dtype + shape_str(t.shape) + " needs " + std::to_string(n));
  Tensor out(t.dtype, t.shape);
  for (std::size_t i = 0; i < lit.elements.size(); ++i) {
    const MilElement& e = lit.elements[i];
    if (t.dtype == DType::boolean) {
      if (e.kind != MilElement::Kind::boolean) fail(e.pos, what + ": expected true or false, found '" + e.text + "'");
      out.data<std::uint8_t>()[i] = e.text == "true";
      continue;
    }
    if (e.kind != MilElement::Kind::number) fail(e.pos, what + ": expected a number, found '" + e.text + "'");
    if (is_float(t.dtype)) {
      const auto v = read_real(e.text);
      if (!v) fail(e.pos, what + ": malformed number '" + e.text + "'");
      const auto f = static_cast<float>(*v);
      if (std::isfinite(*v) && !std::isfinite(f)) fail(e.pos, what + ": " + e.text + " is out of range for fp32");
      if (t.dtype == DType::f32) {
        out.data<float>()[i] = f;
      } else {
        const std::uint16_t h = float_to_half(f);
        if (std::isfinite(f) && (h & 0x7fffu) == 0x7c00u) fail(e.pos, what + ": " + e.text + " is out of range for fp16");
        out.data<std::uint16_t>()[i] = h;
      }
      continue;
    }
    std::int64_t v = 0;
    const auto r = std::from_chars(e.text.data(), e.text.data() + e.text.size(), v);
    if (r.ec != std::errc() || r.ptr != e.text.data() + e.text.size())
      fail(e.pos, what + ": '" + e.text + "' is not an integer");
    const auto in = [&](std::int64_t lo, std::int64_t hi) {
      if (v < lo || v > hi) fail(e.pos, what + ": " + e.text + " is out of range for " + lit.type.dtype);
    };
    if (sub_byte) {
      in(sub_byte_min(*sub_byte), sub_byte_max(*sub_byte));
      if (t.dtype == DType::i8) out.data<std::int8_t>()[i] = static_cast<std::int8_t>(v);
      else out.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(v);
      continue;
    }
    switch (t.dtype) {
      case DType::i32:
        in(std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max());
        out.data<std::int32_t>()[i] = static_cast<std::int32_t>(v);
        break;
      case DType::i8: in(-128, 127); out.data<std::int8_t>()[i] = static_cast<std::int8_t>(v); break;
      case DType::u8: in(0, 255); out.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(v); break;
      default: break;
    }
  }
  return out;
}

const MilLiteral& Converter::const_val(const MilOperation& op) const {
  for (const MilNamedLiteral& a : op.attrs)
    if (a.name == "val") return a.value;
  fail(op.op_pos, "const " + op.outputs[0].name + " has no val attribute");
}

void Converter::add_const(const MilOperation& op, bool node) {
  const MilVar& out = op.outputs[0];
  if (!op.args.empty()) fail(op.args[0].pos, "const takes no arguments: name and val are attributes");
  const MilLiteral& val = const_val(op);
  if (val.type.dtype != out.type.dtype || val.type.shape != out.type.shape)
    fail(val.pos, "the value of const " + out.name + " does not have its declared type");
  Defined d{Defined::Kind::constant, -1, &op, {}};
  if (node) {
    // A sub-byte const is held one value per i8/u8 element; only constexpr ops read it.
    Tensor value = tensor_of(val, "const " + out.name);
    Node n;
    n.op = Op::constant;
    n.name = ir_name(out.name, out.pos);
    n.type = {value.dtype(), value.shape()};
    n.attrs = ir::make_attrs(Op::constant, {{"value", std::move(value)}});
    d.id = graph_.add(std::move(n));
    if (mil_sub_byte_type(out.type.dtype)) sub_byte_consts_.insert(d.id);
  }
  define(out.name, out.pos, d);
}

// The int8 ops of coremltools' MIL, as the IR's dequantize and quantize (one scale per block):
//   constexpr_blockwise_shift_scale(data, scale[, offset])    iOS18; offset is a zero point
//   constexpr_affine_dequantize(quantized_data, zero_point, scale, axis)  iOS16; arguments may be
//       given in the attribute block, with inline literals, as programs that ran wrote them
//   dequantize(input, scale[, zero_point][, axis])   quantize(input, scale[, zero_point][, axis],
//       output_dtype)                                   iOS17 activations (W8A8)
// A scale or zero point of one value per channel along `axis` becomes the IR's blockwise form
// (the data's rank, 1 on every other axis).
bool is_quantization_op(std::string_view op) {
  return op == "constexpr_blockwise_shift_scale" || op == "constexpr_affine_dequantize" || op == "dequantize" ||
         op == "constexpr_lut_to_dense" ||
         op == "quantize";
}

std::string Converter::unique_ir_name(const std::string& wanted) const {
  std::string name = wanted;
  for (int i = 1; graph_.find(name) || ir_names_.contains(name); ++i) name = wanted + "_" + std::to_string(i);
  return name;
}

ValueId Converter::const_node(Tensor t, const std::string& name) {
  Node n;
  n.op = Op::constant;
  n.name = name;
  for (int i = 1; graph_.find(n.name); ++i) n.name = name + "_" + std::to_string(i);
  n.type = {t.dtype(), t.shape()};
  n.attrs = ir::make_attrs(Op::constant, {{"value", std::move(t)}});
  return graph_.add(std::move(n));
}

ValueId Converter::const_value(const std::string& name, MilPos at, const std::string& what) {
  const auto it = names_.find(name);
  if (it == names_.end()) fail(at, "undefined value '" + name + "' (a value must be defined before it is used)");
  Defined& d = it->second;
  if (d.id >= 0 || d.kind != Defined::Kind::constant) return d.id;
  const MilVar& v = d.op->outputs[0];
  d.id = const_node(tensor_of(const_val(*d.op), what), ir_name(v.name, v.pos));
  return d.id;
}

// An op's arguments by name, from its argument list or its attribute block (where constexpr ops
// of the iOS16 era and programs that ran put them, with inline literals).
GivenArgs Converter::given_args(const MilOperation& op) const {
  GivenArgs given;
  for (const MilNamedArg& a : op.args) given[a.name] = {&a.value, nullptr, a.pos};
  for (const MilNamedLiteral& a : op.attrs)
    if (a.name != "name") given[a.name] = {nullptr, &a.value, a.pos};
  return given;
}

const MilLiteral* Converter::arg_literal(const GivenArg& a) const {
  if (a.literal) return a.literal;
  if (a.value->kind == MilValue::Kind::literal) return &a.value->literal;
  if (a.value->kind == MilValue::Kind::name) {
    const Defined& d = lookup(a.value->name, a.value->pos);
    if (d.kind == Defined::Kind::constant) return &const_val(*d.op);
  }
  return nullptr;
}

Tensor Converter::arg_tensor(const GivenArg& a, const std::string& what) {
  if (!a.literal && a.value->kind == MilValue::Kind::tuple) fail(a.at, what + " must be a const or a literal");
  const MilLiteral* lit = arg_literal(a);
  if (!lit) fail(a.value->pos, what + " must be a const, and '" + a.value->name + "' is not one");
  return tensor_of(*lit, what);
}

// A value given by name is used as it is (a const's node keeps its name); a literal becomes a
// const of its own, named `fallback`.
ValueId Converter::arg_value(const GivenArg& a, const std::string& what, const std::string& fallback) {
  if (!a.literal && a.value->kind == MilValue::Kind::name) return const_value(a.value->name, a.value->pos, what);
  return const_node(arg_tensor(a, what), fallback);
}

std::string Converter::arg_dtype(const GivenArg& a) const {
  if (!a.literal && a.value->kind == MilValue::Kind::name) {
    const Defined& d = lookup(a.value->name, a.value->pos);
    if (d.kind == Defined::Kind::constant) return d.op->outputs[0].type.dtype;
    if (d.id >= 0) return std::string(mil_dtype_name(graph_.node(d.id).type.dtype).value_or(""));
    return {};
  }
  const MilLiteral* lit = arg_literal(a);
  return lit ? lit->type.dtype : std::string();
}

void Converter::add_quantization_op(const MilOperation& op) {
  if (op.op == "constexpr_lut_to_dense") return add_lut_op(op);
  const MilVar& out = op.outputs[0];
  const std::string who = op.op + " " + out.name;
  const bool constexpr_op = op.op.rfind("constexpr_", 0) == 0;
  const GivenArgs given = given_args(op);
  const auto find = [&](std::initializer_list<const char*> names) -> std::optional<GivenArg> {
    for (const char* n : names)
      if (const auto it = given.find(n); it != given.end()) return it->second;
    return std::nullopt;
  };
  const auto data_arg = find({"data", "quantized_data", "input"});
  const auto scale_arg = find({"scale"});
  if (!data_arg || !scale_arg) fail(op.op_pos, who + ": needs its data and scale arguments");
  const ValueId data = arg_value(*data_arg, "the data of " + who, out.name + "_data");
  if (constexpr_op && graph_.node(data).op != Op::constant) fail(op.op_pos, who + ": its data must be a const");
  // int4 and uint4 data (iOS18) are 4-bit values held one per i8/u8 element.
  const std::string data_dtype = arg_dtype(*data_arg);
  const bool four_bit = data_dtype == "int4" || data_dtype == "uint4";
  if (mil_sub_byte_type(data_dtype) && !four_bit)
    fail(data_arg->at, who + ": " + data_dtype + " data has no dequantize form (int4, uint4, int8 and uint8 do)");
  const Shape data_shape = graph_.node(data).type.shape;
  std::optional<std::int64_t> axis;
  if (const auto a = find({"axis"})) {
    const MilLiteral* lit = arg_literal(*a);
    if (!lit) fail(op.op_pos, who + ": axis must be a const");
    axis = int_of(*lit, "axis of " + who);
    if (*axis < 0) *axis += static_cast<std::int64_t>(data_shape.size());
    if (*axis < 0 || *axis >= static_cast<std::int64_t>(data_shape.size())) fail(op.op_pos, who + ": axis is outside the data's rank");
  }
  // A per-channel vector along `axis` in the IR's blockwise form.
  const auto blockwise = [&](Tensor t) {
    if (t.rank() == 1 && t.numel() > 1 && data_shape.size() > 1) {
      if (!axis) fail(op.op_pos, who + ": a scale of one value per channel needs an axis");
      Shape s(data_shape.size(), 1);
      s[static_cast<std::size_t>(*axis)] = t.numel();
      return t.contiguous().reshape(s);
    }
    return t;
  };
  // Scale and zero point: the named const as it is when already blockwise, else reshaped.
  const auto operand = [&](const GivenArg& a, const std::string& what, const std::string& suffix) {
    const ValueId id = arg_value(a, what + " of " + who, out.name + suffix);
    if (id < 0 || graph_.node(id).op != Op::constant) fail(a.at, what + " of " + who + " must be a const");
    const Tensor t = graph_.node(id).attr<Tensor>("value");
    if (blockwise(t).shape() == t.shape()) return id;
    return const_node(blockwise(t), out.name + suffix);
  };
  std::vector<ValueId> inputs{data, operand(*scale_arg, "the scale", "_scale")};
  const auto zero_arg = find({"offset", "zero_point"});
  if (zero_arg) {
    // An integer zero point has the data's type (coremltools' constexpr_blockwise_shift_scale).
    const std::string z = arg_dtype(*zero_arg);
    if (four_bit && z != data_dtype && z != "fp16" && z != "fp32")
      fail(zero_arg->at, who + ": the offset is " + z + ", the data " + data_dtype + ": an integer offset has the data's type");
    inputs.push_back(operand(*zero_arg, "the zero point", "_zero_point"));
  }
  // Blocks tile the data: each dim of a blockwise scale (and offset) divides the data's.
  if (op.op == "constexpr_blockwise_shift_scale")
    for (std::size_t i = 1; i < inputs.size(); ++i) {
      const Shape& bs = graph_.node(inputs[i]).type.shape;
      const char* what = i == 1 ? "scale" : "offset";
      if (bs.size() != data_shape.size())
        fail(op.op_pos, who + ": the " + what + " " + shape_str(bs) + " must have the data's rank (" +
                            std::to_string(data_shape.size()) + ")");
      for (std::size_t d = 0; d < bs.size(); ++d)
        if (bs[d] <= 0 || data_shape[d] % bs[d] != 0)
          fail(op.op_pos, who + ": the " + what + "'s dim " + std::to_string(d) + " (" + std::to_string(bs[d]) +
                              ") does not divide the data's " + shape_str(data_shape) +
                              ": blocks must tile the data");
    }

  Node n;
  n.name = ir_name(out.name, out.pos);
  n.inputs = inputs;
  std::vector<std::pair<std::string, ir::AttrValue>> attrs;
  if (op.op == "quantize") {
    n.op = Op::quantize;
    const auto dt = find({"output_dtype"});
    if (!dt) fail(op.op_pos, who + ": needs output_dtype (\"int8\" or \"uint8\")");
    const MilLiteral* lit = arg_literal(*dt);
    if (!lit) fail(dt->at, who + ": output_dtype must be a const");
    const std::string s = string_of(*lit, "output_dtype of " + who);
    const auto d = ir_dtype_from_mil(s);
    if (!d) fail(lit->pos, who + ": output_dtype '" + s + "' is not int8 or uint8");
    attrs.emplace_back("dtype", *d);
  } else {
    n.op = Op::dequantize;
    if (four_bit) attrs.emplace_back("bits", std::int64_t{4});
  }
  add_node(std::move(n), std::move(attrs), op);
}

// constexpr_lut_to_dense as the IR's LUT form (mil_constexpr.h), from either opset's arguments:
//   iOS18: indices uintN [D0..Dr-1]; lut [T0..Tr-1, 2^N, VECTOR_SIZE]; vector_axis optional
//   iOS16: indices uint8 [M], the N-bit codes packed; lut [2^N]; shape uint32 [r]
void Converter::add_lut_op(const MilOperation& op) {
  const MilVar& out = op.outputs[0];
  const std::string who = op.op + " " + out.name;
  const GivenArgs given = given_args(op);
  const auto get = [&](const char* name) -> const GivenArg& {
    const auto it = given.find(name);
    if (it == given.end()) fail(op.op_pos, who + ": needs its " + name + " argument");
    return it->second;
  };
  for (const auto& [name, a] : given)
    if (name != "indices" && name != "lut" && name != "shape" && name != "vector_axis")
      fail(a.at, who + " has no argument '" + name + "' (its arguments: indices, lut, shape, vector_axis)");
  const GivenArg& lut_arg = get("lut");
  const GivenArg& idx_arg = get("indices");
  const bool ios16 = given.contains("shape");
  const ValueId lut = arg_value(lut_arg, "the LUT of " + who, out.name + "_lut");
  const ir::TensorType lut_type = graph_.node(lut).type;
  if (graph_.node(lut).op != Op::constant) fail(lut_arg.at, who + ": its LUT must be a const");
  if (!is_float(lut_type.dtype))
    fail(lut_arg.at, who + ": a LUT of " + lut_type.str() + " has no IR form here (fp16 and fp32 LUTs do)");
  const std::string idx_dtype = arg_dtype(idx_arg);
  Shape dims;
  std::vector<std::int32_t> codes;
  Shape tables;
  std::int64_t entries = 0;
  if (ios16) {
    const MilLiteral* shape_lit = arg_literal(get("shape"));
    if (!shape_lit) fail(get("shape").at, who + ": shape must be a const");
    for (std::int64_t d : ints_of(*shape_lit, "shape of " + who)) {
      if (d <= 0) fail(shape_lit->pos, who + ": shape " + shape_str(dims) + " has a dimension " + std::to_string(d));
      dims.push_back(d);
    }
    if (lut_type.rank() != 1 || !is_lut_palette_size(lut_type.shape[0], true))
      fail(lut_arg.at, who + ": the LUT " + lut_type.str() + " is not one table of 2, 4, 16, 64 or 256 entries (the iOS16 form)");
    entries = lut_type.shape[0];
    if (idx_dtype != "uint8") fail(idx_arg.at, who + ": the iOS16 form's indices are packed uint8 bytes, not " + idx_dtype);
    const Tensor packed = arg_tensor(idx_arg, "the indices of " + who).contiguous();
    int bits = 0;
    while ((std::int64_t{1} << bits) < entries) ++bits;
    const std::uint64_t n = static_cast<std::uint64_t>(shape_numel(dims));
    const std::uint64_t need = (n * static_cast<std::uint64_t>(bits) + 7) / 8;
    if (packed.rank() != 1 || static_cast<std::uint64_t>(packed.numel()) != need)
      fail(idx_arg.at, who + ": " + std::to_string(packed.numel()) + " bytes of packed indices; " + std::to_string(n) + " " +
                           std::to_string(bits) + "-bit indices of " + shape_str(dims) + " take " + std::to_string(need));
    const std::span<const std::byte> bytes(static_cast<const std::byte*>(packed.raw()), packed.nbytes());
    for (std::uint32_t c : unpack_bits(bytes, bits, static_cast<std::size_t>(n))) codes.push_back(static_cast<std::int32_t>(c));
  } else {
    const std::optional<BlobDType> sub_byte = mil_sub_byte_type(idx_dtype);
    int bits = idx_dtype == "uint8" ? 8 : 0;
    if (sub_byte && *sub_byte != BlobDType::int4) bits = blob_dtype_bits(*sub_byte);
    if (bits == 0) fail(idx_arg.at, who + ": indices of " + idx_dtype + "; the LUT's indices are uint1, uint2, uint3, uint4, uint6 or uint8");
    const Tensor idx = arg_tensor(idx_arg, "the indices of " + who).contiguous();
    dims = idx.shape();
    const Shape& ls = lut_type.shape;
    if (ls.size() != dims.size() + 2)
      fail(lut_arg.at, who + ": the LUT " + lut_type.str() + " needs the indices' rank + 2 (" +
                           std::to_string(dims.size() + 2) + ") dims: tables per axis, entries, vector size");
    entries = ls[ls.size() - 2];
    if (entries != (std::int64_t{1} << bits))
      fail(lut_arg.at, who + ": the LUT has " + std::to_string(entries) + " entries per table; " + idx_dtype +
                           " indices need " + std::to_string(std::int64_t{1} << bits));
    if (ls.back() != 1)
      fail(lut_arg.at, who + ": vector palettization (VECTOR_SIZE " + std::to_string(ls.back()) + ") has no IR form");
    tables.assign(ls.begin(), ls.end() - 2);
    for (std::size_t d = 0; d < dims.size(); ++d)
      if (tables[d] <= 0 || dims[d] % tables[d] != 0)
        fail(lut_arg.at, who + ": the LUT's " + std::to_string(tables[d]) + " tables along axis " + std::to_string(d) +
                             " do not divide the indices' " + std::to_string(dims[d]) + ": tables must tile the weight");
    for (std::int64_t i = 0; i < idx.numel(); ++i) codes.push_back(idx.data<std::uint8_t>()[i]);
  }
  Tensor flat_indices;
  try {
    flat_indices = lut_flat_indices(dims, tables, entries, codes);
  } catch (const Error& e) {
    fail(idx_arg.at, who + ": " + e.what());
  }
  // The flat layout's name is the LUT's, suffixed, as the compiler names it; no MIL value has it.
  const std::string lut_name = graph_.node(lut).name;
  const std::string flat_name = unique_ir_name(lut_name + "_flat");
  ir_names_.emplace(flat_name, "<the flat layout of " + lut_name + ">");
  const ValueId flat = ir::append_op(graph_, Op::reshape, {lut}, {{"shape", std::vector<std::int64_t>{lut_type.numel()}}},
                                     flat_name);
  const std::string idx_name =
      !idx_arg.literal && idx_arg.value->kind == MilValue::Kind::name ? idx_arg.value->name : out.name + "_indices";
  const ValueId indices = const_node(std::move(flat_indices), ir_name(idx_name, idx_arg.at));
  if (!idx_arg.literal && idx_arg.value->kind == MilValue::Kind::name) names_.at(idx_arg.value->name).id = indices;
  Node n;
  n.op = Op::gather;
  n.name = ir_name(out.name, out.pos);
  n.inputs = {flat, indices};
  add_node(std::move(n), {{"axis", std::int64_t{0}}}, op);
}

void Converter::add_op(const MilOperation& op) {
  if (is_quantization_op(op.op)) return add_quantization_op(op);
  const std::optional<Op> irop = ir_op_from_mil(op.op);
  if (!irop) fail(op.op_pos, "MIL op '" + op.op + "' has no IR form");
  const MilOpInfo& m = mil_op_info(*irop);
  const MilVar& out = op.outputs[0];
  const std::string who = op.op + " " + out.name;

  // Each given argument matched to the table, once.
  std::vector<const MilNamedArg*> given(m.args.size(), nullptr);
  for (const MilNamedArg& a : op.args) {
    std::size_t i = 0;
    while (i < m.args.size() && m.args[i].name != a.name) ++i;
    if (i == m.args.size()) {
      std::string known;
      for (const MilArg& k : m.args) known += (known.empty() ? "" : ", ") + std::string(k.name);
      fail(a.pos, op.op + " has no argument '" + a.name + "' (its arguments: " + known + ")");
    }
    if (given[i]) fail(a.pos, "argument '" + a.name + "' of " + op.op + " given twice");
    given[i] = &a;
  }

  Node n;
  n.op = *irop;
  n.name = ir_name(out.name, out.pos);
  std::vector<std::pair<std::string, ir::AttrValue>> attrs;
  std::map<int, ValueId> inputs;
  std::vector<ValueId> tuple;
  std::vector<std::int64_t> begin, size, pad;
  std::string pad_type;
  bool have_pad = false;

  for (std::size_t i = 0; i < m.args.size(); ++i) {
    const MilArg& arg = m.args[i];
    const std::string what = "argument '" + std::string(arg.name) + "' of " + op.op;
    const MilNamedArg* a = given[i];
    if (arg.enc == MilEnc::input || arg.enc == MilEnc::inputs_tuple) {
      if (!a) fail(op.op_pos, who + ": the required " + what + " is missing");
      if (arg.enc == MilEnc::input) {
        if (a->value.kind != MilValue::Kind::name) fail(a->value.pos, what + " must name a value");
        const Defined& d = lookup(a->value.name, a->value.pos);
        if (sub_byte_consts_.contains(d.id))
          fail(a->value.pos, what + ": '" + a->value.name + "' is of a sub-byte type, which only constexpr ops read");
        inputs[arg.input] = d.id;
      } else {
        if (a->value.kind != MilValue::Kind::tuple) fail(a->value.pos, what + " must be a tuple of values, as in (a, b)");
        for (const auto& [name, at] : a->value.tuple) tuple.push_back(lookup(name, at).id);
      }
      continue;
    }
    // An attribute: a named const, an inline literal or the default.
    const MilLiteral* lit = nullptr;
    std::optional<MilLiteral> dflt;
    if (!a) {
      if (arg.default_literal.empty()) fail(op.op_pos, who + ": the required " + what + " is missing");
      dflt = parse_mil_literal(arg.default_literal, "<default>");
      lit = &*dflt;
    } else if (a->value.kind == MilValue::Kind::literal) {
      lit = &a->value.literal;
    } else if (a->value.kind == MilValue::Kind::name) {
      const Defined& d = lookup(a->value.name, a->value.pos);
      if (d.kind != Defined::Kind::constant)
        fail(a->value.pos, what + " must be a const, and '" + a->value.name + "' is not one");
      lit = &const_val(*d.op);
    } else {
      fail(a->value.pos, what + " must be a const or a literal, not a tuple");
    }
    const std::string attr(arg.attr);
    switch (arg.enc) {
      case MilEnc::ints: attrs.emplace_back(attr, ints_of(*lit, what)); break;
      case MilEnc::int32: attrs.emplace_back(attr, int_of(*lit, what)); break;
      case MilEnc::boolean: attrs.emplace_back(attr, bool_of(*lit, what)); break;
      case MilEnc::real: attrs.emplace_back(attr, real_of(*lit, what)); break;
      case MilEnc::dtype_name: {
        const std::string s = string_of(*lit, what);
        const auto dt = ir_dtype_from_mil(s);
        if (!dt) fail(lit->pos, what + ": '" + s + "' is not a dtype the IR has (fp16, fp32, int32, int8, uint8, bool)");
        attrs.emplace_back(attr, *dt);
        break;
      }
      case MilEnc::slice_size: size = ints_of(*lit, what); break;
      case MilEnc::conv_pad: pad = ints_of(*lit, what); have_pad = a != nullptr; break;
      case MilEnc::conv_pad_type: pad_type = string_of(*lit, what); break;
      case MilEnc::always_false:
        if (bool_of(*lit, what)) fail(lit->pos, what + " must be false: the IR has no interleaved concat");
        break;
      case MilEnc::input: case MilEnc::inputs_tuple: break;
    }
    if (arg.enc == MilEnc::ints && attr == "begin") begin = std::get<std::vector<std::int64_t>>(attrs.back().second);
  }

  if (!tuple.empty()) n.inputs = tuple;
  for (const auto& [index, id] : inputs) {
    if (static_cast<std::size_t>(index) != n.inputs.size()) break;
    n.inputs.push_back(id);
  }
  for (ValueId id : n.inputs)
    if (id < 0) fail(op.op_pos, who + ": an input is a const folded into attributes; use it once as a value only");

  // Arguments whose IR attribute depends on the input types.
  auto input_shape = [&](std::size_t i) -> const Shape& { return graph_.node(n.inputs[i]).type.shape; };
  if (*irop == Op::slice) {
    const Shape& xs = input_shape(0);
    if (size.size() != begin.size() || begin.size() != xs.size())
      fail(op.op_pos, who + ": begin and size need one entry per axis of the input (rank " + std::to_string(xs.size()) + ")");
    std::vector<std::int64_t> end(begin.size());
    for (std::size_t d = 0; d < begin.size(); ++d) {
      if (begin[d] < 0 || begin[d] > xs[d] || size[d] < -1 || (size[d] != -1 && size[d] > xs[d] - begin[d]))
        fail(op.op_pos, who + ": begin " + std::to_string(begin[d]) + " and size " + std::to_string(size[d]) +
                            " are outside the input along axis " + std::to_string(d));
      end[d] = size[d] == -1 ? xs[d] : begin[d] + size[d];
    }
    attrs.emplace_back("end", std::move(end));
  }
  if (*irop == Op::conv) {
    std::vector<std::int64_t> pads(4, 0);
    if (pad_type == "custom") {
      if (pad.size() != 4) fail(op.op_pos, who + ": pad needs 4 entries (top, bottom, left, right)");
      pads = pad;
    } else if (pad_type == "valid") {
      for (std::int64_t p : pad)
        if (p != 0 && have_pad) fail(op.op_pos, who + ": pad must be zero with pad_type \"valid\" (use \"custom\")");
    } else if (pad_type == "same") {
      // Output size ceil(in / stride), the padding split with the odd one at the end.
      const Shape& xs = input_shape(0);
      const Shape& ws = input_shape(1);
      std::vector<std::int64_t> st, dl;
      for (const auto& [name, v] : attrs) {
        if (name == "strides") st = std::get<std::vector<std::int64_t>>(v);
        if (name == "dilations") dl = std::get<std::vector<std::int64_t>>(v);
      }
      constexpr std::int64_t kMax = std::int64_t{1} << 20;  // as the conv type rule bounds them
      auto in_range = [&](std::int64_t v) { return v >= 1 && v <= kMax; };
      if (xs.size() != 4 || ws.size() != 4 || st.size() != 2 || dl.size() != 2 || !in_range(st[0]) ||
          !in_range(st[1]) || !in_range(dl[0]) || !in_range(dl[1]) || !in_range(ws[2]) || !in_range(ws[3]))
        fail(op.op_pos, who + ": pad_type \"same\" needs rank-4 x and weight and valid strides and dilations");
      for (std::size_t d = 0; d < 2; ++d) {
        const std::int64_t out_len = (xs[2 + d] + st[d] - 1) / st[d];
        const std::int64_t total = std::max<std::int64_t>(0, (out_len - 1) * st[d] + (ws[2 + d] - 1) * dl[d] + 1 - xs[2 + d]);
        pads[2 * d] = total / 2;
        pads[2 * d + 1] = total - total / 2;
      }
    } else {
      fail(op.op_pos, who + ": pad_type \"" + pad_type + "\" is not one of valid, custom, same");
    }
    attrs.emplace_back("pads", std::move(pads));
  }

  add_node(std::move(n), std::move(attrs), op);
}

// The node of `op` with its inputs set: attributes made, arity and type checked against the
// op's declared output type, added and named.
void Converter::add_node(Node n, std::vector<std::pair<std::string, ir::AttrValue>> attrs, const MilOperation& op) {
  const MilVar& out = op.outputs[0];
  try {
    n.attrs = ir::make_attrs(n.op, std::move(attrs));
    const ir::OpInfo& info = n.info();
    const int arity = static_cast<int>(n.inputs.size());
    if (arity < info.min_inputs || (info.max_inputs >= 0 && arity > info.max_inputs))
      throw Error("takes " + std::to_string(info.min_inputs) + " inputs, given " + std::to_string(arity));
    n.type = ir::infer_type(graph_, n);
  } catch (const Error& e) {
    fail(op.op_pos, ir::describe(n) + ": " + e.what());
  }
  const ir::TensorType declared = ir_type(out.type, op.op + " " + out.name);
  if (declared != n.type)
    fail(out.type.pos, ir::describe(n) + ": declared type " + declared.str() + " but the inputs give " + n.type.str());
  const ValueId id = graph_.add(std::move(n));
  define(out.name, out.pos, {Defined::Kind::op, id, nullptr, {}});
}

Graph Converter::run(const MilAst& ast) {
  if (ast.functions.size() != 1)
    fail(ast.pos, "the program must have exactly one function (main), it has " + std::to_string(ast.functions.size()));
  const MilFunction& f = ast.functions[0];
  if (f.name != "main") fail(f.pos, "the function must be called main, not '" + f.name + "'");

  // Consts read only by attribute arguments are folded; the others become nodes. Which is
  // which needs every use, so it is decided before any node is made.
  std::unordered_map<std::string, bool> value_use;  // name -> used as a tensor value
  for (const MilOperation& op : f.ops) {
    if (op.outputs.size() != 1)
      fail(op.outputs[1].pos, "multi-output op '" + op.op + "' has no IR form (IR nodes have one output)");
    if (op.op == "const") continue;
    if (is_quantization_op(op.op)) {
      for (const MilNamedArg& a : op.args)
        if (a.value.kind == MilValue::Kind::name)
          value_use[a.value.name] |= a.name != "axis" && a.name != "output_dtype" && a.name != "indices" &&
                                     a.name != "shape" && a.name != "vector_axis";
      continue;
    }
    const std::optional<Op> irop = ir_op_from_mil(op.op);
    if (!irop) fail(op.op_pos, "MIL op '" + op.op + "' has no IR form");
    for (const MilNamedArg& a : op.args) {
      bool tensor = false;
      for (const MilArg& arg : mil_op_info(*irop).args)
        if (arg.name == a.name) tensor = arg.enc == MilEnc::input || arg.enc == MilEnc::inputs_tuple;
      if (a.value.kind == MilValue::Kind::name) value_use[a.value.name] |= tensor;
      for (const auto& [name, at] : a.value.tuple) value_use[name] = true;
    }
  }
  for (const auto& [name, at] : f.outputs) value_use[name] = true;

  for (const MilVar& in : f.inputs) {
    Node n;
    n.op = Op::input;
    n.name = ir_name(in.name, in.pos);
    n.type = ir_type(in.type, "input " + in.name);
    define(in.name, in.pos, {Defined::Kind::input, graph_.add(std::move(n)), nullptr, {}});
  }
  for (const MilOperation& op : f.ops) {
    if (op.op == "const") {
      const auto it = value_use.find(op.outputs[0].name);
      add_const(op, it == value_use.end() || it->second);
    } else {
      add_op(op);
    }
  }
  for (const auto& [name, at] : f.outputs) {
    const Defined& d = lookup(name, at);
    if (d.kind == Defined::Kind::input)
      fail(at, "output '" + name + "' is a function input: outputs must be produced in the body");
    graph_.outputs().push_back(d.id);
  }
  try {
    ir::verify(graph_);
  } catch (const Error& e) {
    throw Error::in_file(file_, e.what());
  }
  // Weight files the hardware reads though a field is odd: said once per file, not refused.
  for (const auto& [rel, reader] : blobs_)
    for (const std::string& w : reader.warnings()) std::fprintf(stderr, "warning: %s\n", w.c_str());
  return std::move(graph_);
}

}  // namespace

ir::Graph mil_to_ir(const MilAst& ast, std::string_view file, const std::string& model_folder) {
  return Converter(file, model_folder).run(ast);
}

ir::Graph parse_mil(std::string_view text, std::string_view file, const std::string& model_folder) {
  return mil_to_ir(parse_mil_ast(text, file), file, model_folder);
}

}  // namespace orion::compile
