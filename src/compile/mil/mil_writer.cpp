#include "compile/mil/mil_writer.h"

#include <filesystem>
#include <functional>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "compile/mil/mil_constexpr.h"
#include "compile/mil/mil_lexer.h"
#include "compile/mil/mil_ops.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/half.h"
#include "ir/verifier.h"

namespace orion::compile {

namespace {

using ir::Graph;
using ir::Node;

constexpr std::string_view kOpIndent = "            ";

bool is_reserved(std::string_view s) {
  for (std::string_view w : {"program", "func", "const", "tensor", "dict", "list", "tuple", "BLOBFILE",
                             "true", "false", "inf", "nan"})
    if (s == w) return true;
  return is_mil_dtype_name(s);
}

std::string join_ints(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s;
}

class Writer {
 public:
  Writer(const Graph& g, const MilWriteOptions& o) : g_(g), opt_(o), ios18_(o.dialect == MilDialect::ios18) {}

  MilProgram run();

 private:
  std::string unique(std::string_view ir_name);
  std::string dtype(DType t, const Node& who) const;
  std::string type(const ir::TensorType& t, const Node& who) const;
  std::string scalar(std::string_view dt, const std::string& text) const {
    return ios18_ ? std::string(dt) + "(" + text + ")" : "tensor<" + std::string(dt) + ", []>(" + text + ")";
  }
  std::string string_lit(std::string_view s) const { return scalar("string", mil_quote(s)); }
  std::string int_list(const std::vector<std::int64_t>& v, const Node& who) const;
  std::string element(const Tensor& t, std::size_t i) const;
  void line_const(const std::string& type_text, const std::string& name, const std::string& val);
  // BLOBFILE(path = ..., offset = ...) of the blob `add` appends to the file a tensor named `var`
  // goes to.
  std::string blobfile(const std::string& var, const std::function<std::uint64_t(WeightBlobWriter&)>& add);
  std::string blob_of(const Tensor& t, const std::string& var);
  void emit_const_node(const Node& n, const std::string& var);
  void emit_op(const Node& n, const std::string& var);
  std::string arg_const(const Node& n, const std::string& var, const MilArg& arg);
  // The compile-time weight forms (mil_constexpr.h): which consts the MIL stores packed, which
  // nodes a LUT form absorbs; then their lines.
  void find_constexpr_forms();
  void mark_sub_byte(ir::ValueId id, BlobDType type, const Node& user);
  void emit_sub_byte_const(const Node& n, const std::string& var, BlobDType type);
  void emit_lut_table(const LutForm& f, const std::string& var);
  void emit_lut_indices(const LutForm& f, const std::string& var);
  void emit_lut(const LutForm& f, const std::string& var);

