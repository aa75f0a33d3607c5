// The verifier: one malformed graph per rule of check_graph, with the message naming the node.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/verifier.h"
#include "ir_test_util.h"

namespace orion::ir {
namespace {

using testing::add_node;
using testing::error_of;

const TensorType f32_23{DType::f32, {2, 3}};

// x: f32[2, 3] input, r = relu(x), outputs r: valid.
Graph base() {
  Graph g("g");
  const ValueId x = add_node(g, Op::input, "x", {}, f32_23);
  const ValueId r = add_node(g, Op::relu, "r", {x}, f32_23);
  g.outputs().push_back(r);
  return g;
}

// The one problem check_graph reports; fails unless there is exactly one.
std::string only_problem(const Graph& g) {
  const std::vector<std::string> problems = check_graph(g);
  EXPECT_EQ(problems.size(), 1u) << (problems.empty() ? "none" : problems.front());
  return problems.empty() ? std::string() : problems.front();
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(Verifier, AcceptsValidGraph) {
  EXPECT_TRUE(check_graph(base()).empty());
  verify(base());
}

TEST(Verifier, InvalidName) {
  for (const char* bad : {"", "1x", "a-b", "%x", "a b", ".x"}) {
    Graph g = base();
    g.node(1).name = bad;
    EXPECT_EQ(only_problem(g), "%" + std::string(bad) + " (relu): '" + bad + "' is not a valid name");
  }
  Graph ok = base();
  ok.node(1).name = "_a.b9";
  EXPECT_TRUE(check_graph(ok).empty());
}

TEST(Verifier, DuplicateName) {
  Graph g = base();
  g.node(1).name = "x";
  EXPECT_EQ(only_problem(g), "%x (relu): the name is used by another node");
}

TEST(Verifier, WrongArity) {
  Graph g = base();
  g.node(1).inputs = {0, 0};
  EXPECT_EQ(only_problem(g), "%r (relu): takes 1 inputs, has 2");
  Graph c = base();
  add_node(c, Op::concat, "c", {}, f32_23, {{"axis", std::int64_t{0}}});
  EXPECT_HAS(only_problem(c), "%c (concat): takes at least 1 inputs, has 0");
  Graph s = base();
  s.node(0).inputs = {1};
  EXPECT_HAS(check_graph(s).front(), "%x (input): takes 0 inputs, has 1");
}

TEST(Verifier, DanglingInput) {
  Graph g = base();
  g.node(1).inputs = {7};
  const std::vector<std::string> problems = check_graph(g);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems.front(), "%r (relu): input refers to value #7, which does not exist");
  g.node(1).inputs = {-1};
  EXPECT_HAS(check_graph(g).front(), "%r (relu): input refers to value #-1");
}

TEST(Verifier, WrongAttributeCount) {
  Graph g = base();
  NamedAttrs attrs;
  attrs.emplace_back("transpose_y", true);
  const ValueId m = add_node(g, Op::matmul, "m", {0, 0}, {DType::f32, {2, 2}}, std::move(attrs));
  g.node(m).attrs.pop_back();
  EXPECT_EQ(only_problem(g), "%m (matmul): has 1 attributes, the op declares 2");
  g.node(1).attrs = g.node(m).attrs;  // relu declares none
  EXPECT_HAS(check_graph(g).front(), "%r (relu): has 1 attributes, the op declares 0");
}

TEST(Verifier, WrongAttributeKind) {
  Graph g = base();
  const ValueId s = add_node(g, Op::softmax, "s", {0}, f32_23);
  g.node(s).attrs[0] = 1.0;  // a real where an integer belongs
  EXPECT_EQ(only_problem(g), "%s (softmax): attribute 'axis' must be integer");
}

TEST(Verifier, NegativeDimension) {
  Graph g = base();
  g.node(0).type = {DType::f32, {-1, 3}};
  const std::vector<std::string> problems = check_graph(g);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems.front(), "%x (input): type f32[-1, 3] has a negative dimension");
}

// The problems of the base graph with a constant %k of type `declared` holding `value`.
std::vector<std::string> const_problems(const TensorType& declared, const Tensor& value) {
  Graph g = base();
  NamedAttrs attrs;
  attrs.emplace_back("value", value);
  add_node(g, Op::constant, "k", {}, declared, std::move(attrs));
  return check_graph(g);
}

TEST(Verifier, ConstValueMismatch) {
  const Tensor v = Tensor::from_floats({2}, std::vector<float>{1, 2});
  const std::string msg = "%k (const): value does not match the declared type ";
  EXPECT_EQ(const_problems({DType::f32, {3}}, v), std::vector<std::string>{msg + "f32[3]"});       // shape
  EXPECT_EQ(const_problems({DType::f16, {2}}, v), std::vector<std::string>{msg + "f16[2]"});       // dtype
  EXPECT_EQ(const_problems({DType::f32, {2}}, Tensor{}), std::vector<std::string>{msg + "f32[2]"});  // no data
  EXPECT_EQ(const_problems({DType::f32, {1, 2}}, v), std::vector<std::string>{msg + "f32[1, 2]"});   // same count
  EXPECT_TRUE(const_problems({DType::f32, {2}}, v).empty());
}

// A graph with sources of the given types and one node of `op` over them, declared `type`.
std::string rule_problem(Op op, std::vector<TensorType> inputs, TensorType type, NamedAttrs attrs = {}) {
  Graph g("rules");
  std::vector<ValueId> ids;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    ids.push_back(add_node(g, Op::input, "in" + std::to_string(i), {}, inputs[i]));
  const ValueId n = add_node(g, op, "n", ids, std::move(type), std::move(attrs));
  g.outputs().push_back(n);
  return only_problem(g);
}

TEST(Verifier, TypeRules) {
  using V = std::vector<std::int64_t>;
  const DType f = DType::f32;
  EXPECT_HAS(rule_problem(Op::matmul, {{f, {2, 3}}, {f, {4, 5}}}, {f, {2, 5}}),
             "%n (matmul): inner dimensions differ: f32[2, 3] x f32[4, 5] (3 vs 4)");
  EXPECT_HAS(rule_problem(Op::matmul, {{f, {3}}, {f, {3, 5}}}, {f, {5}}),
             "%n (matmul): both inputs need rank >= 2");
  const NamedAttrs conv1 = {{"strides", V{1, 1}}, {"pads", V{0, 0, 0, 0}}, {"dilations", V{1, 1}}};
  EXPECT_HAS(rule_problem(Op::conv, {{f, {1, 4, 1, 8}}, {f, {6, 3, 1, 1}}}, {f, {1, 6, 1, 8}}, conv1),
             "%n (conv): weight f32[6, 3, 1, 1] must have 4 input channels per group (x f32[1, 4, 1, 8], groups 1)");
  NamedAttrs grouped = conv1;
  grouped.emplace_back("groups", std::int64_t{3});
  EXPECT_HAS(rule_problem(Op::conv, {{f, {1, 4, 1, 8}}, {f, {6, 1, 1, 1}}}, {f, {1, 6, 1, 8}}, grouped),
             "%n (conv): groups 3 must divide both 4 input and 6 output channels");
  EXPECT_HAS(rule_problem(Op::conv, {{f, {1, 4, 8}}, {f, {6, 4, 1}}}, {f, {1, 6, 8}}, conv1),
             "%n (conv): x and weight must have rank 4");
  EXPECT_HAS(rule_problem(Op::conv, {{f, {1, 4, 2, 2}}, {f, {6, 4, 3, 1}}}, {f, {1, 6, 1, 2}}, conv1),
             "%n (conv): the dilated kernel (3) is larger than the padded input (2) along axis 2");
  EXPECT_HAS(rule_problem(Op::conv, {{f, {1, 4, 2, 2}}, {f, {6, 4, 1, 1}}}, {f, {1, 6, 2, 2}},
                          {{"strides", V{0, 1}}, {"pads", V{0, 0, 0, 0}}, {"dilations", V{1, 1}}}),
             "%n (conv): strides must be in [1, 2^20]");
  EXPECT_HAS(rule_problem(Op::conv, {{f, {1, 4, 2, 2}}, {f, {6, 4, 1, 1}}}, {f, {1, 6, 2, 2}},
                          {{"strides", V{1, 1}}, {"pads", V{0, 0}}, {"dilations", V{1, 1}}}),
             "%n (conv): strides and dilations need 2 entries, pads 4");
  EXPECT_HAS(rule_problem(Op::add, {{f, {2, 3}}, {f, {4}}}, {f, {2, 3}}),
             "%n (add): shapes [2, 3] and [4] do not broadcast");
  EXPECT_HAS(rule_problem(Op::mul, {{f, {2}}, {DType::f16, {2}}}, {f, {2}}),
             "%n (mul): inputs have different dtypes: f32[2] and f16[2]");
  EXPECT_HAS(rule_problem(Op::exp, {{DType::i32, {2}}}, {DType::i32, {2}}),
             "%n (exp): x must be a float tensor, not i32[2]");
  EXPECT_HAS(rule_problem(Op::softmax, {{f, {2, 3}}}, {f, {2, 3}}, {{"axis", std::int64_t{2}}}),
             "%n (softmax): axis 2 is out of range for rank 2");
  EXPECT_HAS(rule_problem(Op::gather, {{f, {4, 3}}, {DType::i32, {2}}}, {f, {2, 3}}, {{"axis", std::int64_t{-3}}}),
             "%n (gather): axis -3 is out of range for rank 2");
  EXPECT_HAS(rule_problem(Op::transpose, {{f, {2, 3}}}, {f, {2, 3}}, {{"perm", V{0, 0}}}),
             "%n (transpose): perm [0, 0] is not a permutation");
  EXPECT_HAS(rule_problem(Op::transpose, {{f, {2, 3}}}, {f, {2, 3}}, {{"perm", V{0}}}),
             "%n (transpose): perm has 1 entries for rank 2");
  EXPECT_HAS(rule_problem(Op::slice, {{f, {2, 3}}}, {f, {2, 3}}, {{"begin", V{0, 1}}, {"end", V{2, 4}}}),
             "%n (slice): range [1, 4) of axis 1 is outside f32[2, 3]");
  EXPECT_HAS(rule_problem(Op::slice, {{f, {2, 3}}}, {f, {2, 3}}, {{"begin", V{0}}, {"end", V{2}}}),
             "%n (slice): begin and end need one entry per axis of f32[2, 3]");
  EXPECT_HAS(rule_problem(Op::concat, {{f, {2, 3}}, {f, {3, 3}}}, {f, {2, 6}}, {{"axis", std::int64_t{1}}}),
             "%n (concat): input 1 f32[3, 3] differs from f32[2, 3] outside axis 1");
  EXPECT_HAS(rule_problem(Op::concat, {{f, {2, 3}}, {DType::f16, {2, 3}}}, {f, {2, 6}}, {{"axis", std::int64_t{1}}}),
             "%n (concat): input 1 f16[2, 3] does not match f32[2, 3]");
  EXPECT_HAS(rule_problem(Op::gather, {{f, {4, 3}}, {DType::i8, {2}}}, {f, {2, 3}}),
             "%n (gather): indices must be i32, not i8[2]");
  EXPECT_HAS(rule_problem(Op::where, {{DType::u8, {2}}, {f, {2}}, {f, {2}}}, {f, {2}}),
             "%n (where): cond must be bool, not u8[2]");
  EXPECT_HAS(rule_problem(Op::clamp, {{f, {2}}}, {f, {2}}, {{"min", 1.0}, {"max", 0.5}}),
             "%n (clamp): min must be <= max");
  EXPECT_HAS(rule_problem(Op::reshape, {{f, {2, 3}}}, {f, {4}}, {{"shape", V{4}}}),
             "%n (reshape): cannot reshape [2, 3] (6 elements) to [4]");
  EXPECT_HAS(rule_problem(Op::reshape, {{f, {2, 3}}}, {f, {4}}, {{"shape", V{-1, 4}}}),
             "%n (reshape): cannot reshape [2, 3] to [-1, 4]");
  EXPECT_HAS(rule_problem(Op::reshape, {{f, {2, 3}}}, {f, {6}}, {{"shape", V{-1, -1}}}),
             "%n (reshape): shape [-1, -1] has more than one -1");
  EXPECT_HAS(rule_problem(Op::reshape, {{f, {2, 3}}}, {f, {6}},
                          {{"shape", V{std::int64_t{1} << 62, 8, 0}}}),
             "%n (reshape): shape [4611686018427387904, 8, 0] has too many elements");
  EXPECT_HAS(rule_problem(Op::reduce_sum, {{f, {2, 3}}}, {f, {2}}, {{"axes", V{1, -1}}}),
             "%n (reduce_sum): axes name the same axis twice");
  EXPECT_HAS(rule_problem(Op::reduce_max, {{f, {2, 3}}}, {f, {2}}, {{"axes", V{}}}),
             "%n (reduce_max): axes must name at least one axis");
  EXPECT_HAS(rule_problem(Op::layer_norm, {{f, {2, 3}}, {f, {2}}, {f, {3}}}, {f, {2, 3}}),
             "%n (layer_norm): gamma must be f32[3] to match x f32[2, 3], not f32[2]");
  EXPECT_HAS(rule_problem(Op::rms_norm, {{f, {2, 3}}, {f, {3}}}, {f, {2, 3}}, {{"epsilon", -1.0}}),
             "%n (rms_norm): epsilon must be >= 0");
}

TEST(Verifier, DeclaredTypeDiffersFromInferred) {
  Graph g = base();
  g.node(1).type = {DType::f32, {3, 2}};
  EXPECT_EQ(only_problem(g), "%r (relu): declared type f32[3, 2] but the inputs give f32[2, 3]");
  g.node(1).type = {DType::f16, {2, 3}};
  EXPECT_EQ(only_problem(g), "%r (relu): declared type f16[2, 3] but the inputs give f32[2, 3]");
}

TEST(Verifier, Cycle) {
  Graph g("loop");
  const ValueId x = add_node(g, Op::input, "x", {}, f32_23);
  const ValueId a = add_node(g, Op::add, "a", {x, x}, f32_23);
  const ValueId b = add_node(g, Op::relu, "b", {a}, f32_23);
  g.outputs().push_back(b);
  EXPECT_TRUE(check_graph(g).empty());
  g.node(a).inputs[1] = b;  // a reads b, which reads a
  std::vector<std::string> problems = check_graph(g);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "%a (add): uses %b (relu), which comes after it (nodes must follow their inputs)");
  EXPECT_EQ(problems[1], "%b (relu): is part of a cycle through %a (add)");
  // A node reading itself.
  g.node(a).inputs[1] = x;
  g.node(b).inputs[0] = b;
  problems = check_graph(g);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "%b (relu): uses %b (relu), itself");
  EXPECT_EQ(problems[1], "%b (relu): is part of a cycle through %b (relu)");
}

