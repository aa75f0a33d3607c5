// lower_for_ane on the GPT-2 block: the validator accepts the kernel for both targets, the
// lowered graph computes the block on the CPU executor in the ANE's fp16 numerics, and the
// MIL written from it is deterministic, re-reads bit for bit (weights) and round-trips through
// the MIL parser in both dialects. The full device slice (ane-sim) is tests/device.
#include "compile/ane/ane_lowering.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "compile/mil_test_util.h"
#include "compile/mil/mil_to_ir.h"
#include "compile/mil/mil_writer.h"
#include "compile/blob/weight_blob_reader.h"
#include "core/testing_temp_dir.h"
#include "model/gpt2/gpt2_block.h"
#include "model/gpt2_block_fixture.h"
#include "passes_test_util.h"

namespace orion::compile {
namespace {

using Block = model::testing::Gpt2BlockFixture;
using model::testing::make_gpt2_block_fixture;

Tensor reference(const Block& b) {
  return testing::run(b.graph, b.inputs())[0];
}

// [S, C] -> [1, C, 1, P] with zeros after the real tokens, and back: loops written here.
Tensor to_surface(const Tensor& x, std::int64_t P) {
  const std::int64_t S = x.shape()[0], C = x.shape()[1];
  const std::vector<float> v = x.to_floats();
  std::vector<float> out(static_cast<std::size_t>(C * P), 0.0f);
  for (std::int64_t s = 0; s < S; ++s)
    for (std::int64_t c = 0; c < C; ++c) out[static_cast<std::size_t>(c * P + s)] = v[static_cast<std::size_t>(s * C + c)];
  return Tensor::from_floats({1, C, 1, P}, out);
}

Tensor from_surface(const Tensor& y, std::int64_t S) {
  const std::int64_t C = y.shape()[1], P = y.shape()[3];
  const std::vector<float> v = y.to_floats();
  std::vector<float> out(static_cast<std::size_t>(S * C));
  for (std::int64_t s = 0; s < S; ++s)
    for (std::int64_t c = 0; c < C; ++c) out[static_cast<std::size_t>(s * C + c)] = v[static_cast<std::size_t>(c * P + s)];
  return Tensor::from_floats({S, C}, out);
}

double rel_l2(const Tensor& want, const Tensor& got) {
  const std::vector<float> a = want.to_floats(), b = got.to_floats();
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    err += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(a[i]) * a[i];
  }
  return std::sqrt(err / norm);
}

const model::Gpt2BlockShape kSmall{.seq = 32, .dim = 64, .heads = 2};

TEST(AneLowering, SmallBlockPassesTheValidatorForBothTargets) {
  const Block b = make_gpt2_block_fixture(kSmall, 7);
  for (bool m1 : {false, true}) {
    AneLoweringOptions o;
    o.target.m1_m2 = m1;
    const AneLowered k = lower_for_ane(b.graph, b.params, o);  // throws on any error
    for (const AneViolation& w : k.warnings) std::cout << "[ info ] " << w.message() << "\n";
    for (const AneViolation& v : check_kernel_graph(k.graph, o.target)) EXPECT_FALSE(v.is_error()) << v.message();
    EXPECT_EQ(k.io.seq, 32);
    EXPECT_EQ(k.io.padded_seq, 384);  // 64 channels * 384 * 2 bytes = 49,152
    EXPECT_EQ(k.io.input_bytes, 49'152);
    EXPECT_EQ(k.io.output_bytes, 49'152);
    EXPECT_TRUE(k.graph.nodes_of(ir::Op::concat).empty());
    EXPECT_TRUE(k.graph.nodes_of(ir::Op::matmul).size() == 2);  // q k^T and probs v; the rest are convs
    EXPECT_EQ(k.graph.nodes_of(ir::Op::conv).size(), 4u);
    for (ir::ValueId t : k.graph.nodes_of(ir::Op::transpose))
      EXPECT_EQ(k.graph.node(t).attr_ints("perm"), (std::vector<std::int64_t>{0, 1, 3, 2}));
  }
}

// ANE013: on M1/M2 a matmul's inner dimension must be a multiple of 32; head_dim 16 (64
// channels, 4 heads) is refused for that target (zero padding of the head dimension is not
// done), and accepted for the others.
TEST(AneLowering, HeadDimensionNotAMultipleOf32IsRefusedOnM1M2) {
  const Block b = make_gpt2_block_fixture({.seq = 32, .dim = 64, .heads = 4}, 8);
  AneLoweringOptions o;
  EXPECT_NO_THROW(lower_for_ane(b.graph, b.params, o));
  o.target.m1_m2 = true;
  EXPECT_NE(testing::error_of([&] { lower_for_ane(b.graph, b.params, o); }).find("ANE013"), std::string::npos);
}

// On the CPU executor in fp16 numerics (the ANE's storage), the lowered kernel computes the
// block's real tokens. Measured rel L2: 3.5e-4 (printed).
TEST(AneLowering, LoweredBlockComputesTheBlockInFp16) {
  const Block b = make_gpt2_block_fixture(kSmall, 9);
  const Tensor want = reference(b);
  const AneLowered k = lower_for_ane(b.graph, b.params);
  const Tensor got =
      from_surface(testing::run(k.graph, {{"x", to_surface(b.x, k.io.padded_seq)}}, exec::Numerics::f16)[0], 32);
  const double err = rel_l2(want, got);
  std::cout << "[ info ] lowered block on the CPU executor, f16: rel L2 " << err << "\n";
  EXPECT_LT(err, 1e-2);
}

TEST(AneLowering, MilIsDeterministicAndRoundTripsInBothDialects) {
  const Block b = make_gpt2_block_fixture(kSmall, 10);
  const AneLowered k = lower_for_ane(b.graph, b.params);
  for (MilDialect d : {MilDialect::ios18, MilDialect::ios16}) {
    SCOPED_TRACE(d == MilDialect::ios18 ? "ios18" : "ios16");
    MilWriteOptions o;
    o.dialect = d;
    const MilProgram p = write_mil(k.graph, o);
    const MilProgram again = write_mil(k.graph, o);
    EXPECT_EQ(p.text, again.text);
    EXPECT_EQ(p.weights.bytes(), again.weights.bytes());
    EXPECT_EQ(p.text.find("concat"), std::string::npos);

    testing_util::TempDir dir;
    write_model_folder(p, dir.path(), o);
    const ir::Graph back = parse_mil(p.text, "model.mil", dir.path());
    EXPECT_EQ(write_mil(back, o).text, p.text);

    // The blob holds every fp16 const above the inline limit, in node order (the writer's
    // order): each re-read through WeightBlobReader is the graph's weight bit for bit.
    const WeightBlobReader r = WeightBlobReader::open(dir.path() + "/weights/weight.bin");
    int checked = 0;
    for (ir::ValueId id : k.graph.nodes_of(ir::Op::constant)) {
      const Tensor& v = k.graph.node(id).attr<Tensor>("value");
      if (v.dtype() != DType::f16 || v.numel() <= o.max_inline_elements) continue;
      ASSERT_LT(static_cast<std::size_t>(checked), r.records().size());
      const BlobRecord& rec = r.records()[static_cast<std::size_t>(checked)];
      EXPECT_TRUE(testing::same_bits(r.tensor(rec.record_offset, DType::f16, v.shape()), v))
          << k.graph.node(id).name;
      ++checked;
    }
    EXPECT_EQ(checked, static_cast<int>(r.count()));
    EXPECT_GE(checked, 4);  // the four conv weights at least
  }
}

}  // namespace
}  // namespace orion::compile
