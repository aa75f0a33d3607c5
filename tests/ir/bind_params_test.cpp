// bind_params: params become constants holding their weights; mismatches are errors.
#include <gtest/gtest.h>

#include "ir/transforms/bind_params.h"
#include "ir/ir_test_util.h"
#include "transform_test_util.h"

namespace orion::ir {
namespace {

using ir::testing::error_of;
using testing::expect_text;
using testing::parse;
using testing::run_pass;

constexpr std::string_view kBindBefore = R"(graph g {
  %x = input() : f32[2, 2]
  %w = param() : f32[2, 2]
  %g = param() : f16[2]
  %h = matmul(%x, %w) {transpose_x = false, transpose_y = false} : f32[2, 2]
  %y = add(%h, %x) : f32[2, 2]
  return %y, %g
}
)";

TensorMap weights() {
  TensorMap v;
  v["w"] = Tensor::from_floats({2, 2}, std::vector<float>{1, 2, 3, 4});
  v["g"] = Tensor::from_floats({2}, std::vector<float>{0.1f, 70000});  // f32 given for f16
  v["unrelated"] = Tensor::from_floats({1}, std::vector<float>{9});
  return v;
}

TEST(BindParams, TurnsParamsIntoConstants) {
  const TensorMap v = weights();
  bool changed = false;
  const std::string got = run_pass(kBindBefore, [&](ir::Graph& g) { return bind_params(g, v) == 2; }, &changed);
  EXPECT_TRUE(changed);
  // The f32 values are converted to the param's f16 as Tensor::to does (70000 is beyond fp16:
  // inf; saturation is to_fp16's job, not this pass's).
  expect_text(got, R"(graph g {
  %x = input() : f32[2, 2]
  %w = const() {value = [1, 2, 3, 4]} : f32[2, 2]
  %g = const() {value = [0.099975586, inf]} : f16[2]
  %h = matmul(%x, %w) {transpose_x = false, transpose_y = false} : f32[2, 2]
  %y = add(%h, %x) : f32[2, 2]
  return %y, %g
}
)");
}

TEST(BindParams, MissingAndMismatchedValues) {
  TensorMap v = weights();
  v.erase("g");
  ir::Graph g = parse(kBindBefore);
  EXPECT_EQ(error_of([&] { bind_params(g, v); }), "bind_params: no value for param %g (param)");
  g = parse(kBindBefore);
  EXPECT_EQ(bind_params(g, v, {.require_all = false}), 1);
  EXPECT_EQ(g.node(*g.find("g")).op, ir::Op::param);
  EXPECT_EQ(g.node(*g.find("w")).op, ir::Op::constant);

  v = weights();
  v["w"] = Tensor::from_floats({4}, std::vector<float>{1, 2, 3, 4});
  g = parse(kBindBefore);
  EXPECT_EQ(error_of([&] { bind_params(g, v); }),
            "bind_params: param %w (param) is f32[2, 2], its value is f32[4]");
  v = weights();
  v["w"] = Tensor::from_ints({2, 2}, std::vector<std::int32_t>{1, 2, 3, 4});
  g = parse(kBindBefore);
  EXPECT_EQ(error_of([&] { bind_params(g, v); }),
            "bind_params: param %w (param) is f32[2, 2], its value is i32[2, 2]");
}

}  // namespace
}  // namespace orion::ir
