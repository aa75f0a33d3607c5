// The IR text form: exact spelling of the printer, and print -> parse -> print round trips for
// every op of the op table and for tensor data of every dtype, special values included.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/half.h"
#include "ir/lexer.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir_test_util.h"
#include "test_graphs.h"

namespace orion::ir {
namespace {

using testing::add_node;
using testing::error_of;
using testing::expect_same_graph;
using testing::graph_using;
using testing::same_attr;

// Prints `g`, parses the text, prints again: the texts must be identical and the parsed graph
// equal to `g` node for node. Returns the text.
std::string round_trip(const Graph& g) {
  const std::string text = print_graph(g);
  Graph parsed;
  try {
    parsed = parse_graph(text, "round_trip");
  } catch (const Error& e) {
    ADD_FAILURE() << "the printed text does not parse: " << e.what() << "\n" << text;
    return text;
  }
  expect_same_graph(g, parsed);
  EXPECT_EQ(print_graph(parsed), text);
  return text;
}

template <class T> Tensor tensor_of(DType dtype, Shape shape, const std::vector<T>& elements) {
  Tensor t(dtype, std::move(shape));
  EXPECT_EQ(static_cast<std::size_t>(t.numel()), elements.size());
  if (!elements.empty()) std::memcpy(t.raw(), elements.data(), elements.size() * sizeof(T));  // null for none
  return t;
}

TEST(PrinterParser, EveryOpRoundTrips) {
  for (const OpInfo& info : all_ops()) {
    SCOPED_TRACE(std::string(info.name));
    const std::optional<Graph> g = graph_using(info.op);
    ASSERT_TRUE(g.has_value()) << "graph_using() has no graph for op " << info.name << ": add one";
    // The graph uses the op, and its optional attributes are not at their defaults (so the
    // round trip would notice an attribute the parser replaced by its default).
    const std::vector<ValueId> uses = g->nodes_of(info.op);
    ASSERT_FALSE(uses.empty());
    for (ValueId id : uses) {
      const Node& n = g->node(id);
      ASSERT_EQ(n.attrs.size(), info.attrs.size());
      for (std::size_t k = 0; k < info.attrs.size(); ++k) {
        if (info.attrs[k].required) continue;
        EXPECT_FALSE(same_attr(n.attrs[k], attr_default(info.attrs[k])))
            << "attribute " << info.attrs[k].name << " is at its default";
      }
    }
    const std::string text = round_trip(*g);
    EXPECT_NE(text.find(" = " + std::string(info.name) + "("), std::string::npos) << text;
    // All attributes are printed, in declaration order.
    const Node& n = g->node(uses.front());
    const std::size_t line_start = text.find("%" + n.name + " = ");
    ASSERT_NE(line_start, std::string::npos);
    const std::string line = text.substr(line_start, text.find('\n', line_start) - line_start);
    std::size_t last = 0;
    for (const AttrSpec& spec : info.attrs) {
      const std::size_t at = line.find(std::string(spec.name) + " = ");
      ASSERT_NE(at, std::string::npos) << spec.name << " missing in " << line;
      EXPECT_GT(at, last) << spec.name << " out of order in " << line;
      last = at;
    }
    EXPECT_EQ(line.find('{') != std::string::npos, !info.attrs.empty()) << line;
  }
}

TEST(PrinterParser, ExactText) {
  // Every line below is written from the grammar, not copied from the printer's output.
  Builder b("mlp.v2");
  const Value x = b.input("x", DType::f32, {2, 4});
  const Value w = b.param("w", DType::f32, {4, 3});
  const Value h = b.name(b.matmul(x, w), "h");
  const Value c = b.constant(Tensor::from_floats({3}, std::vector<float>{0.5f, -2.0f, 1e-5f}));
  const Value y = b.name(b.add(h, c), "y");
  const Value s = b.name(b.softmax(y), "s");
  const Value r = b.name(b.rms_norm(s, b.param("g", DType::f32, {3})), "r");
  const Value cl = b.name(b.clamp(r, 0, 100), "cl");
  const Value sc = b.name(b.scalar(2.0f, DType::f16), "two");
  const Value p = b.name(b.reshape(b.mul(b.cast(cl, DType::f16), sc), {-1}), "p");
  b.output(p);
  b.output(h);
  const std::string want =
      "graph mlp.v2 {\n"
      "  %x = input() : f32[2, 4]\n"
      "  %w = param() : f32[4, 3]\n"
      "  %h = matmul(%x, %w) {transpose_x = false, transpose_y = false} : f32[2, 3]\n"
      "  %const_1 = const() {value = [0.5, -2, 1e-05]} : f32[3]\n"
      "  %y = add(%h, %const_1) : f32[2, 3]\n"
      "  %s = softmax(%y) {axis = -1} : f32[2, 3]\n"
      "  %g = param() : f32[3]\n"
      "  %r = rms_norm(%s, %g) {epsilon = 1e-06} : f32[2, 3]\n"
      "  %cl = clamp(%r) {min = 0.0, max = 100.0} : f32[2, 3]\n"
      "  %two = const() {value = [2]} : f16[]\n"
      "  %cast_7 = cast(%cl) {dtype = f16} : f16[2, 3]\n"
      "  %mul_8 = mul(%cast_7, %two) : f16[2, 3]\n"
      "  %p = reshape(%mul_8) {shape = [-1]} : f16[6]\n"
      "  return %p, %h\n"
      "}\n";
  const Graph g = b.finish();
  EXPECT_EQ(print_graph(g), want);
  round_trip(g);
}

TEST(PrinterParser, ParsesHandWrittenText) {
  // Comments, free spacing, attributes in another order, optional attributes left out, an
  // integer for a real: the same graph as the builder makes.
  const std::string text =
      "# a test graph\n"
      "graph g {   # trailing comment\n"
      "  %x=input():f32[2,3]\n"
      "\t%h = matmul( %x , %w.t )\n"
      "         {transpose_y = true} : f32[2, 2]  # x @ w^T\n"
      "  %s = softmax(%h) : f32[2,2]\n"
      "  %c = clamp(%s) {max = 1, min = -1} : f32[2, 2]\n"
      "  return %c\n"
      "}\n";
  // %w.t is used before it is defined: an error; define it first.
  EXPECT_NE(error_of([&] { parse_graph(text, "t"); }).find("t:4:20: undefined value '%w.t'"),
            std::string::npos);
  std::string fixed = text;
  fixed.insert(fixed.find("\t%h"), "  %w.t = param() : f32[2, 3]\n");
  const Graph parsed = parse_graph(fixed, "t");

  Builder b("g");
  const Value x = b.input("x", DType::f32, {2, 3});
  const Value w = b.param("w.t", DType::f32, {2, 3});
  const Value h = b.name(b.matmul(x, w, false, true), "h");
  const Value s = b.name(b.softmax(h), "s");
  b.output(b.name(b.clamp(s, -1, 1), "c"));
  expect_same_graph(b.finish(), parsed);
}

TEST(PrinterParser, RealAttributesKeepTheirBits) {
  // Each value with the spelling reasoned from "shortest decimal that reads back, with '.' or
  // an exponent": to_chars picks the shorter of fixed and scientific notation.
  const std::pair<double, std::string> cases[] = {
      {0.1, "0.1"},
      {-0.0, "-0.0"},
      {0.0, "0.0"},
      {2.0, "2.0"},
      {-2.5, "-2.5"},
      {100.0, "100.0"},
      {123456789.0, "123456789.0"},
      {1e-5, "1e-05"},
      {1e16, "1e+16"},
      {5e-324, "5e-324"},  // the smallest subnormal double
      {std::numeric_limits<double>::max(), "1.7976931348623157e+308"},
      {1.0 / 3.0, "0.3333333333333333"},
      {std::numeric_limits<double>::infinity(), "inf"},
      {-std::numeric_limits<double>::infinity(), "-inf"},
  };
  for (const auto& [v, spelling] : cases) {
    SCOPED_TRACE(spelling);
    Builder b("reals");
    b.output(b.clamp(b.input("x", DType::f32, {1}), v, v));
    const Graph g = b.finish();
    const std::string text = round_trip(g);
    EXPECT_NE(text.find("{min = " + spelling + ", max = " + spelling + "}"), std::string::npos) << text;
  }
}

TEST(PrinterParser, NanRealsArePrinted) {
  // No op accepts a NaN real in a valid graph, but the printer prints any graph.
  Graph g("n");
  const ValueId x = add_node(g, Op::input, "x", {}, {DType::f32, {1}});
  add_node(g, Op::clamp, "c", {x}, {DType::f32, {1}},
           {{"min", std::numeric_limits<double>::quiet_NaN()},
            {"max", std::copysign(std::numeric_limits<double>::quiet_NaN(), -1.0)}});
  g.outputs().push_back(1);
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("%c = clamp(%x) {min = nan, max = -nan} : f32[1]"), std::string::npos) << text;
  // It parses as far as the type rule, which rejects it at the op name (column 8).
  EXPECT_NE(error_of([&] { parse_graph(text, "n"); }).find("n:3:8: %c (clamp): min must be <= max"),
            std::string::npos);
}

Graph const_graph(const std::string& name, Tensor value) {
  Builder b("consts");
  b.output(b.name(b.constant(std::move(value)), name));
  return b.finish();
}

TEST(PrinterParser, ConstTensorsOfEveryDTypeKeepTheirBits) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> f32 = {0.5f, 1.0f, -inf, inf, nan, -nan, -0.0f, 0.0f,
                                  std::numeric_limits<float>::denorm_min(),
                                  std::numeric_limits<float>::min() / 2,  // subnormal
                                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                                  0.1f, 1.0f / 3.0f, 16777216.0f, 1e-38f};
  const std::vector<std::uint16_t> f16 = {0x7bff, 0xfbff, 0x0001, 0x03ff, 0x0400, 0x7c00, 0xfc00,
                                          0x7e00, 0xfe00, 0x8000, 0x0000, 0x3555, 0x3c01};
  const std::vector<std::uint16_t> bf16 = {0x7f7f, 0x0001, 0x007f, 0x7f80, 0xff80, 0x7fc0,
                                           0xffc0, 0x8000, 0x3f81, 0x4049};
  const std::vector<std::int32_t> i32 = {std::numeric_limits<std::int32_t>::min(),
                                         std::numeric_limits<std::int32_t>::max(), 0, -1};
  const std::vector<std::int8_t> i8 = {-128, 127, 0, -1};
  const std::vector<std::uint8_t> u8 = {0, 255, 128, 1};
  const std::vector<std::uint8_t> boolean = {1, 0, 0, 1};

