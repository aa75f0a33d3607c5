// dce: nodes no output reads are removed; unused inputs stay unless told otherwise.
#include <gtest/gtest.h>

#include "ir/transforms/dce.h"
#include "transform_test_util.h"

namespace orion::ir {
namespace {

using testing::expect_text;
using testing::run_pass;

constexpr std::string_view kDceBefore = R"(graph g {
  %x = input() : f32[2, 3]
  %unused = input() : f32[4]
  %w = param() : f32[2, 3]
  %dead_w = param() : f32[3]
  %c = const() {value = [1, 2, 3]} : f32[3]
  %a = add(%x, %w) : f32[2, 3]
  %dead = mul(%a, %dead_w) : f32[2, 3]
  %dead2 = exp(%dead) : f32[2, 3]
  %y = add(%a, %c) : f32[2, 3]
  return %y, %x
}
)";

TEST(Dce, RemovesWhatNoOutputReadsAndKeepsInputs) {
  bool changed = false;
  const std::string got = run_pass(kDceBefore, [](ir::Graph& g) { return dce(g); }, &changed);
  EXPECT_TRUE(changed);
  expect_text(got, R"(graph g {
  %x = input() : f32[2, 3]
  %unused = input() : f32[4]
  %w = param() : f32[2, 3]
  %c = const() {value = [1, 2, 3]} : f32[3]
  %a = add(%x, %w) : f32[2, 3]
  %y = add(%a, %c) : f32[2, 3]
  return %y, %x
}
)");
}

TEST(Dce, CanDropUnusedInputs) {
  const std::string got =
      run_pass(kDceBefore, [](ir::Graph& g) { return dce(g, {.keep_unused_inputs = false}); });
  expect_text(got, R"(graph g {
  %x = input() : f32[2, 3]
  %w = param() : f32[2, 3]
  %c = const() {value = [1, 2, 3]} : f32[3]
  %a = add(%x, %w) : f32[2, 3]
  %y = add(%a, %c) : f32[2, 3]
  return %y, %x
}
)");
}

TEST(Dce, ReportsNoChangeOnALiveGraph) {
  constexpr std::string_view live = R"(graph g {
  %x = input() : f32[2]
  %y = relu(%x) : f32[2]
  return %y
}
)";
  bool changed = true;
  const std::string got = run_pass(live, [](ir::Graph& g) { return dce(g); }, &changed);
  EXPECT_FALSE(changed);
  EXPECT_EQ(got, live);
}

}  // namespace
}  // namespace orion::ir