  const Graph& g_;
  const MilWriteOptions& opt_;
  bool ios18_;
  std::unordered_set<std::string> used_;
  std::vector<std::string> var_;
  std::unordered_map<ir::ValueId, BlobDType> sub_byte_;  // consts stored packed (4-bit data, zero points)
  std::unordered_map<ir::ValueId, LutForm> luts_;        // LUT forms by their gather
  std::unordered_map<ir::ValueId, ir::ValueId> lut_part_;  // lut, flat and indices -> their gather
  std::string body_;
  MilProgram prog_;
};

std::string Writer::unique(std::string_view ir_name) {
  std::string base = mil_identifier(ir_name);
  std::string name = base;
  for (int k = 1; used_.count(name); ++k) name = base + "_" + std::to_string(k);
  used_.insert(name);
  return name;
}

std::string Writer::dtype(DType t, const Node& who) const {
  const auto name = mil_dtype_name(t);
  if (!name) throw Error(describe(who) + ": dtype " + std::string(dtype_name(t)) + " has no MIL spelling");
  return std::string(*name);
}

std::string Writer::type(const ir::TensorType& t, const Node& who) const {
  const std::string dt = dtype(t.dtype, who);
  if (t.shape.empty()) return ios18_ ? dt : "tensor<" + dt + ", []>";
  return "tensor<" + dt + ", [" + join_ints(t.shape) + "]>";
}

std::string Writer::int_list(const std::vector<std::int64_t>& v, const Node& who) const {
  for (std::int64_t x : v)
    if (x < std::numeric_limits<std::int32_t>::min() || x > std::numeric_limits<std::int32_t>::max())
      throw Error(describe(who) + ": " + std::to_string(x) + " does not fit MIL's int32");
  return "tensor<int32, [" + std::to_string(v.size()) + "]>([" + join_ints(v) + "])";
}

std::string Writer::element(const Tensor& t, std::size_t i) const {
  switch (t.dtype()) {
    case DType::f16: return mil_float(half_to_float(t.data<std::uint16_t>()[i]));
    case DType::f32: return mil_float(t.data<float>()[i]);
    case DType::i32: return std::to_string(t.data<std::int32_t>()[i]);
    case DType::i8: return std::to_string(t.data<std::int8_t>()[i]);
    case DType::u8: return std::to_string(t.data<std::uint8_t>()[i]);
    case DType::boolean: return t.data<std::uint8_t>()[i] ? "true" : "false";
    case DType::bf16: case DType::u32: break;
  }
  return "?";
}

void Writer::line_const(const std::string& type_text, const std::string& name, const std::string& val) {
  body_ += kOpIndent;
  body_ += type_text + " " + name + " = const()[name = " + string_lit(name) + ", val = " + val + "];\n";
}

std::string Writer::blobfile(const std::string& var, const std::function<std::uint64_t(WeightBlobWriter&)>& add) {
  std::string path = opt_.blob_path;
  WeightBlobWriter* blob = &prog_.weights;
  if (opt_.one_file_per_tensor) {
    path = "@model_path/weights/" + var + ".bin";
    blob = &prog_.tensor_files.emplace_back(path, WeightBlobWriter{}).second;
  }
  const std::uint64_t at = add(*blob);
  return "BLOBFILE(path = " + string_lit(path) + ", offset = " + scalar("uint64", std::to_string(at)) + ")";
}

// fp16, fp32, int8 and uint8 tensors as their blob type.
std::string Writer::blob_of(const Tensor& t, const std::string& var) {
  return blobfile(var, [&](WeightBlobWriter& w) {
    switch (t.dtype()) {
      case DType::f16: return w.add_fp16(t.span<const std::uint16_t>());
      case DType::f32: return w.add_fp32(t.span<const float>());
      default:
        return w.add(t.dtype() == DType::i8 ? BlobDType::int8 : BlobDType::uint8,
                     std::span<const std::byte>(static_cast<const std::byte*>(t.raw()), t.nbytes()));
    }
  });
}

void Writer::emit_const_node(const Node& n, const std::string& var) {
  const Tensor t = n.attr<Tensor>("value").contiguous();
  const std::string dt = dtype(t.dtype(), n);
  const std::string ty = type(n.type, n);
  std::string val;
  if (t.rank() == 0) {
    val = scalar(dt, element(t, 0));
  } else if ((t.dtype() == DType::f16 || t.dtype() == DType::i8 || t.dtype() == DType::u8) &&
             t.numel() > opt_.max_inline_elements) {
    val = ty + "(" + blob_of(t, var) + ")";
  } else {
    val = ty + "([";
    for (std::size_t i = 0; i < static_cast<std::size_t>(t.numel()); ++i) {
      if (i) val += ", ";
      val += element(t, i);
    }
    val += "])";
  }
  line_const(ty, var, val);
}

void Writer::mark_sub_byte(ir::ValueId id, BlobDType type, const Node& user) {
  const auto [it, fresh] = sub_byte_.emplace(id, type);
  if (!fresh && it->second != type)
    throw Error(describe(g_.node(id)) + ": stored as " + std::string(blob_dtype_name(it->second)) + " for one dequantize and " +
                std::string(blob_dtype_name(type)) + " for " + describe(user));
}

void Writer::find_constexpr_forms() {
  for (ir::ValueId id = 0; id < g_.size(); ++id) {
    const Node& n = g_.node(id);
    if (n.op == ir::Op::dequantize && n.attr_int("bits") == 4) {
      const std::string who = describe(n) + " (4-bit constexpr_blockwise_shift_scale)";
      if (!is_constant_dequantize(g_, id)) throw Error(who + ": its data, scale and zero point must be consts");
      if (!ios18_)
        throw Error(who + ": int4 and uint4 data are an iOS18 form; the ios16 dialect has no 4-bit dequantize "
                    "(palettize instead: constexpr_lut_to_dense)");
      const ir::TensorType& data = g_.node(n.inputs[0]).type;
      for (std::size_t i = 1; i < n.inputs.size(); ++i)
        if (g_.node(n.inputs[i]).type.rank() != data.rank())
          throw Error(who + ": " + (i == 1 ? "the scale " : "the zero point ") + g_.node(n.inputs[i]).type.str() +
                      " must have the data's rank (one value per block)");
      const BlobDType t = data.dtype == DType::i8 ? BlobDType::int4 : BlobDType::uint4;
      mark_sub_byte(n.inputs[0], t, n);
      if (n.inputs.size() > 2 && !is_float(g_.node(n.inputs[2]).type.dtype)) {
        if (g_.node(n.inputs[2]).type.dtype != data.dtype)
          throw Error(who + ": an integer zero point must have the data's type (" + std::string(blob_dtype_name(t)) + ")");
        mark_sub_byte(n.inputs[2], t, n);
      }
    }
    if (const std::optional<LutForm> f = lut_form(g_, id)) {
      if (!ios18_ && !f->ios16)
        for (std::int64_t tables : f->tables)
          if (tables != 1)
            throw Error(describe(n) + " (constexpr_lut_to_dense): a LUT per block of " + shape_str(f->tables) +
                        " is the iOS18 form; the ios16 dialect takes one LUT per weight");
      luts_.emplace(id, *f);
      for (ir::ValueId part : {f->lut, f->flat, f->indices}) lut_part_[part] = id;
    }
  }
  // Each const stored packed, and each part of a LUT form, is read by its own op alone: the
  // MIL holds it in a form only that op reads.
  for (ir::ValueId id = 0; id < g_.size(); ++id) {
    const Node& n = g_.node(id);
    for (ir::ValueId in : n.inputs) {
      if (sub_byte_.contains(in) && !(n.op == ir::Op::dequantize && n.attr_int("bits") == 4))
        throw Error(describe(g_.node(in)) + " holds 4-bit values stored packed, and " + describe(n) + " reads it too");
      const auto part = lut_part_.find(in);
      if (part == lut_part_.end()) continue;
      const LutForm& f = luts_.at(part->second);
      const bool own = (in == f.lut && id == f.flat) || (id == f.gather && (in == f.flat || in == f.indices));
      if (!own) throw Error(describe(g_.node(in)) + " is part of the LUT of " + describe(g_.node(f.gather)) + ", and " +
                            describe(n) + " reads it too");
    }
  }
  for (ir::ValueId out : g_.outputs())
    if (sub_byte_.contains(out) || lut_part_.contains(out))
      throw Error(describe(g_.node(out)) + " is a part of a compile-time weight and cannot be an output");
}

void Writer::emit_sub_byte_const(const Node& n, const std::string& var, BlobDType type) {
  const Tensor t = n.attr<Tensor>("value").contiguous();
  std::vector<std::int32_t> v(static_cast<std::size_t>(t.numel()));
  const bool is_signed = t.dtype() == DType::i8;
  const void* data = t.raw();
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = is_signed ? static_cast<const std::int8_t*>(data)[i] : static_cast<const std::uint8_t*>(data)[i];
    if (v[i] < sub_byte_min(type) || v[i] > sub_byte_max(type))
      throw Error(describe(n) + ": " + std::string(blob_dtype_name(type)) + " value " + std::to_string(v[i]) + " at element " +
                  std::to_string(i) + " is outside [" + std::to_string(sub_byte_min(type)) + ", " +
                  std::to_string(sub_byte_max(type)) + "] (data of a 4-bit dequantize)");
  }
  const std::string ty = "tensor<" + std::string(blob_dtype_name(type)) + ", [" + join_ints(t.shape()) + "]>";
  line_const(ty, var, ty + "(" + blobfile(var, [&](WeightBlobWriter& w) { return w.add_packed(type, v); }) + ")");
}

// The iOS18 LUT [T0..Tr-1, K, 1] (the iOS16 form's [K] gets unit table dims), always in the
// blob, as programs that ran held it.
void Writer::emit_lut_table(const LutForm& f, const std::string& var) {
  const Node& n = g_.node(f.lut);
  const Tensor t = n.attr<Tensor>("value").contiguous();
  Shape shape = f.tables;
  if (f.ios16) shape.assign(g_.node(f.indices).type.rank(), 1);
  shape.push_back(f.entries);
  shape.push_back(1);
  const std::string ty = "tensor<" + dtype(t.dtype(), n) + ", [" + join_ints(shape) + "]>";
  line_const(ty, var, ty + "(" + blob_of(t, var) + ")");
}

void Writer::emit_lut_indices(const LutForm& f, const std::string& var) {
  const std::vector<std::int32_t> codes = lut_codes(g_, f);
  const std::string ty = "tensor<uint" + std::to_string(f.bits) + ", [" + join_ints(g_.node(f.indices).type.shape) + "]>";
  line_const(ty, var, ty + "(" + blobfile(var, [&](WeightBlobWriter& w) {
               if (f.bits < 8) return w.add_packed(*mil_sub_byte_type("uint" + std::to_string(f.bits)), codes);
               std::vector<std::byte> b(codes.size());
               for (std::size_t i = 0; i < codes.size(); ++i) b[i] = static_cast<std::byte>(codes[i]);
               return w.add(BlobDType::uint8, b);
             }) + ")");
}

void Writer::emit_lut(const LutForm& f, const std::string& var) {
  const Node& n = g_.node(f.gather);
  const std::string ty = type(n.type, n);
  body_ += kOpIndent;
  if (ios18_) {
    body_ += ty + " " + var + " = constexpr_lut_to_dense(indices = " + var_[static_cast<std::size_t>(f.indices)] +
             ", lut = " + var_[static_cast<std::size_t>(f.lut)] + ")[name = " + string_lit(var) + "];\n";
    return;
  }
  // The iOS16 form: every argument in the attribute block, the indices packed into uint8 bytes
  // and the output's shape given, as the iOS16 op takes them.
  const std::vector<std::int32_t> codes = lut_codes(g_, f);
  const PackedBits packed = pack_bits(codes, f.bits);
  const Tensor lut = g_.node(f.lut).attr<Tensor>("value").contiguous();
  // One file per tensor names them after the IR's LUT and indices consts, which have no line.
  const std::string idx_blob = blobfile(var_[static_cast<std::size_t>(f.indices)],
                                        [&](WeightBlobWriter& w) { return w.add(BlobDType::uint8, packed.bytes); });
  body_ += ty + " " + var + " = constexpr_lut_to_dense()[indices = tensor<uint8, [" + std::to_string(packed.bytes.size()) +
           "]>(" + idx_blob + "), lut = tensor<" + dtype(lut.dtype(), n) + ", [" + std::to_string(f.entries) + "]>(" +
           blob_of(lut, var_[static_cast<std::size_t>(f.lut)]) + "), name = " + string_lit(var) + ", shape = tensor<uint32, [" +
           std::to_string(n.type.rank()) + "]>([" + join_ints(n.type.shape) + "])];\n";
}

std::string Writer::arg_const(const Node& n, const std::string& var, const MilArg& arg) {
  const std::string name = unique(var + "_" + std::string(arg.name));
  std::string ty, val;
  switch (arg.enc) {
    case MilEnc::ints: case MilEnc::conv_pad: {
      const auto& v = n.attr_ints(arg.attr);
      ty = "tensor<int32, [" + std::to_string(v.size()) + "]>";
      val = int_list(v, n);
      break;
    }
    case MilEnc::slice_size: {
      const auto& b = n.attr_ints("begin");
      const auto& e = n.attr_ints("end");
      std::vector<std::int64_t> size(b.size());
      for (std::size_t i = 0; i < b.size(); ++i) size[i] = e[i] - b[i];
      ty = "tensor<int32, [" + std::to_string(size.size()) + "]>";
      val = int_list(size, n);
      break;
    }
    case MilEnc::int32: {
      const std::int64_t v = n.attr_int(arg.attr);
      ty = ios18_ ? "int32" : "tensor<int32, []>";
      int_list({v}, n);  // range check
      val = scalar("int32", std::to_string(v));
      break;
    }
    case MilEnc::boolean: case MilEnc::always_false: {
      const bool v = arg.enc == MilEnc::boolean && n.attr_bool(arg.attr);
      ty = ios18_ ? "bool" : "tensor<bool, []>";
      val = scalar("bool", v ? "true" : "false");
      break;
    }
    case MilEnc::real: {
      const DType xt = g_.node(n.inputs[0]).type.dtype;
      const std::string dt = dtype(xt, n);
      const auto f = static_cast<float>(n.attr_real(arg.attr));
      const double v = xt == DType::f16 ? half_to_float(float_to_half(f)) : f;
      ty = ios18_ ? dt : "tensor<" + dt + ", []>";
      val = scalar(dt, mil_float(v));
      break;
    }
    case MilEnc::dtype_name: case MilEnc::conv_pad_type: {
      std::string s;
      if (arg.enc == MilEnc::dtype_name) {
        s = dtype(n.attr<DType>(arg.attr), n);
      } else {
        bool zero = true;
        for (std::int64_t p : n.attr_ints(arg.attr)) zero = zero && p == 0;
        s = zero ? "valid" : "custom";
      }
      ty = ios18_ ? "string" : "tensor<string, []>";
      val = string_lit(s);
      break;
    }
    case MilEnc::input: case MilEnc::inputs_tuple: break;
  }
  line_const(ty, name, val);
  return name;
}

void Writer::emit_op(const Node& n, const std::string& var) {
  const bool runtime_dequantize =
      n.op == ir::Op::dequantize && g_.node(n.inputs[0]).op != ir::Op::constant;
  const MilOpInfo& m = runtime_dequantize ? mil_runtime_dequantize() : mil_op_info(n.op);
  std::string args;
  for (const MilArg& arg : m.args) {
    // An optional input the node does not have (dequantize's zero point) is left out.
    if (arg.enc == MilEnc::input && static_cast<std::size_t>(arg.input) >= n.inputs.size()) continue;
    if (!args.empty()) args += ", ";
    args += arg.name;
    args += " = ";
    if (arg.enc == MilEnc::input) {
      args += var_[static_cast<std::size_t>(n.inputs[static_cast<std::size_t>(arg.input)])];
    } else if (arg.enc == MilEnc::inputs_tuple) {
      args += '(';
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        if (i) args += ", ";
        args += var_[static_cast<std::size_t>(n.inputs[i])];
      }
      args += ')';
    } else {
      args += arg_const(n, var, arg);
    }
  }
  body_ += kOpIndent;
  body_ += type(n.type, n) + " " + var + " = " + std::string(m.mil_name) + "(" + args + ")[name = " +
           string_lit(var) + "];\n";
}

