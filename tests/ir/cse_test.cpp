// cse: equal nodes and equal constants merge into the first; inputs, params and outputs keep
// their identity.
#include <gtest/gtest.h>

#include "ir/transforms/cse.h"
#include "transform_test_util.h"

namespace orion::ir {
namespace {

using testing::expect_text;
using testing::run_pass;

TEST(Cse, MergesEqualNodesAndConstants) {
  bool changed = false;
  const std::string got = run_pass(R"(graph g {
  %x = input() : f32[2, 3]
  %x2 = input() : f32[2, 3]
  %c1 = const() {value = [0.5]} : f32[]
  %c2 = const() {value = [0.5]} : f32[]
  %c3 = const() {value = [-0.5]} : f32[]
  %a = mul(%x, %c1) : f32[2, 3]
  %b = mul(%x, %c2) : f32[2, 3]
  %d = mul(%x, %c3) : f32[2, 3]
  %e = mul(%x2, %c1) : f32[2, 3]
  %s = add(%a, %b) : f32[2, 3]
  %t = add(%b, %a) : f32[2, 3]
  %u = add(%s, %t) : f32[2, 3]
  %v = add(%u, %d) : f32[2, 3]
  %y = add(%v, %e) : f32[2, 3]
  return %y
}
)", [](ir::Graph& g) { return cse(g); }, &changed);
  EXPECT_TRUE(changed);
  // %c2 = %c1, so %b = %a, so %t = add(%a, %a) = %s. -0.5 and an other input do not merge.
  expect_text(got, R"(graph g {
  %x = input() : f32[2, 3]
  %x2 = input() : f32[2, 3]
  %c1 = const() {value = [0.5]} : f32[]
  %c3 = const() {value = [-0.5]} : f32[]
  %a = mul(%x, %c1) : f32[2, 3]
  %d = mul(%x, %c3) : f32[2, 3]
  %e = mul(%x2, %c1) : f32[2, 3]
  %s = add(%a, %a) : f32[2, 3]
  %u = add(%s, %s) : f32[2, 3]
  %v = add(%u, %d) : f32[2, 3]
  %y = add(%v, %e) : f32[2, 3]
  return %y
}
)");
}

TEST(Cse, AttributesTypesAndBitsMatter) {
  constexpr std::string_view distinct = R"(graph g {
  %x = input() : f32[2, 3]
  %z = const() {value = [0]} : f32[]
  %nz = const() {value = [-0]} : f32[]
  %h = const() {value = [0]} : f16[]
  %v = const() {value = [0, 0]} : f32[2]
  %r1 = reduce_sum(%x) {axes = [1], keep_dims = false} : f32[2]
  %r2 = reduce_sum(%x) {axes = [1], keep_dims = true} : f32[2, 1]
  %r3 = reduce_sum(%x) {axes = [0], keep_dims = false} : f32[3]
  %p = add(%r1, %z) : f32[2]
  %q = add(%r1, %nz) : f32[2]
  %s = add(%p, %q) : f32[2]
  %y = add(%s, %v) : f32[2]
  return %y, %r2, %r3, %h
}
)";
  bool changed = true;
  const std::string got = run_pass(distinct, [](ir::Graph& g) { return cse(g); }, &changed);
  EXPECT_FALSE(changed);
  EXPECT_EQ(got, distinct);
}

TEST(Cse, KeepsInputsParamsAndOutputs) {
  bool changed = false;
  const std::string got = run_pass(R"(graph g {
  %x = input() : f32[2]
  %x_again = input() : f32[2]
  %w = param() : f32[2]
  %w_again = param() : f32[2]
  %a = add(%x, %w) : f32[2]
  %b = add(%x, %w) : f32[2]
  %c = add(%x, %w) : f32[2]
  %d = add(%x_again, %w_again) : f32[2]
  %e = exp(%c) : f32[2]
  return %a, %b, %e, %d
}
)", [](ir::Graph& g) { return cse(g); }, &changed);
  EXPECT_TRUE(changed);
  // %b is an output: it keeps its node and name. %c merges into the first, %a.
  expect_text(got, R"(graph g {
  %x = input() : f32[2]
  %x_again = input() : f32[2]
  %w = param() : f32[2]
  %w_again = param() : f32[2]
  %a = add(%x, %w) : f32[2]
  %b = add(%x, %w) : f32[2]
  %d = add(%x_again, %w_again) : f32[2]
  %e = exp(%a) : f32[2]
  return %a, %b, %e, %d
}
)");
}

TEST(Cse, MergesLargeConstantsByContent) {
  ir::Graph g = testing::parse(R"(graph g {
  %x = input() : f32[4]
  %y = relu(%x) : f32[4]
  return %y
}
)");
  // Two separately allocated but equal tensors and a third differing in its last element.
  auto make = [](float last) {
    Tensor t(DType::f32, {1000});
    auto s = t.span<float>();
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<float>(i) * 0.25f;
    s.back() = last;
    return t;
  };
  auto add_const = [&](const char* name, Tensor t) {
    ir::Node n;
    n.op = ir::Op::constant;
    n.name = name;
    n.type = {t.dtype(), t.shape()};
    n.attrs = ir::make_attrs(ir::Op::constant, {{"value", t}});
    return g.add(std::move(n));
  };
  const ir::ValueId a = add_const("a", make(1));
  const ir::ValueId b = add_const("b", make(1));
  const ir::ValueId c = add_const("c", make(2));
  g.outputs() = {a, b, c};  // outputs would keep them apart: read them through relus instead
  for (ir::ValueId id : {a, b, c}) {
    ir::Node n;
    n.op = ir::Op::relu;
    n.name = "r_" + g.node(id).name;
    n.inputs = {id};
    n.type = g.node(id).type;
    g.outputs()[static_cast<std::size_t>(id - a)] = g.add(std::move(n));
  }
  ASSERT_TRUE(cse(g));
  ir::verify(g);
  ASSERT_FALSE(g.find("b"));
  EXPECT_TRUE(g.find("a"));
  EXPECT_TRUE(g.find("c"));
  // r_b was the same relu of the same constant as r_a, but it is an output and stays.
  EXPECT_EQ(g.node(*g.find("r_b")).inputs, std::vector<ir::ValueId>{*g.find("a")});
}

}  // namespace
}  // namespace orion::ir
