#include "ir/parser.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/parse_real.h"
#include "ir/lexer.h"
#include "ir/verifier.h"

namespace orion::ir {

namespace {

constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
constexpr std::size_t kMaxRank = 64;
constexpr std::size_t kMaxInputs = 65536;

// A name token: an identifier proper (not the words -inf and -nan).
bool is_name(const Token& t) {
  return t.kind == TokenKind::identifier && !t.text.empty() && is_identifier_start(t.text[0]);
}

std::optional<double> special_real(const Token& t) {
  if (t.kind != TokenKind::identifier) return std::nullopt;
  constexpr double inf = std::numeric_limits<double>::infinity();
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  if (t.text == "inf") return inf;
  if (t.text == "-inf") return -inf;
  if (t.text == "nan") return nan;
  if (t.text == "-nan") return std::copysign(nan, -1.0);
  return std::nullopt;
}

std::string quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '\'';
  out += s;
  out += '\'';
  return out;
}

// A tensor literal met before the node's type, which gives its dtype and shape: where its
// elements start, so that they are read once the type is known.
struct PendingTensor {
  std::size_t attr = 0;  // index in the op's attribute declaration
  Token open;            // the '['
  Lexer::Position first;  // just after the '['
  std::size_t count = 0;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view file) : lex_(text, file), file_(file) {}

  Graph parse();

 private:
  void advance() { tok_ = lex_.next(); }
  [[noreturn]] void fail(const Token& at, const std::string& message) const {
    lex_.fail(at.line, at.column, message);
  }
  [[noreturn]] void expected(const std::string& what) const {
    fail(tok_, "expected " + what + ", found " + token_str(tok_));
  }
  void expect_punct(char c, const std::string& where) {
    if (!tok_.is_punct(c)) expected(std::string("'") + c + "' " + where);
    advance();
  }

  void parse_node();
  void parse_return();
  ValueId lookup(const Token& value) const;
  TensorType parse_type(const std::string& of);
  AttrValue parse_attr_value(const OpInfo& info, const Token& name, int spec_index,
                             std::vector<PendingTensor>& pending);
  std::vector<std::int64_t> parse_int_list(const std::string& of);
  PendingTensor scan_tensor(const std::string& of);
  Tensor read_tensor(const PendingTensor& p, const TensorType& type, const Node& node);
  void read_element(const Token& t, const Tensor& out, std::size_t i);
  float read_float(const Token& t, DType dtype) const;
  std::int64_t read_int(const Token& t, std::string_view what) const;
  double read_real(const Token& t) const;

  Lexer lex_;
  std::string_view file_;
  Token tok_;
  Graph graph_;
  std::unordered_map<std::string_view, ValueId> names_;  // views into the text
  std::vector<std::int64_t> def_line_;                    // per node: the line defining it
};

Graph Parser::parse() {
  advance();
  if (!tok_.is_word("graph")) expected("'graph' at the start of the text");
  advance();
  if (!is_name(tok_)) expected("a graph name after 'graph'");
  graph_.set_name(std::string(tok_.text));
  advance();
  expect_punct('{', "after the graph name");
  while (true) {
    if (tok_.kind == TokenKind::value) {
      parse_node();
    } else if (tok_.is_word("return")) {
      parse_return();
      if (!tok_.is_punct('}')) expected("',' or '}' after the outputs of 'return'");
      break;
    } else if (tok_.is_punct('}')) {
      break;
    } else {
      expected("a node ('%name = op(...) : type'), 'return' or '}'");
    }
  }
  advance();
  if (tok_.kind != TokenKind::end) expected("end of input after the graph's closing '}'");
  try {
    verify(graph_);
  } catch (const Error& e) {
    throw Error::in_file(file_, e.what());
  }
  return std::move(graph_);
}

ValueId Parser::lookup(const Token& value) const {
  const auto it = names_.find(value.text.substr(1));
  if (it == names_.end())
    fail(value, "undefined value " + token_str(value) + " (a value must be defined before it is used)");
  return it->second;
}

void Parser::parse_return() {
  advance();  // 'return'
  if (tok_.kind != TokenKind::value) expected("a value name after 'return'");
  while (true) {
    graph_.outputs().push_back(lookup(tok_));
    advance();
    if (!tok_.is_punct(',')) break;
    advance();
    if (tok_.kind != TokenKind::value) expected("a value name after ',' in the outputs");
  }
}