MilProgram Writer::run() {
  ir::verify(g_);
  find_constexpr_forms();
  // Value names first, in node order, so that they keep their names ahead of the consts made
  // for arguments.
  for (const Node& n : g_.nodes()) {
    const MilOpInfo& m = mil_op_info(n.op);
    if (n.op == ir::Op::param)
      throw Error(describe(n) + ": a param has no MIL form: the ANE bakes weights in, so it must be "
                  "a const (or an input) before the graph is written as MIL");
    if (n.op != ir::Op::input && m.mil_name.empty() && !luts_.contains(static_cast<ir::ValueId>(var_.size())))
      throw Error(describe(n) + ": op " + std::string(n.info().name) +
                  " has no MIL form; it must be legalised first (rewritten into ops the ANE runs)");
    var_.push_back(unique(n.name));
  }
  std::string params;
  for (std::size_t i = 0; i < var_.size(); ++i) {
    const Node& n = g_.nodes()[i];
    if (n.op == ir::Op::input) {
      if (!params.empty()) params += ", ";
      params += type(n.type, n) + " " + var_[i];
      continue;
    }
    const auto id = static_cast<ir::ValueId>(i);
    if (const auto part = lut_part_.find(id); part != lut_part_.end()) {
      // The flat reshape is the LUT's layout in the IR alone; the iOS16 op holds its LUT and
      // indices itself.
      const LutForm& f = luts_.at(part->second);
      if (ios18_ && id == f.lut) emit_lut_table(f, var_[i]);
      if (ios18_ && id == f.indices) emit_lut_indices(f, var_[i]);
    } else if (const auto lut = luts_.find(id); lut != luts_.end()) {
      emit_lut(lut->second, var_[i]);
    } else if (const auto sb = sub_byte_.find(id); sb != sub_byte_.end()) {
      emit_sub_byte_const(n, var_[i], sb->second);
    } else if (n.op == ir::Op::constant) {
      emit_const_node(n, var_[i]);
    } else {
      emit_op(n, var_[i]);
    }
  }
  std::string outs;
  for (ir::ValueId id : g_.outputs()) {
    const Node& n = g_.node(id);
    if (n.op == ir::Op::input)
      throw Error(describe(n) + ": a graph output must be produced in the body; the ANE rejects "
                  "returning an input");
    if (!outs.empty()) outs += ", ";
    outs += var_[static_cast<std::size_t>(id)];
  }
  const MilDialectText& d = dialect_text(opt_.dialect);
  std::string& t = prog_.text;
  t += d.program;
  t += '\n';
  t += d.build_info;
  t += "\n{\n    func main<";
  t += d.opset;
  t += ">(" + params + ") {\n" + body_ + "        } -> (" + outs + ");\n}\n";
  return std::move(prog_);
}

}  // namespace

