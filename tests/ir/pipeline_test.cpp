// The pass pipeline: passes run in order, the verifier runs after each and names the pass that
// broke the graph, diagnostics are collected, the IR can be dumped after chosen passes. Also the
// GraphRewriter's naming rules, which every structural pass relies on.
#include <gtest/gtest.h>

#include <sstream>

#include "ir/transforms/pipeline.h"
#include "ir/transforms/rewriter.h"
#include "ir/ir_test_util.h"
#include "transform_test_util.h"

namespace orion::ir {
namespace {

using ir::testing::error_of;
using testing::parse;

constexpr std::string_view kSmallGraph = R"(graph small {
  %x = input() : f32[2, 3]
  %y = relu(%x) : f32[2, 3]
  return %y
}
)";

TEST(Pipeline, RunsPassesInOrderAndRecordsWhatChanged) {
  std::vector<std::string> order;
  ir::Pipeline p;
  p.add("first", [&](ir::Graph&, ir::PassContext& c) {
    order.push_back(c.pass());
    c.note("hello");
    return false;
  });
  p.add("second", [&](ir::Graph& g, ir::PassContext& c) {
    order.push_back(c.pass());
    g.set_name("renamed");
    return true;
  });
  EXPECT_EQ(p.pass_names(), (std::vector<std::string>{"first", "second"}));
  ir::Graph g = parse(kSmallGraph);
  const ir::PipelineResult r = p.run(g);
  EXPECT_EQ(order, (std::vector<std::string>{"first", "second"}));
  ASSERT_EQ(r.passes.size(), 2u);
  EXPECT_EQ(r.passes[0].pass, "first");
  EXPECT_FALSE(r.passes[0].changed);
  EXPECT_TRUE(r.passes[1].changed);
  EXPECT_TRUE(r.changed());
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].pass, "first");
  EXPECT_EQ(r.diagnostics[0].message, "hello");
  EXPECT_EQ(g.name(), "renamed");
}

// A deliberately broken pass: it declares a wrong type on the relu. The pipeline must stop
// there, name the pass and give the verifier's message, and not run the next pass.
TEST(Pipeline, VerifierFailureNamesTheBrokenPass) {
  bool later_ran = false;
  ir::Pipeline p;
  p.add("ok", [](ir::Graph&, ir::PassContext&) { return false; });
  p.add("breaks_types", [](ir::Graph& g, ir::PassContext&) {
    g.node(*g.find("y")).type.shape = {3, 2};
    return true;
  });
  p.add("later", [&](ir::Graph&, ir::PassContext&) { return later_ran = true; });
  ir::Graph g = parse(kSmallGraph);
  const std::string msg = error_of([&] { p.run(g); });
  EXPECT_EQ(msg,
            "pass 'breaks_types' left an invalid graph: %y (relu): declared type f32[3, 2] but "
            "the inputs give f32[2, 3]");
  EXPECT_FALSE(later_ran);
  // The graph is left as the pass left it, for printing.
  EXPECT_EQ(g.node(*g.find("y")).type.shape, (Shape{3, 2}));
}

TEST(Pipeline, CountsFurtherProblems) {
  ir::Pipeline p;
  p.add("dangling", [](ir::Graph& g, ir::PassContext&) {
    g.node(*g.find("y")).inputs = {7};
    g.outputs() = {9};
    return true;
  });
  ir::Graph g = parse(kSmallGraph);
  EXPECT_EQ(error_of([&] { p.run(g); }),
            "pass 'dangling' left an invalid graph: %y (relu): input refers to value #7, which "
            "does not exist (and 2 more problems)");
}

TEST(Pipeline, ErrorsThrownByAPassNameIt) {
  ir::Pipeline p;
  p.add("throws", [](ir::Graph&, ir::PassContext&) -> bool { throw Error("no can do"); });
  ir::Graph g = parse(kSmallGraph);
  EXPECT_EQ(error_of([&] { p.run(g); }), "pass 'throws': no can do");
}

TEST(Pipeline, RejectsAnInvalidInputGraph) {
  ir::Pipeline p;
  ir::Graph g = parse(kSmallGraph);
  g.outputs().clear();
  EXPECT_EQ(error_of([&] { p.run(g); }), "pipeline: the input graph is invalid: graph small: has no outputs");
}

TEST(Pipeline, DumpsTheIrAfterChosenPasses) {
  ir::Pipeline p;
  p.add("a", [](ir::Graph& g, ir::PassContext&) { g.set_name("after_a"); return true; });
  p.add("b", [](ir::Graph& g, ir::PassContext&) { g.set_name("after_b"); return true; });
  ir::Graph g = parse(kSmallGraph);
  std::ostringstream all, only_b;
  p.run(g, {.after_pass = ir::dump_ir_after(all)});
  g = parse(kSmallGraph);
  p.run(g, {.after_pass = ir::dump_ir_after(only_b, {"b"})});
  const std::string body = "  %x = input() : f32[2, 3]\n  %y = relu(%x) : f32[2, 3]\n  return %y\n}\n";
  EXPECT_EQ(all.str(), "# after a\ngraph after_a {\n" + body + "# after b\ngraph after_b {\n" + body);
  EXPECT_EQ(only_b.str(), "# after b\ngraph after_b {\n" + body);
}

TEST(Rewriter, KeepsNamesAndSuffixesCollisions) {
  const ir::Graph src = parse(R"(graph g {
  %x = input() : f32[2]
  %t = relu(%x) : f32[2]
  %t_1 = exp(%t) : f32[2]
  return %t_1
}
)");
  ir::GraphRewriter rw(src);
  rw.copy(0);
  // A new node wanting a name the source uses (even one not copied yet) gets a suffix past
  // every used one.
  const ir::ValueId a = rw.op(ir::Op::neg, {rw.map(0)}, {}, "t");
  EXPECT_EQ(rw.node(a).name, "t_2");
  rw.take_over(1, a);  // the replacement of %t takes its name
  EXPECT_EQ(rw.node(a).name, "t");
  rw.copy(2);
  const ir::Graph out = rw.finish();
  EXPECT_EQ(ir::print_graph(out), R"(graph g {
  %x = input() : f32[2]
  %t = neg(%x) : f32[2]
  %t_1 = exp(%t) : f32[2]
  return %t_1
}
)");
}

TEST(Rewriter, ReportsUnmappedValuesAndTypeErrors) {
  const ir::Graph src = parse(kSmallGraph);
  ir::GraphRewriter rw(src);
  EXPECT_EQ(error_of([&] { rw.copy(1); }),
            "rewriter: value %x (input) is read before it was given a new value");
  rw.copy(0);
  const ir::ValueId s = rw.scalar(2, DType::f16, "two");
  EXPECT_EQ(error_of([&] { rw.op(ir::Op::add, {rw.map(0), s}, {}, "sum"); }),
            "%sum (add): inputs have different dtypes: f32[2, 3] and f16[]");
}

}  // namespace
}  // namespace orion::ir