void Parser::parse_node() {
  const Token name_tok = tok_;
  const std::string_view name = name_tok.text.substr(1);
  if (const auto it = names_.find(name); it != names_.end())
    fail(name_tok, "the value " + token_str(name_tok) + " is already defined at line " +
                       std::to_string(def_line_[static_cast<std::size_t>(it->second)]));
  advance();
  expect_punct('=', "after " + token_str(name_tok));
  if (tok_.kind != TokenKind::identifier) expected("an op name after " + quoted(std::string(name_tok.text) + " ="));
  const Token op_tok = tok_;
  const std::optional<Op> op = op_from_name(op_tok.text);
  if (!op) fail(op_tok, "unknown op " + token_str(op_tok));
  const OpInfo& info = op_info(*op);
  const std::string op_name(info.name);
  advance();
  expect_punct('(', "after the op name " + op_name);

  Node node;
  node.op = *op;
  node.name = std::string(name);
  if (!tok_.is_punct(')')) {
    while (true) {
      if (tok_.kind != TokenKind::value) expected("a value name in the inputs of " + op_name);
      if (node.inputs.size() >= kMaxInputs)
        fail(tok_, "a node has at most " + std::to_string(kMaxInputs) + " inputs");
      node.inputs.push_back(lookup(tok_));
      advance();
      if (!tok_.is_punct(',')) break;
      advance();
    }
  }
  expect_punct(')', "after the inputs of " + op_name);
  const int arity = static_cast<int>(node.inputs.size());
  if (arity < info.min_inputs || (info.max_inputs >= 0 && arity > info.max_inputs)) {
    const std::string want = info.max_inputs < 0 ? "at least " + std::to_string(info.min_inputs)
                             : info.min_inputs == info.max_inputs
                                 ? std::to_string(info.min_inputs)
                                 : std::to_string(info.min_inputs) + " to " + std::to_string(info.max_inputs);
    fail(op_tok, op_name + " takes " + want + (want == "1" ? " input" : " inputs") + ", found " +
                     std::to_string(arity));
  }

  const Token block_tok = tok_;  // the '{', or where it would be
  std::vector<std::pair<std::string, AttrValue>> given;
  std::vector<PendingTensor> pending;
  if (tok_.is_punct('{')) {
    advance();
    if (!tok_.is_punct('}')) {
      while (true) {
        if (!is_name(tok_)) expected("an attribute name in the attributes of " + op_name);
        const Token attr_tok = tok_;
        advance();
        expect_punct('=', "after the attribute name " + token_str(attr_tok));
        AttrValue v = parse_attr_value(info, attr_tok, attr_index(*op, attr_tok.text), pending);
        given.emplace_back(std::string(attr_tok.text), std::move(v));
        if (tok_.is_punct(',')) {
          advance();
          continue;
        }
        if (tok_.is_punct('}')) break;
        expected("',' or '}' after the attribute " + token_str(attr_tok) + " of " + op_name);
      }
    }
    advance();  // '}'
  }
  if (!tok_.is_punct(':')) expected("':' and the type of " + token_str(name_tok));
  advance();
  const Token type_tok = tok_;
  node.type = parse_type(token_str(name_tok));

  try {
    node.attrs = make_attrs(*op, std::move(given));
  } catch (const Error& e) {
    fail(block_tok, e.what());
  }
  for (const PendingTensor& p : pending) node.attrs[p.attr] = read_tensor(p, node.type, node);

  if (info.type_rule) {
    TensorType inferred;
    try {
      inferred = infer_type(graph_, node);
    } catch (const Error& e) {
      fail(op_tok, describe(node) + ": " + e.what());
    }
    if (inferred != node.type)
      fail(type_tok, describe(node) + ": declared type " + node.type.str() + " but the inputs give " +
                         inferred.str());
  }
  const ValueId id = graph_.add(std::move(node));
  names_.emplace(name, id);
  def_line_.push_back(name_tok.line);
}

TensorType Parser::parse_type(const std::string& of) {
  if (!is_name(tok_)) expected("a type such as f32[2, 3] for " + of);
  const Token dtype_tok = tok_;
  const std::optional<DType> dtype = dtype_from_name(tok_.text);
  if (!dtype)
    fail(tok_, "unknown dtype " + token_str(tok_) + " (the dtypes are f32, f16, bf16, i32, i8, u8 and bool)");
  advance();
  expect_punct('[', "after the dtype " + token_str(dtype_tok));
  TensorType type{*dtype, {}};
  bool too_large = false;
  std::int64_t count = 1;  // product of the non-zero dimensions, while at most kMaxElements
  if (!tok_.is_punct(']')) {
    while (true) {
      if (!tok_.is_integer()) expected("a dimension (an integer >= 0) in the shape of " + of);
      const std::int64_t d = read_int(tok_, "dimension");
      if (d < 0) fail(tok_, "dimension " + std::string(tok_.text) + " is negative");
      if (type.shape.size() >= kMaxRank)
        fail(tok_, "a type has at most " + std::to_string(kMaxRank) + " dimensions");
      type.shape.push_back(d);
      if (d > 0) {
        if (count > kMaxElements / d) too_large = true;
        else count *= d;
      }
      advance();
      if (tok_.is_punct(',')) {
        advance();
        continue;
      }
      if (tok_.is_punct(']')) break;
      expected("',' or ']' in the shape of " + of);
    }
  }
  advance();  // ']'
  if (too_large)
    fail(dtype_tok, "type " + type.str() + " is too large: its dimensions multiply to more than 2^40");
  return type;
}