  struct Case {
    Tensor value;
    std::string spelling;  // the literal, reasoned from the element values
  };
  const Case cases[] = {
      {tensor_of(DType::f32, {16}, f32),
       "[0.5, 1, -inf, inf, nan, -nan, -0, 0, 1e-45, 5.877472e-39, 3.4028235e+38, -3.4028235e+38, "
       "0.1, 0.33333334, 16777216, 1e-38]"},
      // f16: 65504, -65504, 2^-24, (1023)2^-24, 2^-14, inf, -inf, nan, -nan, -0, 0, 0x3555 =
      // 1365/4096 = 0.333251953125, 1 + 2^-10 = 1.0009765625.
      {tensor_of(DType::f16, {13}, f16),
       "[65504, -65504, 5.9604645e-08, 6.097555e-05, 6.1035156e-05, inf, -inf, nan, -nan, -0, 0, "
       "0.33325195, 1.0009766]"},
      // bf16: the largest (0x7f7f), 2^-133, the largest subnormal, inf, -inf, nan, -nan, -0,
      // 1 + 2^-7, 0x4049 = 3.140625.
      {tensor_of(DType::bf16, {10}, bf16),
       "[3.3895314e+38, 9.1835e-41, 1.1663108e-38, inf, -inf, nan, -nan, -0, 1.0078125, 3.140625]"},
      {tensor_of(DType::i32, {2, 2}, i32), "[-2147483648, 2147483647, 0, -1]"},
      {tensor_of(DType::i8, {4}, i8), "[-128, 127, 0, -1]"},
      {tensor_of(DType::u8, {2, 2}, u8), "[0, 255, 128, 1]"},
      {tensor_of(DType::boolean, {4}, boolean), "[true, false, false, true]"},
      {tensor_of(DType::f32, {}, std::vector<float>{2.5f}), "[2.5]"},          // a scalar
      {tensor_of(DType::i8, {}, std::vector<std::int8_t>{-7}), "[-7]"},
      {tensor_of(DType::f32, {0}, std::vector<float>{}), "[]"},                 // empty
      {tensor_of(DType::bf16, {2, 0, 3}, std::vector<std::uint16_t>{}), "[]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.value.dtype())) + shape_str(c.value.shape()));
    const Graph g = const_graph("c.v", c.value);
    const std::string text = round_trip(g);
    const std::string type = TensorType{c.value.dtype(), c.value.shape()}.str();
    EXPECT_NE(text.find("%c.v = const() {value = " + c.spelling + "} : " + type + "\n"), std::string::npos)
        << text;
  }
}

TEST(PrinterParser, FloatElementsRoundToTheirDType) {
  // Decimals that are not values of the dtype round to the nearest one.
  const Graph g = parse_graph(
      "graph r {\n"
      "  %a = const() {value = [0.1, 65519, 3e-08, -0]} : f16[4]\n"
      "  %b = const() {value = [0.1, 3]} : bf16[2]\n"
      "  %c = const() {value = [0.1, 16777217]} : f32[2]\n"
      "  return %a, %b, %c\n"
      "}\n");
  const auto& a = g.node(0).attr<Tensor>("value");
  EXPECT_EQ(a.span<std::uint16_t>()[0], float_to_half(0.1f));
  EXPECT_EQ(a.span<std::uint16_t>()[1], 0x7bff);  // 65519 is below the midpoint 65520: 65504
  EXPECT_EQ(a.span<std::uint16_t>()[2], 0x0001);  // 3e-8 is above 2^-25, half of 2^-24
  EXPECT_EQ(a.span<std::uint16_t>()[3], 0x8000);
  const auto& bt = g.node(1).attr<Tensor>("value");
  EXPECT_EQ(bt.span<std::uint16_t>()[0], float_to_bf16(0.1f));
  EXPECT_EQ(bt.span<std::uint16_t>()[1], 0x4040);  // 3 = 1.5 * 2^1
  const auto& c = g.node(2).attr<Tensor>("value");
  EXPECT_EQ(c.span<float>()[0], 0.1f);
  EXPECT_EQ(c.span<float>()[1], 16777216.0f);  // 2^24 + 1 ties to even
}

TEST(PrinterParser, IntegersForRealsAndDefaultsFilled) {
  const Graph g = parse_graph(
      "graph d {\n"
      "  %x = input() : f32[2, 3]\n"
      "  %s = softmax(%x) : f32[2, 3]\n"
      "  %m = matmul(%x, %x) {transpose_y = true} : f32[2, 2]\n"
      "  %c = clamp(%m) {min = -0, max = 7} : f32[2, 2]\n"
      "  return %s, %c\n"
      "}\n");
  EXPECT_EQ(g.node(1).attr_int("axis"), -1);
  EXPECT_FALSE(g.node(2).attr_bool("transpose_x"));
  EXPECT_TRUE(g.node(2).attr_bool("transpose_y"));
  // An integer literal for a real is read as a number, so "-0" keeps its sign.
  EXPECT_TRUE(std::signbit(g.node(3).attr_real("min")));
  EXPECT_EQ(g.node(3).attr_real("max"), 7.0);
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("%s = softmax(%x) {axis = -1} : f32[2, 3]"), std::string::npos) << text;
  EXPECT_NE(text.find("{transpose_x = false, transpose_y = true}"), std::string::npos) << text;
  EXPECT_NE(text.find("{min = -0.0, max = 7.0}"), std::string::npos) << text;
}

