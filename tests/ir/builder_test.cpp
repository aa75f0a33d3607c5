// The builder: eager type checks that name the op, scoped names, unique names, finish().
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir_test_util.h"

namespace orion::ir {
namespace {

using testing::error_of;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Builder, BuildsAVerifiedGraph) {
  Builder b("mlp");
  const Value x = b.input("x", DType::f32, {16, 64});
  const Value h = b.gelu(b.matmul(x, b.param("w1", DType::f32, {64, 256})));
  b.output(h);
  EXPECT_EQ(b.shape(h), (Shape{16, 256}));
  const Graph g = b.finish();
  EXPECT_EQ(g.name(), "mlp");
  ASSERT_EQ(g.size(), 4);
  EXPECT_EQ(g.node(0).op, Op::input);
  EXPECT_EQ(g.node(1).op, Op::param);
  EXPECT_EQ(g.node(2).op, Op::matmul);
  EXPECT_EQ(g.node(2).inputs, (std::vector<ValueId>{0, 1}));
  EXPECT_EQ(g.node(3).op, Op::gelu);
  EXPECT_EQ(g.node(3).type, (TensorType{DType::f32, {16, 256}}));
  EXPECT_EQ(g.outputs(), std::vector<ValueId>{3});
}

TEST(Builder, EagerErrorsNameTheOp) {
  Builder b;
  const Value x = b.input("x", DType::f32, {2, 3});
  const Value y = b.input("y", DType::f32, {4, 5});
  const std::string m = error_of([&] { b.matmul(x, y); });
  EXPECT_TRUE(contains(m, "(matmul): inner dimensions differ")) << m;
  const std::string a = error_of([&] { b.add(x, y); });
  EXPECT_TRUE(contains(a, "(add): shapes [2, 3] and [4, 5] do not broadcast")) << a;
  const std::string s = error_of([&] { b.softmax(x, 3); });
  EXPECT_TRUE(contains(s, "(softmax): axis 3 is out of range for rank 2")) << s;
  const std::string ar = error_of([&] { b.op(Op::relu, {x, y}); });
  EXPECT_EQ(ar, "builder: relu given 2 inputs");
  const std::string src = error_of([&] { b.op(Op::input, {}); });
  EXPECT_TRUE(contains(src, "use input(), param() or constant() for input")) << src;
  const std::string at = error_of([&] { b.op(Op::softmax, {x}, {{"axes", std::int64_t{0}}}); });
  EXPECT_EQ(at, "softmax has no attribute 'axes'");
  const std::string other = error_of([&] { b.relu(Value{17}); });
  EXPECT_TRUE(contains(other, "relu given a value of another builder")) << other;
  // Nothing was added by the failed calls.
  b.output(x);
  EXPECT_EQ(b.finish().size(), 2);
}

TEST(Builder, ScopesPrefixNames) {
  Builder b;
  const Value x = b.input("x", DType::f32, {2, 4});
  b.push_scope("h0");
  b.push_scope("attn");
  const Value w = b.param("w", DType::f32, {4, 4});
  const Value q = b.name(b.matmul(x, w), "q");
  const Value r = b.relu(q);
  b.pop_scope();
  const Value o = b.name(b.relu(r), "out");
  b.pop_scope();
  const Value top = b.name(b.relu(o), "top");
  b.output(top);
  const Graph g = b.finish();
  EXPECT_EQ(g.node(w.id).name, "h0.attn.w");
  EXPECT_EQ(g.node(q.id).name, "h0.attn.q");
  EXPECT_EQ(g.node(r.id).name.rfind("h0.attn.relu_", 0), 0u) << g.node(r.id).name;
  EXPECT_EQ(g.node(o.id).name, "h0.out");
  EXPECT_EQ(g.node(top.id).name, "top");
  EXPECT_EQ(error_of([&] { b.pop_scope(); }), "builder: pop_scope without push_scope");
}

TEST(Builder, NameCollisionsAreErrors) {
  Builder b;
  const Value x = b.input("x", DType::f32, {2});
  const Value r = b.name(b.relu(x), "r");
  EXPECT_EQ(b.name(r, "r").id, r.id);  // renaming a value to its own name is fine
  const Value s = b.relu(r);
  EXPECT_EQ(error_of([&] { b.name(s, "x"); }), "builder: the name %x is already used");
  EXPECT_EQ(error_of([&] { b.input("x", DType::f32, {3}); }), "builder: the name %x is already used");
  b.push_scope("blk");
  b.name(s, "r");  // blk.r differs from r
  EXPECT_EQ(error_of([&] { b.param("r", DType::f32, {2}); }), "builder: the name %blk.r is already used");
}

TEST(Builder, FinishVerifiesAndResets) {
  Builder b("g");
  b.input("x", DType::f32, {2});
  EXPECT_EQ(error_of([&] { b.finish(); }), "graph g: has no outputs");
  Builder c("h");
  const Value x = c.input("x", DType::f32, {2});
  c.output(c.name(c.relu(x), "bad name"));
  EXPECT_TRUE(contains(error_of([&] { c.finish(); }), "'bad name' is not a valid name"));

  Builder d("k");
  d.push_scope("s");
  d.output(d.relu(d.input("x", DType::f32, {2})));
  const Graph first = d.finish();
  EXPECT_EQ(first.size(), 2);
  // Afterwards the builder is empty, with the same graph name, no scope, and counting anew.
  const Value y = d.input("x", DType::f32, {3});
  const Value r = d.relu(y);
  d.output(r);
  const Graph second = d.finish();
  EXPECT_EQ(second.name(), "k");
  EXPECT_EQ(second.size(), 2);
  EXPECT_EQ(second.node(1).name, "relu_0");
}

TEST(Builder, ConstantsAndScalars) {
  Builder b;
  const Value c = b.constant(Tensor::from_ints({2}, std::vector<std::int32_t>{4, 5}));
  const Value s = b.scalar(1.5f, DType::bf16);
  b.output(c);
  b.output(s);
  const Graph g = b.finish();
  EXPECT_EQ(g.node(c.id).type, (TensorType{DType::i32, {2}}));
  EXPECT_EQ(g.node(s.id).type, (TensorType{DType::bf16, {}}));
  const Tensor& v = g.node(s.id).attr<Tensor>("value");
  EXPECT_EQ(v.span<std::uint16_t>()[0], 0x3fc0);  // 1.5 = 0x3fc00000 as a float
}

}  // namespace
}  // namespace orion::ir