std::int64_t Parser::read_int(const Token& t, std::string_view what) const {
  std::int64_t v = 0;
  const char* end = t.text.data() + t.text.size();
  const auto r = std::from_chars(t.text.data(), end, v);
  if (r.ec == std::errc::result_out_of_range)
    fail(t, std::string(what) + " " + token_str(t) + " does not fit in 64 bits");
  if (r.ec != std::errc() || r.ptr != end) fail(t, "malformed integer " + token_str(t));
  return v;
}

double Parser::read_real(const Token& t) const {
  if (const auto s = special_real(t)) return *s;
  if (t.kind != TokenKind::number) fail(t, "expected a number, inf or nan, found " + token_str(t));
  double v = 0;
  const char* end = t.text.data() + t.text.size();
  const auto r = parse_real(t.text.data(), end, v);
  if (r.ec == std::errc::result_out_of_range)
    fail(t, "number " + token_str(t) + " is out of range for a real (a double)");
  if (r.ec != std::errc() || r.ptr != end) fail(t, "malformed number " + token_str(t));
  return v;
}

AttrValue Parser::parse_attr_value(const OpInfo& info, const Token& name, int spec_index,
                                   std::vector<PendingTensor>& pending) {
  const AttrSpec* spec = spec_index >= 0 ? &info.attrs[static_cast<std::size_t>(spec_index)] : nullptr;
  const std::string of = "attribute " + token_str(name) + " of " + std::string(info.name);
  const Token t = tok_;
  switch (t.kind) {
    case TokenKind::string: {
      advance();
      return unescape_string(t.text);
    }
    case TokenKind::identifier: {
      if (t.text == "true" || t.text == "false") {
        advance();
        return t.text == "true";
      }
      if (const auto s = special_real(t)) {
        advance();
        return *s;
      }
      if (const auto d = dtype_from_name(t.text)) {
        advance();
        return *d;
      }
      if (spec && spec->kind == AttrKind::dtype)
        fail(t, "unknown dtype " + token_str(t) + " for the " + of +
                    " (the dtypes are f32, f16, bf16, i32, i8, u8 and bool)");
      expected("a value for the " + of);
    }
    case TokenKind::number: {
      advance();
      if ((spec && spec->kind == AttrKind::real) || !t.is_integer()) return read_real(t);
      return read_int(t, "integer");
    }
    case TokenKind::punct:
      if (t.is_punct('[')) {
        if (!spec || spec->kind == AttrKind::tensor) {
          // Unknown attributes are read like tensors, whatever they hold: make_attrs rejects
          // the name before the value matters.
          PendingTensor p = scan_tensor(of);
          if (spec) {
            p.attr = static_cast<std::size_t>(spec_index);
            pending.push_back(p);
          }
          return Tensor{};
        }
        return parse_int_list(of);
      }
      break;
    default:
      break;
  }
  expected("a value for the " + of);
}

std::vector<std::int64_t> Parser::parse_int_list(const std::string& of) {
  advance();  // '['
  std::vector<std::int64_t> out;
  if (tok_.is_punct(']')) {
    advance();
    return out;
  }
  while (true) {
    if (!tok_.is_integer()) expected("an integer in the list of the " + of);
    out.push_back(read_int(tok_, "integer"));
    advance();
    if (tok_.is_punct(',')) {
      advance();
      continue;
    }
    if (tok_.is_punct(']')) break;
    expected("',' or ']' in the list of the " + of);
  }
  advance();  // ']'
  return out;
}

PendingTensor Parser::scan_tensor(const std::string& of) {
  PendingTensor p;
  p.open = tok_;
  p.first = lex_.position();
  advance();  // '['
  if (tok_.is_punct(']')) {
    advance();
    return p;
  }
  while (true) {
    const bool element = tok_.kind == TokenKind::number ||
                         (tok_.kind == TokenKind::identifier &&
                          (special_real(tok_) || tok_.text == "true" || tok_.text == "false"));
    if (!element) expected("a tensor element (a number, inf, nan, true or false) in the " + of);
    ++p.count;
    advance();
    if (tok_.is_punct(',')) {
      advance();
      continue;
    }
    if (tok_.is_punct(']')) break;
    expected("',' or ']' in the tensor of the " + of);
  }
  advance();  // ']'
  return p;
}

