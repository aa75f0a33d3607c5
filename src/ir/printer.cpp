#include "ir/printer.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/half.h"
#include "ir/lexer.h"

namespace orion::ir {

namespace {

// inf, -inf, nan and -nan: the spellings of the values that have no decimal one.
bool append_special(std::string& out, double v) {
  if (std::isnan(v)) {
    out += std::signbit(v) ? "-nan" : "nan";
    return true;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-inf" : "inf";
    return true;
  }
  return false;
}

// The shortest decimal that reads back as the same float.
void append_float(std::string& out, float v) {
  if (append_special(out, v)) return;
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// The shortest decimal that reads back as the same double, always with '.' or an exponent so
// that it reads as a real and not as an integer.
void append_real(std::string& out, double v) {
  if (append_special(out, v)) return;
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  const std::string_view s(buf, static_cast<std::size_t>(r.ptr - buf));
  out += s;
  if (s.find_first_of(".e") == std::string_view::npos) out += ".0";
}

template <class I> void append_int(std::string& out, I v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// The elements of a tensor, flat and in row-major order, by the tensor's own dtype.
void append_tensor(std::string& out, const Tensor& tensor) {
  if (!tensor.defined()) {
    out += "<undefined>";
    return;
  }
  const Tensor t = tensor.contiguous();
  const auto n = static_cast<std::size_t>(t.numel());
  out += '[';
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out += ", ";
    switch (t.dtype()) {
      case DType::f32: append_float(out, t.data<float>()[i]); break;
      case DType::f16: append_float(out, half_to_float(t.data<std::uint16_t>()[i])); break;
      case DType::bf16: append_float(out, bf16_to_float(t.data<std::uint16_t>()[i])); break;
      case DType::i32: append_int(out, t.data<std::int32_t>()[i]); break;
      case DType::i8: append_int(out, static_cast<int>(t.data<std::int8_t>()[i])); break;
      case DType::u8: append_int(out, static_cast<unsigned>(t.data<std::uint8_t>()[i])); break;
      case DType::boolean: out += t.data<std::uint8_t>()[i] ? "true" : "false"; break;
      case DType::u32: append_int(out, t.data<std::uint32_t>()[i]); break;
    }
  }
  out += ']';
}

void append_attr(std::string& out, const AttrValue& value) {
  switch (attr_kind_of(value)) {
    case AttrKind::integer: append_int(out, std::get<std::int64_t>(value)); break;
    case AttrKind::real: append_real(out, std::get<double>(value)); break;
    case AttrKind::boolean: out += std::get<bool>(value) ? "true" : "false"; break;
    case AttrKind::string: out += quote_string(std::get<std::string>(value)); break;
    case AttrKind::ints: {
      const auto& v = std::get<std::vector<std::int64_t>>(value);
      out += '[';
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        append_int(out, v[i]);
      }
      out += ']';
      break;
    }
    case AttrKind::dtype: out += dtype_name(std::get<DType>(value)); break;
    case AttrKind::tensor: append_tensor(out, std::get<Tensor>(value)); break;
  }
}

void append_ref(std::string& out, const Graph& graph, ValueId id) {
  if (id >= 0 && id < graph.size()) {
    out += '%';
    out += graph.node(id).name;
  } else {
    out += "%<#" + std::to_string(id) + ">";
  }
}

}  // namespace

std::string print_graph(const Graph& graph) {
  std::string out = "graph " + graph.name() + " {\n";
  for (const Node& n : graph.nodes()) {
    const OpInfo& info = n.info();
    out += "  %";
    out += n.name;
    out += " = ";
    out += info.name;
    out += '(';
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      if (i) out += ", ";
      append_ref(out, graph, n.inputs[i]);
    }
    out += ')';
    // Every stored attribute, named by the op's declaration; a node with more values than the
    // op declares (which the verifier rejects) shows the extra ones under the name '?'.
    if (!n.attrs.empty()) {
      out += " {";
      for (std::size_t i = 0; i < n.attrs.size(); ++i) {
        if (i) out += ", ";
        out += i < info.attrs.size() ? info.attrs[i].name : std::string_view("?");
        out += " = ";
        append_attr(out, n.attrs[i]);
      }
      out += '}';
    }
    out += " : ";
    out += n.type.str();
    out += '\n';
  }
  if (!graph.outputs().empty()) {
    out += "  return ";
    for (std::size_t i = 0; i < graph.outputs().size(); ++i) {
      if (i) out += ", ";
      append_ref(out, graph, graph.outputs()[i]);
    }
    out += '\n';
  }
  out += "}\n";
  return out;
}

}  // namespace orion::ir
