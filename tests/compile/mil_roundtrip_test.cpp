// MIL round trips: for a graph using each mapped op, in both dialects, parse(print(g)) prints
// the same text and the same weight blob, and evaluates to the same bits as g on the CPU
// executor in f16 numerics.
#include <gtest/gtest.h>

#include "compile/mil/mil_ops.h"
#include "compile/mil/mil_to_ir.h"
#include "compile/mil/mil_writer.h"
#include "compile/mil_test_util.h"
#include "core/testing_temp_dir.h"

namespace orion::compile {
namespace {

using testing::ane_graph_using;

void round_trip(const ir::Graph& g, MilDialect dialect, const std::string& what) {
  SCOPED_TRACE(what);
  testing_util::TempDir dir;
  MilWriteOptions o;
  o.dialect = dialect;
  const MilProgram p = write_mil(g, o);
  write_model_folder(p, dir.path(), o);
  const ir::Graph back = parse_mil(p.text, "model.mil", dir.path());
  const MilProgram again = write_mil(back, o);
  EXPECT_EQ(again.text, p.text);
  EXPECT_EQ(again.weights.bytes(), p.weights.bytes());
  EXPECT_EQ(back.outputs().size(), g.outputs().size());

  const TensorMap bind = testing::random_inputs(g, 99);
  const std::vector<Tensor> want = testing::run_f16(g, bind);
  const std::vector<Tensor> got = testing::run_f16(back, bind);
  ASSERT_EQ(want.size(), got.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(testing::same_bits(want[i], got[i])) << "output " << i << " differs";
}

TEST(MilRoundTrip, EveryMappedOpInBothDialects) {
  int graphs = 0;
  for (const MilOpInfo& m : all_mil_ops()) {
    const std::optional<ir::Graph> g = ane_graph_using(m.op);
    EXPECT_EQ(g.has_value(), !m.mil_name.empty()) << ir::op_info(m.op).name;
    if (!g) continue;
    for (MilDialect d : {MilDialect::ios18, MilDialect::ios16}) {
      round_trip(*g, d, std::string(ir::op_info(m.op).name) + (d == MilDialect::ios18 ? " ios18" : " ios16"));
      ++graphs;
    }
  }
  EXPECT_EQ(graphs, 2 * 28);
}

TEST(MilRoundTrip, ParsedGraphKeepsOpsAndAttributes) {
  const ir::Graph g = *ane_graph_using(ir::Op::conv);
  testing_util::TempDir dir;
  const MilProgram p = write_mil(g);
  write_model_folder(p, dir.path());
  const ir::Graph back = parse_mil(p.text, "model.mil", dir.path());
  const ir::Node& z = back.node(*back.find("z"));
  EXPECT_EQ(z.op, ir::Op::conv);
  EXPECT_EQ(z.attr_ints("strides"), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(z.attr_ints("pads"), (std::vector<std::int64_t>{0, 0, 2, 1}));
  EXPECT_EQ(z.attr_ints("dilations"), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(z.attr_int("groups"), 3);
  // Named consts were folded: only the inputs, the two weights and the two convs are nodes.
  EXPECT_EQ(back.size(), 5);
}

}  // namespace
}  // namespace orion::compile