Tensor Parser::read_tensor(const PendingTensor& p, const TensorType& type, const Node& node) {
  const std::int64_t numel = type.numel();  // at most 2^40: parse_type checked
  if (static_cast<std::uint64_t>(numel) != p.count)
    fail(p.open, describe(node) + ": the value has " + std::to_string(p.count) +
                     (p.count == 1 ? " element" : " elements") + ", the type " + type.str() + " needs " +
                     std::to_string(numel));
  Tensor out(type.dtype, type.shape);
  const Lexer::Position resume = lex_.position();
  lex_.seek(p.first);
  for (std::size_t i = 0; i < p.count; ++i) {
    read_element(lex_.next(), out, i);
    lex_.next();  // ',' or ']', checked by scan_tensor
  }
  lex_.seek(resume);
  return out;
}

float Parser::read_float(const Token& t, DType dtype) const {
  const std::string dt(dtype_name(dtype));
  if (const auto s = special_real(t)) return static_cast<float>(*s);
  if (t.kind != TokenKind::number)
    fail(t, "expected a number, inf or nan for an element of " + dt + ", found " + token_str(t));
  float v = 0;
  const char* end = t.text.data() + t.text.size();
  const auto r = parse_real(t.text.data(), end, v);
  if (r.ec == std::errc::result_out_of_range) fail(t, "value " + token_str(t) + " is out of range for " + dt);
  if (r.ec != std::errc() || r.ptr != end) fail(t, "malformed number " + token_str(t));
  return v;
}

void Parser::read_element(const Token& t, const Tensor& out, std::size_t i) {
  const DType dtype = out.dtype();
  const std::string dt(dtype_name(dtype));
  auto check_half = [&](float f, std::uint16_t h) {
    const bool became_inf = std::isfinite(f) && (h & 0x7fffu) == (dtype == DType::f16 ? 0x7c00u : 0x7f80u);
    const bool became_zero = f != 0 && (h & 0x7fffu) == 0;
    if (became_inf || became_zero) fail(t, "value " + token_str(t) + " is out of range for " + dt);
    return h;
  };
  auto integer = [&](std::int64_t lo, std::int64_t hi) {
    if (!t.is_integer()) fail(t, "expected an integer for an element of " + dt + ", found " + token_str(t));
    const std::int64_t v = read_int(t, "value");
    if (v < lo || v > hi)
      fail(t, "value " + token_str(t) + " is out of range for " + dt + " (" + std::to_string(lo) +
                  " to " + std::to_string(hi) + ")");
    return v;
  };
  switch (dtype) {
    case DType::f32: out.data<float>()[i] = read_float(t, dtype); break;
    case DType::f16: {
      const float f = read_float(t, dtype);
      out.data<std::uint16_t>()[i] = check_half(f, float_to_half(f));
      break;
    }
    case DType::bf16: {
      const float f = read_float(t, dtype);
      out.data<std::uint16_t>()[i] = check_half(f, float_to_bf16(f));
      break;
    }
    case DType::i32:
      out.data<std::int32_t>()[i] = static_cast<std::int32_t>(
          integer(std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()));
      break;
    case DType::i8: out.data<std::int8_t>()[i] = static_cast<std::int8_t>(integer(-128, 127)); break;
    case DType::u8: out.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(integer(0, 255)); break;
    case DType::u32: fail(t, "u32 is a storage type, not an IR element type"); break;
    case DType::boolean:
      if (!t.is_word("true") && !t.is_word("false"))
        fail(t, "expected true or false for an element of bool, found " + token_str(t));
      out.data<std::uint8_t>()[i] = t.is_word("true") ? 1 : 0;
      break;
  }
}

}  // namespace

Graph parse_graph(std::string_view text, std::string_view file) { return Parser(text, file).parse(); }

Graph read_graph_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw Error::from_errno(path, "cannot open", errno);
  std::string text;
  char buf[65536];
  while (true) {
    const std::size_t n = std::fread(buf, 1, sizeof buf, f.get());
    text.append(buf, n);
    if (n < sizeof buf) break;
  }
  if (std::ferror(f.get())) throw Error::from_errno(path, "cannot read", errno);
  return parse_graph(text, path);
}

}  // namespace orion::ir
