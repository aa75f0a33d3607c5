// The first end-to-end slice of issue 5: one GPT-2 block (model/gpt2_block) through
// lower_for_ane, written as MIL + weight blob into a folder, compiled, loaded and evaluated by
// ane-sim on surfaces packed on the host, unpacked, and compared with the CPU executor's f32
// result on the original token-major graph. Both MIL dialects; a small block (dim 64, 2 heads,
// 32 tokens padded to 384 for the 48 KiB surface minimum) and GPT-2 124M's block shape (dim
// 768, 12 heads, 64 tokens).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>

#include "core/half.h"
#include "core/random.h"
#include "compile/ane/ane_lowering.h"
#include "compile/mil/mil_writer.h"
#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "device/ane_packing.h"
#include "device/ane_sim.h"
#include "exec/cpu/executor.h"
#include "model/gpt2/gpt2_block.h"
#include "model/gpt2_block_fixture.h"
#include "model/rel_error.h"

namespace orion::device {
namespace {

using Block = model::testing::Gpt2BlockFixture;
using model::testing::make_gpt2_block_fixture;
using model::testing::rel_l2;

struct SliceErrors {
  double y = 0;      // rel L2 of the block's output
  double delta = 0;  // rel L2 of y - x, the block's own contribution (the residual excluded)
};

SliceErrors run_slice(const model::Gpt2BlockShape& shape, compile::MilDialect dialect, bool m1_m2) {
  const Block b = make_gpt2_block_fixture(shape, 42);
  TensorMap ref_in{{"x", b.x}};
  for (const auto& [name, t] : b.params) ref_in[name] = t;
  const Tensor want = exec::CpuExecutor(b.graph, {exec::Numerics::f32, 2}).run(ref_in)[0];

  compile::AneLoweringOptions lo;
  lo.target.m1_m2 = m1_m2;
  const compile::AneLowered k = compile::lower_for_ane(b.graph, b.params, lo);
  compile::MilWriteOptions mo;
  mo.dialect = dialect;
  mo.one_file_per_tensor = m1_m2;  // ANE039
  const compile::MilProgram p = compile::write_mil(k.graph, mo);
  testing_util::TempDir dir;
  compile::write_model_folder(p, dir.path(), mo);

  AneSimOptions so;
  so.target = lo.target;
  so.threads = 2;
  AneSim sim(so);
  const AneProgramId id = sim.compile(dir.path());
  sim.load(id);
  // The binding order the device uses is the one KernelIo recorded.
  EXPECT_EQ(sim.inputs(id).size(), k.io.inputs.size());
  EXPECT_EQ(sim.inputs(id)[0].name, k.io.inputs[0].name);
  EXPECT_EQ(sim.outputs(id)[0].name, k.io.outputs[0].name);
  EXPECT_EQ(sim.inputs(id)[0].type.shape, k.io.inputs[0].padded);

  AneSurface in(static_cast<std::size_t>(k.io.input_bytes));
  AneSurface out(static_cast<std::size_t>(k.io.output_bytes));
  pack_token_major(b.x, k.io.padded_seq, in);
  sim.evaluate(id, {&in}, {&out});
  sim.unload(id);
  const Tensor got = unpack_token_major(out, shape.dim, shape.seq, k.io.padded_seq);

  const std::vector<float> w = want.to_floats(), g = got.to_floats(), x = b.x.to_floats();
  std::vector<float> wd(w.size()), gd(g.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    wd[i] = w[i] - x[i];
    gd[i] = g[i] - x[i];
  }
  return {rel_l2(w, g), rel_l2(wd, gd)};
}

struct Case {
  const char* name;
  model::Gpt2BlockShape shape;
  compile::MilDialect dialect;
  bool m1_m2;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Measured on ane-sim (fp16 storage, fp32 arithmetic inside an op), printed by the test:
//   small (dim 64, 2 heads, 32 tokens padded to 384), ios18 and ios16/M1:  y 3.3e-4, y - x 2.5e-3
//   124M's block (dim 768, 12 heads, 64 tokens),      ios18 and ios16/M1:  y 5.1e-4, y - x 1.1e-3
// (the two dialects spell the same program, so their figures are equal).
// The bound is 1e-2 for both; fp16 keeps 11 bits (4.9e-4 per stored value) and the block
// stores about 30 values along its longest path; a wrong rewrite (a missing bias, a norm over
// the wrong axis, a head mixed up, a padded key attended) shows in y - x: the residual makes
// y alone a weak check. Measured with real queries allowed to see the padded keys (a broken
// mask extension): y 9.9e-3, still under the bound; y - x 7.4e-2, caught.
class AneBlockSlice : public ::testing::TestWithParam<Case> {};

TEST_P(AneBlockSlice, MatchesTheCpuReference) {
  const Case& c = GetParam();
  const SliceErrors e = run_slice(c.shape, c.dialect, c.m1_m2);
  std::cout << "[ info ] " << c.name << ": rel L2 of y " << e.y << ", of y - x " << e.delta << "\n";
  EXPECT_LT(e.y, 1e-2);
  EXPECT_LT(e.delta, 1e-2);
}

INSTANTIATE_TEST_SUITE_P(
    Gpt2, AneBlockSlice,
    ::testing::Values(Case{"small_ios18", {.seq = 32, .dim = 64, .heads = 2}, compile::MilDialect::ios18, false},
                      Case{"small_ios16_m1", {.seq = 32, .dim = 64, .heads = 2}, compile::MilDialect::ios16, true},
                      Case{"gpt2_124m_ios18", {.seq = 64, .dim = 768, .heads = 12}, compile::MilDialect::ios18, false},
                      Case{"gpt2_124m_ios16_m1", {.seq = 64, .dim = 768, .heads = 12}, compile::MilDialect::ios16, true}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// The packing helpers: channel-major, zeros in the padded columns, and back.
TEST(AnePacking, TokenMajorRoundTripWithPadding) {
  Tensor x(DType::f32, {3, 2});
  const float v[] = {1, 2, 3, 4, 5, 70000};
  std::copy(std::begin(v), std::end(v), x.span<float>().begin());
  AneSurface s(64);
  pack_token_major(x, 5, s);
  const Tensor raw = unpack_fp16(s, {1, 2, 1, 5});
  EXPECT_EQ(raw.to_floats(), (std::vector<float>{1, 3, 5, 0, 0, 2, 4, 65504, 0, 0}));
  EXPECT_EQ(unpack_token_major(s, 2, 3, 5).to_floats(), (std::vector<float>{1, 2, 3, 4, 5, 65504}));
  AneSurface small(8);
  EXPECT_THROW(pack_token_major(x, 5, small), Error);
  EXPECT_THROW(pack_token_major(x, 2, s), Error);
}

// Every padding case round-trips exactly for values fp16 holds: no padding, padded columns,
// shapes that end inside the transposes' 32 x 32 tiles, and a surface allocated larger than
// the tensor (one allocation per direction, ANE010).
TEST(AnePacking, RoundTripsEveryPaddingCase) {
  Rng rng(3);
  struct Shape3 {
    std::int64_t seq, channels, padded, extra_bytes;
  };
  for (const Shape3& c : {Shape3{32, 64, 32, 0}, Shape3{1, 768, 32, 0}, Shape3{45, 70, 64, 0}, Shape3{33, 31, 96, 0},
                          Shape3{7, 3, 7, 256}, Shape3{100, 129, 128, 4096}}) {
    Tensor x(DType::f32, {c.seq, c.channels});
    rng.fill_uniform(x.span<float>(), -100, 100);
    round_to_half(x.span<float>());
    AneSurface s(static_cast<std::size_t>(c.channels * c.padded * 2 + c.extra_bytes));
    std::memset(s.bytes().data(), 0xff, s.size());  // stale bytes, which packing must overwrite
    pack_token_major(x, c.padded, s);
    EXPECT_EQ(unpack_token_major(s, c.channels, c.seq, c.padded).to_floats(), x.to_floats())
        << c.seq << " x " << c.channels << " padded to " << c.padded;
    const std::vector<float> raw = unpack_fp16(s, {1, c.channels, 1, c.padded}).to_floats();
    for (std::int64_t ch = 0; ch < c.channels; ++ch)
      for (std::int64_t t = c.seq; t < c.padded; ++t) ASSERT_EQ(raw[static_cast<std::size_t>(ch * c.padded + t)], 0.0f);
  }
}

}  // namespace
}  // namespace orion::device