TEST(Verifier, NodeBeforeItsInput) {
  // No cycle, but a node listed before the value it reads: the text form could not say it.
  Graph g("order");
  const ValueId x = add_node(g, Op::input, "x", {}, f32_23);
  const ValueId r = add_node(g, Op::relu, "r", {x}, f32_23);
  const ValueId s = add_node(g, Op::relu, "s", {x}, f32_23);
  g.node(r).inputs[0] = s;
  g.outputs().push_back(r);
  EXPECT_EQ(only_problem(g), "%r (relu): uses %s (relu), which comes after it (nodes must follow their inputs)");
}

TEST(Verifier, GraphNameMustBeAnIdentifier) {
  Graph g = base();
  g.set_name("gpt2-small");
  EXPECT_EQ(only_problem(g), "graph 'gpt2-small': the graph's name is not a valid identifier");
}

TEST(Verifier, NoOutputs) {
  Graph g = base();
  g.outputs().clear();
  EXPECT_EQ(only_problem(g), "graph g: has no outputs");
}

TEST(Verifier, DanglingOutput) {
  Graph g = base();
  g.outputs().push_back(42);
  EXPECT_EQ(only_problem(g), "graph g: output refers to value #42, which does not exist");
}

TEST(Verifier, VerifyThrowsTheFirstProblemAndCountsTheRest) {
  Graph g = base();
  g.node(0).name = "bad name";
  g.outputs().push_back(9);
  EXPECT_EQ(error_of([&] { verify(g); }),
            "%bad name (input): 'bad name' is not a valid name (and 1 more problems)");
}

TEST(Verifier, MakeAttrs) {
  const std::vector<AttrValue> a = make_attrs(Op::clamp, {{"max", std::int64_t{2}}, {"min", -1.5}});
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(std::get<double>(a[0]), -1.5);
  EXPECT_EQ(std::get<double>(a[1]), 2.0);  // an integer accepted for a real
  EXPECT_EQ(error_of([] { make_attrs(Op::softmax, {{"axes", std::int64_t{1}}}); }),
            "softmax has no attribute 'axes'");
  EXPECT_EQ(error_of([] { make_attrs(Op::softmax, {{"axis", std::int64_t{1}}, {"axis", std::int64_t{2}}}); }),
            "softmax: attribute 'axis' given twice");
  EXPECT_EQ(error_of([] { make_attrs(Op::softmax, {{"axis", true}}); }),
            "softmax: attribute 'axis' must be integer, not boolean");
  EXPECT_EQ(error_of([] { make_attrs(Op::reshape, {}); }), "reshape: attribute 'shape' is required");
  const std::vector<AttrValue> d = make_attrs(Op::layer_norm, {});
  EXPECT_EQ(std::get<double>(d.at(0)), 1e-5);
}

}  // namespace
}  // namespace orion::ir