std::string mil_identifier(std::string_view ir_name) {
  std::string s(ir_name);
  for (char& c : s)
    if (c == '.') c = '_';
  if (is_reserved(s)) s += '_';
  return s;
}

MilProgram write_mil(const ir::Graph& graph, const MilWriteOptions& options) {
  return Writer(graph, options).run();
}

}  // namespace orion::compile

namespace orion::compile {

void write_model_folder(const MilProgram& program, const std::string& folder, const MilWriteOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw Error::in_file(folder, "cannot create the folder: " + ec.message());
  const auto write_blob = [&](const std::string& path, const WeightBlobWriter& w) {
    constexpr std::string_view kPrefix = "@model_path/";
    if (path.compare(0, kPrefix.size(), kPrefix) != 0)
      throw Error("blob path '" + path + "' does not start with @model_path/");
    const fs::path blob = fs::path(folder) / path.substr(kPrefix.size());
    fs::create_directories(blob.parent_path(), ec);
    if (ec) throw Error::in_file(blob.parent_path().string(), "cannot create the folder: " + ec.message());
    w.write(blob.string());
  };
  if (program.weights.count() > 0) write_blob(options.blob_path, program.weights);
  for (const auto& [path, w] : program.tensor_files) write_blob(path, w);
  write_file_atomic((fs::path(folder) / "model.mil").string(), program.text);
}

}  // namespace orion::compile
