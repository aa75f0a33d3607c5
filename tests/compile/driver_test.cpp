// The compile driver (compile/driver.h) is its parts in order: plan_segments is chunk_matmuls
// then partition_graph on a copy of the graph; build_kernel is lower_for_ane, write_mil and
// write_model_folder, and what it returns is what it wrote.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstring>
#include <fstream>
#include <sstream>

#include "compile/driver.h"
#include "compile/passes/chunk_matmuls.h"
#include "core/random.h"
#include "core/temp_folder.h"
#include "ir/printer.h"
#include "model/gpt2/gpt2.h"
#include "model/gpt2/gpt2_block.h"
#include "model/gpt2_test_config.h"

namespace orion::compile {
namespace {

std::string driver_file_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CompileDriver, PlanIsChunkThenPartitionAndLeavesTheGraph) {
  const model::Gpt2Config c = model::testing::small_gpt2_config({.dim = 32, .vocab = 100, .positions = 64});
  const ir::Graph g = model::gpt2_graph(c, {.seq = 16});
  const std::string before = ir::print_graph(g);
  PartitionOptions o;
  o.seq = 16;
  o.target.on_chip_bytes = 5000;  // the head (6400 fp16 bytes) in two pieces
  o.prefix = "p_";
  const Partition got = plan_segments(g, o);
  EXPECT_EQ(ir::print_graph(g), before);
  ir::Graph chunked = g;
  chunk_matmuls(chunked, o.target.on_chip_bytes);
  const Partition want = partition_graph(chunked, o);
  ASSERT_EQ(got.segments.size(), want.segments.size());
  for (std::size_t i = 0; i < want.segments.size(); ++i) {
    EXPECT_EQ(got.segments[i].name, want.segments[i].name);
    EXPECT_EQ(got.segments[i].placement, want.segments[i].placement);
    EXPECT_EQ(ir::print_graph(got.segments[i].graph), ir::print_graph(want.segments[i].graph));
  }
  EXPECT_EQ(got.renamed, want.renamed);
}

TEST(CompileDriver, BuildWritesWhatLoweringAndTheWriterMake) {
  const model::Gpt2Config c = model::testing::small_gpt2_config({.dim = 32, .vocab = 100, .positions = 64});
  PartitionOptions po;
  po.seq = 16;
  const Partition p = plan_segments(model::gpt2_graph(c, {.seq = 16}), po);
  const Segment& kernel = p.segments.at(1);
  ASSERT_EQ(kernel.placement, Placement::ane);
  Rng rng(3);
  const auto init = model::gpt2_init_params(model::gpt2_graph(c, {.seq = 16}), 2, rng);
  const TensorMap w(init.begin(), init.end());

  KernelOptions o;
  o.lowering.kernel_name = kernel.name;
  o.mil.dialect = MilDialect::ios16;
  const TempFolder dir("orion-driver-test");
  const BuiltKernel built = build_kernel(kernel.graph, w, dir.path() + "/k", o);

  const AneLowered want = lower_for_ane(kernel.graph, w, o.lowering);
  const MilProgram mil = write_mil(want.graph, o.mil);
  EXPECT_EQ(built.mil.text, mil.text);
  EXPECT_EQ(built.mil.weights.bytes(), mil.weights.bytes());
  EXPECT_EQ(ir::print_graph(built.lowered.graph), ir::print_graph(want.graph));
  EXPECT_EQ(built.lowered.io.padded_seq, want.io.padded_seq);
  EXPECT_EQ(built.lowered.io.inputs.size(), want.io.inputs.size());
  EXPECT_EQ(driver_file_text(dir.path() + "/k/model.mil"), mil.text);
  const std::string blob = driver_file_text(dir.path() + "/k/weights/weight.bin");
  EXPECT_EQ(blob.size(), mil.weights.bytes().size());
  EXPECT_EQ(0, std::memcmp(blob.data(), mil.weights.bytes().data(), blob.size()));
}

}  // namespace
}  // namespace orion::compile