TEST(PrinterParser, StringsAreEscaped) {
  // No op has a string attribute yet; the lexer's spelling of strings is tested directly.
  const std::string raw = std::string("a\"b\\c\nd\te\rf") + '\0' + "g";
  EXPECT_EQ(quote_string(raw), std::string("\"a\\\"b\\\\c\\nd\\te\rf") + '\0' + "g\"");
  EXPECT_EQ(unescape_string(quote_string(raw)), raw);
  const std::string source = quote_string(raw) + " x";
  Lexer lex(source, "s");
  const Token t = lex.next();
  EXPECT_EQ(t.kind, TokenKind::string);
  EXPECT_EQ(unescape_string(t.text), raw);
  EXPECT_TRUE(lex.next().is_word("x"));
  EXPECT_EQ(lex.next().kind, TokenKind::end);
}

TEST(PrinterParser, PrinterShowsBrokenGraphsWithoutThrowing) {
  Graph g("broken");
  const ValueId x = add_node(g, Op::input, "x", {}, {DType::f32, {2}});
  add_node(g, Op::relu, "r", {x, 99}, {DType::f32, {2}});
  Node c;
  c.op = Op::constant;
  c.name = "c";
  c.type = {DType::f32, {2}};
  c.attrs = {Tensor{}};
  g.add(c);
  g.outputs() = {2, -5};
  const std::string text = print_graph(g);
  EXPECT_EQ(text,
            "graph broken {\n"
            "  %x = input() : f32[2]\n"
            "  %r = relu(%x, %<#99>) : f32[2]\n"
            "  %c = const() {value = <undefined>} : f32[2]\n"
            "  return %c, %<#-5>\n"
            "}\n");
  EXPECT_FALSE(error_of([&] { parse_graph(text); }).empty());
  // No outputs: no return line; the parser then reports the verifier's message.
  g.outputs().clear();
  const std::string no_return = print_graph(g);
  EXPECT_EQ(no_return.find("return"), std::string::npos);
}

TEST(PrinterParser, ReadGraphFile) {
  char path[] = "/tmp/orion-ir-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::optional<Graph> g = graph_using(Op::layer_norm);
  ASSERT_TRUE(g.has_value());
  const std::string text = print_graph(*g);
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  expect_same_graph(*g, read_graph_file(path));

  // Errors in the file name it.
  FILE* f = std::fopen(path, "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("graph g {\n  %x = input() : f32[2\n}\n", f);
  std::fclose(f);
  EXPECT_EQ(error_of([&] { read_graph_file(path); }),
            std::string(path) + ":3:1: expected ',' or ']' in the shape of '%x', found '}'");
  std::remove(path);

  const std::string missing = std::string(path) + ".missing";
  const std::string msg = error_of([&] { read_graph_file(missing); });
  EXPECT_EQ(msg.rfind(missing + ": cannot open", 0), 0u) << msg;
  const std::string dir_msg = error_of([&] { read_graph_file("/tmp"); });
  EXPECT_EQ(dir_msg.rfind("/tmp: ", 0), 0u) << dir_msg;
}

}  // namespace
}  // namespace orion::ir
