// Malformed IR text: each mistake is an orion::Error at the right line and column, and no
// mutation of valid text crashes the parser or escapes as another exception.
#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <vector>

#include "core/random.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir_test_util.h"
#include "test_graphs.h"

namespace orion::ir {
namespace {

using testing::error_of;

// The error parsing `text` as file "t", which must start with `where` ("t:LINE:COL:") and
// contain `what`.
void expect_error(const std::string& text, const std::string& where, const std::string& what) {
  const std::string msg = error_of([&] { parse_graph(text, "t"); });
  EXPECT_EQ(msg.rfind(where + " ", 0), 0u) << "wanted " << where << ", got: " << msg << "\nfor:\n" << text;
  EXPECT_NE(msg.find(what), std::string::npos) << "wanted '" << what << "', got: " << msg;
}

// A valid text; each test changes one line of it. Columns in the tests count from the first
// character of the changed line.
std::string graph_with(const std::string& line3) {
  return "graph g {\n"
         "  %x = input() : f32[2, 3]\n" +
         line3 + "\n" +
         "  return %y\n"
         "}\n";
}

TEST(ParseErrors, BaseTextIsValid) { EXPECT_EQ(parse_graph(graph_with("  %y = relu(%x) : f32[2, 3]")).size(), 2); }

TEST(ParseErrors, UnknownOp) {
  expect_error(graph_with("  %y = relux(%x) : f32[2, 3]"), "t:3:8:", "unknown op 'relux'");
  expect_error(graph_with("  %y = constant() : f32[2, 3]"), "t:3:8:", "unknown op 'constant'");
}

TEST(ParseErrors, UndefinedValue) {
  expect_error(graph_with("  %y = relu(%z) : f32[2, 3]"), "t:3:13:", "undefined value '%z'");
  // A value is defined by its own line only after it: no self reference.
  expect_error(graph_with("  %y = relu(%y) : f32[2, 3]"), "t:3:13:", "undefined value '%y'");
  expect_error("graph g {\n  %x = input() : f32[2]\n  return %x, %q\n}\n", "t:3:14:", "undefined value '%q'");
}

TEST(ParseErrors, DuplicateName) {
  expect_error(graph_with("  %x = relu(%x) : f32[2, 3]"), "t:3:3:",
               "the value '%x' is already defined at line 2");
}

TEST(ParseErrors, MissingColon) {
  expect_error(graph_with("  %y = relu(%x) f32[2, 3]"), "t:3:17:", "expected ':' and the type of '%y', found 'f32'");
}

TEST(ParseErrors, BadDType) {
  expect_error(graph_with("  %y = relu(%x) : f64[2, 3]"), "t:3:19:", "unknown dtype 'f64'");
  expect_error(graph_with("  %y = cast(%x) {dtype = f8} : f32[2, 3]"), "t:3:26:", "unknown dtype 'f8'");
}

TEST(ParseErrors, BadNumber) {
  expect_error(graph_with("  %y = relu(%x) : f32[2, 3x]"), "t:3:26:", "malformed number '3x'");
  expect_error(graph_with("  %y = relu(%x) : f32[2, 1.5]"), "t:3:26:", "expected a dimension (an integer >= 0)");
  expect_error(graph_with("  %y = relu(%x) : f32[2, -3]"), "t:3:26:", "dimension -3 is negative");
  expect_error(graph_with("  %y = relu(%x) : f32[2, 99999999999999999999]"), "t:3:26:",
               "dimension '99999999999999999999' does not fit in 64 bits");
  expect_error(graph_with("  %y = softmax(%x) {axis = 1e999} : f32[2, 3]"), "t:3:28:",
               "number '1e999' is out of range for a real");
  expect_error(graph_with("  %y = clamp(%x) {min = 0, max = 1.} : f32[2, 3]"), "t:3:34:", "malformed number '1.'");
  expect_error(graph_with("  %y = clamp(%x) {min = 0, max = - 1} : f32[2, 3]"), "t:3:34:",
               "expected a number after '-'");
  expect_error(graph_with("  %y = clamp(%x) {min = 0, max = 0x10} : f32[2, 3]"), "t:3:34:", "malformed number '0x10'");
}

TEST(ParseErrors, UnterminatedString) {
  expect_error(graph_with("  %y = relu(%x) {name = \"abc} : f32[2, 3]"), "t:3:25:", "unterminated string");
  expect_error(graph_with("  %y = relu(%x) {name = \"a\\qb\"} : f32[2, 3]"), "t:3:27:", "unknown escape");
}

TEST(ParseErrors, TensorLiteral) {
  expect_error(graph_with("  %y = const() {value = [1, 2]} : f32[3]"), "t:3:25:",
               "%y (const): the value has 2 elements, the type f32[3] needs 3");
  expect_error(graph_with("  %y = const() {value = [1, 300]} : i8[2]"), "t:3:29:",
               "value '300' is out of range for i8 (-128 to 127)");
  expect_error(graph_with("  %y = const() {value = [1, -1]} : u8[2]"), "t:3:29:", "value '-1' is out of range for u8");
  expect_error(graph_with("  %y = const() {value = [1.5]} : i32[]"), "t:3:26:", "expected an integer for an element of i32");
  expect_error(graph_with("  %y = const() {value = [1]} : bool[1]"), "t:3:26:", "expected true or false");
  expect_error(graph_with("  %y = const() {value = [true]} : f32[1]"), "t:3:26:", "expected a number, inf or nan");
  expect_error(graph_with("  %y = const() {value = [65520]} : f16[1]"), "t:3:26:", "value '65520' is out of range for f16");
  expect_error(graph_with("  %y = const() {value = [1e-8]} : f16[1]"), "t:3:26:", "value '1e-8' is out of range for f16");
  expect_error(graph_with("  %y = const() {value = [4e38]} : f32[1]"), "t:3:26:", "value '4e38' is out of range for f32");
  expect_error(graph_with("  %y = const() {value = [1 2]} : f32[2]"), "t:3:28:", "expected ',' or ']' in the tensor");
  expect_error(graph_with("  %y = const() {value = [[1]]} : f32[1]"), "t:3:26:", "expected a tensor element");
  expect_error(graph_with("  %y = const() {value = 1} : f32[]"), "t:3:16:",
               "const: attribute 'value' must be tensor, not integer");
  // 2^40 elements is an allowed shape, but the count is checked before anything is allocated.
  expect_error(graph_with("  %y = const() {value = [1]} : f32[1099511627776]"), "t:3:25:",
               "the value has 1 element, the type f32[1099511627776] needs 1099511627776");
}

TEST(ParseErrors, TypeMismatch) {
  expect_error(graph_with("  %y = relu(%x) : f32[3, 2]"), "t:3:19:",
               "%y (relu): declared type f32[3, 2] but the inputs give f32[2, 3]");
  expect_error(graph_with("  %y = relu(%x) : f16[2, 3]"), "t:3:19:", "but the inputs give f32[2, 3]");
}

TEST(ParseErrors, TypeRuleFailsAtTheOp) {
  expect_error(graph_with("  %y = matmul(%x, %x) : f32[2, 3]"), "t:3:8:", "%y (matmul): inner dimensions differ");
  expect_error(graph_with("  %y = relu(%x, %x) : f32[2, 3]"), "t:3:8:", "relu takes 1 input, found 2");
  expect_error(graph_with("  %y = where(%x) : f32[2, 3]"), "t:3:8:", "where takes 3 inputs, found 1");
  expect_error(graph_with("  %y = input(%x) : f32[2, 3]"), "t:3:8:", "input takes 0 inputs, found 1");
  expect_error(graph_with("  %y = reshape(%x) {shape = [-1, 4611686018427387904, 4]} : f32[6]"), "t:3:8:",
               "has too many elements");
}

TEST(ParseErrors, AttributeErrorsPointAtTheBlock) {
  expect_error(graph_with("  %y = softmax(%x) {axes = 1} : f32[2, 3]"), "t:3:20:", "softmax has no attribute 'axes'");
  expect_error(graph_with("  %y = softmax(%x) {axis = 1, axis = 0} : f32[2, 3]"), "t:3:20:",
               "softmax: attribute 'axis' given twice");
  expect_error(graph_with("  %y = softmax(%x) {axis = true} : f32[2, 3]"), "t:3:20:",
               "softmax: attribute 'axis' must be integer, not boolean");
  expect_error(graph_with("  %y = softmax(%x) {axis = \"0\"} : f32[2, 3]"), "t:3:20:", "must be integer, not string");
  // Without a block, at the token after ')'.
  expect_error(graph_with("  %y = reshape(%x) : f32[6]"), "t:3:20:", "reshape: attribute 'shape' is required");
  // Syntax inside the block is reported where it is.
  expect_error(graph_with("  %y = softmax(%x) {axis 1} : f32[2, 3]"), "t:3:26:",
               "expected '=' after the attribute name 'axis', found '1'");
  expect_error(graph_with("  %y = softmax(%x) {axis = 1,} : f32[2, 3]"), "t:3:30:", "expected an attribute name");
  expect_error(graph_with("  %y = softmax(%x) {axis = 1 : f32[2, 3]"), "t:3:30:", "expected ',' or '}' after the attribute 'axis'");
  expect_error(graph_with("  %y = softmax(%x) {axis = foo} : f32[2, 3]"), "t:3:28:", "expected a value for the attribute 'axis'");
  expect_error(graph_with("  %y = transpose(%x) {perm = [1, 0.5]} : f32[3, 2]"), "t:3:34:",
               "expected an integer in the list of the attribute 'perm'");
  expect_error(graph_with("  %y = softmax(%x) {axis = 99999999999999999999} : f32[2, 3]"), "t:3:28:",
               "integer '99999999999999999999' does not fit in 64 bits");
}

TEST(ParseErrors, Structure) {
  expect_error("", "t:1:1:", "expected 'graph' at the start of the text, found end of input");
  expect_error("  # only a comment\n", "t:2:1:", "expected 'graph'");
  expect_error("graph {\n}\n", "t:1:7:", "expected a graph name after 'graph', found '{'");
  expect_error("graph g\n  %x = input() : f32[2]\n", "t:2:3:", "expected '{' after the graph name, found '%x'");
  expect_error(graph_with("  %y relu(%x) : f32[2, 3]"), "t:3:6:", "expected '=' after '%y', found 'relu'");
  expect_error(graph_with("  %y = (%x) : f32[2, 3]"), "t:3:8:", "expected an op name after '%y =', found '('");
  expect_error(graph_with("  %y = relu %x : f32[2, 3]"), "t:3:13:", "expected '(' after the op name relu, found '%x'");
  expect_error(graph_with("  %y = relu(%x,) : f32[2, 3]"), "t:3:16:", "expected a value name in the inputs of relu, found ')'");
  expect_error(graph_with("  %y = matmul(%x, %x {transpose_x = true} : f32[3, 3]"), "t:3:22:",
               "expected ')' after the inputs of matmul, found '{'");
  expect_error(graph_with("  %y = relu(%x) : [2, 3]"), "t:3:19:", "expected a type such as f32[2, 3] for '%y', found '['");
  expect_error(graph_with("  %y = relu(%x) : f32 2, 3]"), "t:3:23:", "expected '[' after the dtype 'f32', found '2'");
  expect_error(graph_with("  %y = relu(%x) : f32[2, 3"), "t:4:3:", "expected ',' or ']' in the shape of '%y', found 'return'");
  expect_error(graph_with("  y = relu(%x) : f32[2, 3]"), "t:3:3:", "expected a node ('%name = op(...) : type'), 'return' or '}', found 'y'");
  expect_error(graph_with("  % y = relu(%x) : f32[2, 3]"), "t:3:3:", "expected a value name after '%'");
  expect_error("graph g {\n  %x = input() : f32[2]\n  return\n}\n", "t:4:1:", "expected a value name after 'return', found '}'");
  expect_error("graph g {\n  %x = input() : f32[2]\n  return %x,\n}\n", "t:4:1:", "expected a value name after ','");
  expect_error("graph g {\n  %x = input() : f32[2]\n  return %x\n  %y = relu(%x) : f32[2]\n}\n", "t:4:3:",
               "expected ',' or '}' after the outputs of 'return', found '%y'");
  expect_error("graph g {\n  %x = input() : f32[2]\n  return %x\n} x\n", "t:4:3:",
               "expected end of input after the graph's closing '}', found 'x'");
  expect_error("graph g {\n  %x = input() : f32[2]\n  return %x\n}\n}\n", "t:5:1:", "found '}'");
}

TEST(ParseErrors, MissingBraceAtEnd) {
  expect_error("graph g {\n  %x = input() : f32[2]\n  return %x\n", "t:4:1:",
               "expected ',' or '}' after the outputs of 'return', found end of input");
  expect_error("graph g {\n  %x = input() : f32[2]", "t:2:24:", "found end of input");
}

TEST(ParseErrors, GarbageCharacters) {
  expect_error(graph_with("  %y = relu(%x) @ : f32[2, 3]"), "t:3:17:", "unexpected character '@'");
  expect_error(graph_with("  %y = relu(%x) : f32[2, 3] \xff"), "t:3:29:", "unexpected character byte 0xff");
  expect_error(graph_with(std::string("  %y = relu(%x)") + '\0' + " : f32[2, 3]"), "t:3:16:",
               "unexpected character byte 0x00");
  expect_error(graph_with("  %y = relu(%x) : f32[2; 3]"), "t:3:24:", "unexpected character ';'");
}

TEST(ParseErrors, Limits) {
  expect_error(graph_with("  %y = input() : f32[99999999999, 99999999999]"), "t:3:18:",
               "type f32[99999999999, 99999999999] is too large");
  // Zeros do not excuse an overflowing product.
  expect_error(graph_with("  %y = input() : f32[0, 99999999999, 99999999999]"), "t:3:18:", "is too large");
  std::string dims;
  for (int i = 0; i < 65; ++i) dims += i ? ", 1" : "1";
  expect_error(graph_with("  %y = input() : f32[" + dims + "]"), "t:3:" + std::to_string(22 + 3 * 64) + ":",
               "a type has at most 64 dimensions");
  std::string inputs;
  for (int i = 0; i < 65537; ++i) inputs += i ? ", %x" : "%x";
  expect_error(graph_with("  %y = concat(" + inputs + ") {axis = 0} : f32[2, 3]"),
               "t:3:" + std::to_string(15 + 4 * 65536) + ":", "a node has at most 65536 inputs");
  expect_error("graph " + std::string(5000, 'a') + " {\n}\n", "t:1:7:", "identifier longer than 4096 characters");
  expect_error(graph_with("  %y = relu(%x) {s = \"" + std::string(2 << 20, 'a') + "\"} : f32[2, 3]"), "t:3:22:",
               "string longer than");
}

TEST(ParseErrors, VerifierProblemsNameTheFile) {
  // Syntax allows a graph without 'return'; the verifier does not.
  EXPECT_EQ(error_of([] { parse_graph("graph g {\n  %x = input() : f32[2]\n}\n", "t"); }), "t: graph g: has no outputs");
}

// Seeded random damage to valid texts: every result either parses to a verified graph (which
// then prints and parses stably) or throws an orion::Error naming the file.
std::string mutate(std::string s, Rng& rng) {
  static const std::string kSnippets[] = {
      "%", "%x", "[", "]", "{", "}", "(", ")", ",", ":", "=", "-", "#", "\"", "\\", "\n", " ", "1e999",
      "99999999999", "-1", "0", "nan", "-inf", "true", "f16", "i8[", "bool", "const", "return", "graph",
      "1.5", "%x.in", "{value = [1]}", "f32[1099511627776]", "\xff", std::string(1, '\0'), "# c\n",
      "{axis = 0}", "4294967296", "-0", "1e-50", "[]", "%a = relu(%x) : f32[2, 3]\n"};
  auto is_word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '%' || c == '-';
  };
  const std::uint64_t n = 1 + rng.below(3);
  for (std::uint64_t k = 0; k < n; ++k) {
    if (s.empty()) s = "graph";
    const std::size_t pos = rng.below(s.size());
    switch (rng.below(7)) {
      case 0:  // flip a byte
        s[pos] = static_cast<char>(rng.below(256));
        break;
      case 1:  // truncate
        s.resize(pos);
        break;
      case 2:  // insert a snippet
        s.insert(pos, kSnippets[rng.below(std::size(kSnippets))]);
        break;
      case 3: {  // delete a token
        std::size_t end = pos + 1;
        if (is_word(s[pos]))
          while (end < s.size() && is_word(s[end])) ++end;
        s.erase(pos, end - pos);
        break;
      }
      case 4:  // delete a span
        s.erase(pos, 1 + rng.below(16));
        break;
      case 5: {  // duplicate a line
        const std::size_t b = s.rfind('\n', pos) == std::string::npos ? 0 : s.rfind('\n', pos) + 1;
        const std::size_t e = s.find('\n', pos);
        const std::string line = s.substr(b, e == std::string::npos ? std::string::npos : e - b + 1);
        s.insert(b, line);
        break;
      }
      default: {  // copy a token from elsewhere over this place
        const std::size_t from = rng.below(s.size());
        std::size_t end = from + 1;
        while (end < s.size() && is_word(s[end])) ++end;
        s.replace(pos, 1, s.substr(from, end - from));
        break;
      }
    }
  }
  return s;
}

std::vector<std::string> fuzz_corpus() {
  std::vector<std::string> texts;
  for (const OpInfo& info : all_ops())
    if (const auto g = testing::graph_using(info.op)) texts.push_back(print_graph(*g));
  texts.push_back(
      "# a comment\n"
      "graph g.v1 {\n"
      "  %x = input() : f32[2, 3]\n"
      "  %c = const() {value = [0.5, -inf, nan, -0, 1e-45, 3.4028235e+38]} : f32[2, 3]\n"
      "  %h = const() {value = [65504, -0, 6e-08]} : f16[3]\n"
      "  %b = const() {value = [true, false]} : bool[2, 1]\n"
      "  %w = where(%b, %x, %c) : f32[2, 3]\n"
      "  %s = softmax(%w) {axis = 0} : f32[2, 3]\n"
      "  %r = reshape(%s) {shape = [3, -1]} : f32[3, 2]\n"
      "  %k = clamp(%r) {min = -1.5e-05, max = 1e+300} : f32[3, 2]\n"
      "  return %k, %h\n"
      "}\n");
  return texts;
}

TEST(ParseErrors, RandomMutationsNeverCrash) {
  const std::vector<std::string> corpus = fuzz_corpus();
  for (const std::string& text : corpus) ASSERT_NO_THROW(parse_graph(text)) << text;
  Rng rng(20240611);
  int parsed = 0, rejected = 0;
  constexpr int kCases = 6000;
  for (int i = 0; i < kCases; ++i) {
    const std::string text = mutate(corpus[rng.below(corpus.size())], rng);
    try {
      const Graph g = parse_graph(text, "fuzz");
      EXPECT_TRUE(check_graph(g).empty()) << text;
      const std::string printed = print_graph(g);
      EXPECT_EQ(print_graph(parse_graph(printed, "fuzz")), printed) << text;
      ++parsed;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("fuzz:", 0), 0u) << e.what();
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "non-orion exception " << e.what() << " for:\n" << text;
    } catch (...) {
      ADD_FAILURE() << "unknown exception for:\n" << text;
    }
    if (HasFailure()) break;
  }
  // Both outcomes occur: the mutations are neither all harmless nor all fatal.
  EXPECT_GT(parsed, kCases / 50) << rejected;
  EXPECT_GT(rejected, kCases / 2) << parsed;
}

TEST(ParseErrors, EveryTruncationIsAnError) {
  for (const std::string& text : fuzz_corpus()) {
    const std::size_t close = text.rfind('}');
    for (std::size_t len = 0; len <= close; ++len) {
      const std::string part = text.substr(0, len);
      const std::string msg = error_of([&] { parse_graph(part, "cut"); });
      ASSERT_EQ(msg.rfind("cut:", 0), 0u) << "prefix of " << len << " bytes: " << msg;
    }
    EXPECT_NO_THROW(parse_graph(text.substr(0, close + 1)));
  }
}

}  // namespace
}  // namespace orion::ir
