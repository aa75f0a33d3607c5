// ane-sim on hand-written MIL programs: numerics, binding order, surfaces, the compile budget,
// baked weights, and every rule both loud (default) and faithful.
#include "device/ane_sim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/error.h"
#include "core/half.h"
#include "core/testing_temp_dir.h"
#include "device/device_test_util.h"

namespace orion::device {
namespace {

namespace fs = std::filesystem;
using testing_util::TempDir;

using namespace test_programs;

AneSurface surface_of(const std::vector<float>& v, std::size_t bytes = C * S * 2) {
  AneSurface s(bytes);
  Tensor t(DType::f32, {1, C, 1, static_cast<std::int64_t>(v.size() / C)});
  std::copy(v.begin(), v.end(), t.span<float>().begin());
  pack_fp16(t, s);
  return s;
}

std::vector<float> floats_of(const AneSurface& s, std::size_t n = C * S) {
  std::vector<std::uint16_t> h(n);
  std::memcpy(h.data(), s.bytes().data(), n * 2);
  std::vector<float> f(n);
  for (std::size_t i = 0; i < n; ++i) f[i] = half_to_float(h[i]);
  return f;
}

// x[c][s] = ((c * 7 + s) % 17 - 8) / 8: exact in fp16.
std::vector<float> test_input() {
  std::vector<float> x(C * S);
  for (int c = 0; c < C; ++c)
    for (int s = 0; s < S; ++s) x[c * S + s] = static_cast<float>((c * 7 + s) % 17 - 8) / 8.0f;
  return x;
}

// The conv in fp64 from the same fp16 weights, rounded to fp16 as the device stores it.
std::vector<float> conv_reference(int shift) {
  const auto w = weights(shift);
  const auto x = test_input();
  std::vector<float> y(C * S);
  for (int o = 0; o < C; ++o)
    for (int s = 0; s < S; ++s) {
      double acc = 0;
      for (int i = 0; i < C; ++i) acc += static_cast<double>(half_to_float(w[o * C + i])) * x[i * S + s];
      y[o * S + s] = half_to_float(float_to_half(static_cast<float>(acc)));
    }
  return y;
}

std::vector<float> run_conv(AneSim& sim, AneProgramId id) {
  const AneSurface x = surface_of(test_input());
  AneSurface y(C * S * 2);
  sim.evaluate(id, {&x}, {&y});
  return floats_of(y);
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel) {
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    err += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  EXPECT_LE(std::sqrt(err / norm), rel);
}

AneSimOptions options(bool faithful, int budget = 119, bool reload = true) {
  AneSimOptions o;
  o.faithful = faithful;
  o.compile_budget = budget;
  o.reload_reads_weights = reload;
  return o;
}

TEST(AneSim, ConvMatchesAnFp16Reference) {
  TempDir dir;
  write_folder(dir.path(), conv_program());
  AneSim sim;
  const AneProgramId id = sim.compile(dir.path());
  EXPECT_EQ(sim.compiles(), 1);
  ASSERT_EQ(sim.inputs(id).size(), 1u);
  EXPECT_EQ(sim.inputs(id)[0].type.str(), "f16[1, 64, 1, 384]");
  EXPECT_NE(error_of([&] { run_conv(sim, id); }).find("not loaded"), std::string::npos);
  sim.load(id);
  EXPECT_EQ(sim.loaded(), 1);
  // fp32 accumulation inside the op, one fp16 rounding of the result: within an fp16 ulp.
  expect_close(run_conv(sim, id), conv_reference(0), 1e-3);
  sim.unload(id);
  EXPECT_EQ(sim.loaded(), 0);
  EXPECT_THROW(sim.unload(id), Error);
}

TEST(AneSim, BindsInputsAndOutputsAlphabetically) {
  TempDir dir;
  write_folder(dir.path(), unordered_io_program());
  AneSim sim;
  const AneProgramId id = sim.compile(dir.path());
  EXPECT_EQ(sim.inputs(id)[0].name, "a");
  EXPECT_EQ(sim.outputs(id)[0].name, "m");
  sim.load(id);
  const AneSurface a = surface_of(std::vector<float>(C * S, 3.0f));
  const AneSurface b = surface_of(std::vector<float>(C * S, 0.5f));
  AneSurface m(C * S * 2), z(C * S * 2);
  sim.evaluate(id, {&a, &b}, {&m, &z});
  EXPECT_EQ(floats_of(m)[5], 1.5f);
  EXPECT_EQ(floats_of(z)[5], 2.5f);
  // Surfaces of different allocation sizes: the device's status 0x1d.
  const AneSurface big = surface_of(std::vector<float>(C * S, 1.0f), C * S * 2 + 64);
  EXPECT_NE(error_of([&] { sim.evaluate(id, {&a, &big}, {&m, &z}); }).find("0x1d"), std::string::npos);
  // A larger surface (same for all) is read packed from its start.
  const AneSurface a2 = surface_of(std::vector<float>(C * S, 3.0f), C * S * 2 + 64);
  AneSurface m2(C * S * 2 + 64), z2(C * S * 2 + 64);
  sim.evaluate(id, {&a2, &big}, {&m2, &z2});
  EXPECT_EQ(floats_of(z2)[C * S - 1], 2.0f);
}

TEST(AneSim, CompileBudget) {
  TempDir dir;
  write_folder(dir.path(), conv_program());
  AneSim loud(options(false, 2));
  loud.compile(dir.path());
  loud.compile(dir.path());
  EXPECT_NE(error_of([&] { loud.compile(dir.path()); }).find("ANE030"), std::string::npos);

  AneSim faithful(options(true, 1));
  const AneProgramId good = faithful.compile(dir.path());
  const AneProgramId bad = faithful.compile(dir.path());  // "succeeds"
  faithful.load(good);
  faithful.load(bad);
  expect_close(run_conv(faithful, good), conv_reference(0), 1e-3);
  const auto garbage = run_conv(faithful, bad);
  const auto want = conv_reference(0);
  int same = 0;
  for (std::size_t i = 0; i < want.size(); ++i) same += garbage[i] == want[i];
  EXPECT_LT(same, static_cast<int>(want.size()) / 100);
}

// The framework's on-disk program cache (ANE: "a cached program loads without a compile call
// and survives a process restart"): a second process finds the program by its text and
// weights and compiles nothing; new weights are a new program.
TEST(AneSim, ProgramCacheSkipsCompilesAcrossProcesses) {
  TempDir dir, cache;
  write_folder(dir.path(), conv_program());
  AneSimOptions o;
  o.program_cache_dir = cache.path() + "/programs";
  {
    AneSim first(o);
    first.compile(dir.path());
    EXPECT_EQ(first.compiles(), 1);
    EXPECT_EQ(first.cache_hits(), 0);
  }
  AneSim second(o);  // another process's view of the device
  const AneProgramId id = second.compile(dir.path());
  EXPECT_EQ(second.compiles(), 0);
  EXPECT_EQ(second.cache_hits(), 1);
  second.load(id);  // and it runs
  second.unload(id);
  write_folder(dir.path(), conv_program(), 5);  // other weights: not the cached program
  second.compile(dir.path());
  EXPECT_EQ(second.compiles(), 1);
  AneSim no_cache;
  no_cache.compile(dir.path());
  EXPECT_EQ(no_cache.cache_hits(), 0);
}

TEST(AneSim, WeightsAreBakedAtCompile) {
  TempDir dir;
  write_folder(dir.path(), conv_program(), 0);
  const std::string blob = dir.path() + "/weights/weight.bin";
  for (bool faithful : {false, true})
    for (bool reload : {true, false}) {
      write_folder(dir.path(), conv_program(), 0);
      AneSim sim(options(faithful, 119, reload));
      const AneProgramId id = sim.compile(dir.path());
      sim.load(id);
      const auto t = fs::last_write_time(blob);
      write_folder(dir.path(), conv_program(), 5);  // new weights on disk
      fs::last_write_time(blob, t + std::chrono::seconds(1));
      if (faithful) {
        expect_close(run_conv(sim, id), conv_reference(0), 1e-3);  // stale, silently
      } else {
        EXPECT_NE(error_of([&] { run_conv(sim, id); }).find("ANE029"), std::string::npos);
      }
      sim.unload(id);
      sim.load(id);
      if (reload) {
        expect_close(run_conv(sim, id), conv_reference(5), 1e-3);
      } else if (faithful) {
        expect_close(run_conv(sim, id), conv_reference(0), 1e-3);
      } else {
        EXPECT_NE(error_of([&] { run_conv(sim, id); }).find("ANE029"), std::string::npos);
      }
    }
}

// A conv whose weight is computed from a runtime input.
std::string runtime_weight_conv() {
  return program(kIo + " x, " + kIo + " v",
                 "    tensor<int32, [4]> b0 = const()[name = string(\"b0\"), val = tensor<int32, [4]>([0, 0, 0, 0])];\n"
                 "    tensor<int32, [4]> sz = const()[name = string(\"sz\"), val = tensor<int32, [4]>([1, 64, 1, 64])];\n"
                 "    tensor<int32, [4]> sh = const()[name = string(\"sh\"), val = tensor<int32, [4]>([64, 64, 1, 1])];\n"
                 "    tensor<fp16, [1, 64, 1, 64]> vs = slice_by_size(begin = b0, size = sz, x = v)[name = string(\"vs\")];\n"
                 "    tensor<fp16, [64, 64, 1, 1]> W = reshape(shape = sh, x = vs)[name = string(\"W\")];\n" +
                     kConvConsts + "    " + kIo +
                     " y = conv(dilations = dl, groups = gr, pad = pd, pad_type = pt, strides = st, weight = W, x = "
                     "x)[name = string(\"y\")];\n",
                 "y");
}

TEST(AneSim, RuntimeWeightConvIsRefusedOrZero) {
  TempDir dir;
  write_folder(dir.path(), runtime_weight_conv());
  AneSim loud;
  EXPECT_NE(error_of([&] { loud.compile(dir.path()); }).find("ANE005"), std::string::npos);
  AneSim faithful(options(true));
  const AneProgramId id = faithful.compile(dir.path());
  faithful.load(id);
  const AneSurface x = surface_of(test_input()), v = surface_of(test_input());
  AneSurface y(C * S * 2);
  std::memset(y.bytes().data(), 0x55, y.size());
  faithful.evaluate(id, {&v, &x}, {&y});
  for (float f : floats_of(y)) ASSERT_EQ(f, 0.0f);
}

TEST(AneSim, TilePoisonsTheDevice) {
  TempDir dir, good;
  write_folder(dir.path(), program(kIo + " x",
                                   "    tensor<int32, [4]> r = const()[name = string(\"r\"), val = tensor<int32, [4]>([1, 1, 1, 2])];\n"
                                   "    tensor<fp16, [1, 64, 1, 768]> y = tile(reps = r, x = x)[name = string(\"y\")];\n",
                                   "y"));
  write_folder(good.path(), conv_program());
  AneSim loud;
  EXPECT_NE(error_of([&] { loud.compile(dir.path()); }).find("ANE020"), std::string::npos);
  AneSim faithful(options(true));
  const AneProgramId ok = faithful.compile(good.path());
  faithful.load(ok);
  expect_close(run_conv(faithful, ok), conv_reference(0), 1e-3);
  faithful.compile(dir.path());  // compiles...
  EXPECT_TRUE(faithful.poisoned());
  EXPECT_NE(error_of([&] { run_conv(faithful, ok); }).find("poisoned"), std::string::npos);  // ...and poisons
}

TEST(AneSim, InlineLiteralIsALoudFailureEitherWay) {
  TempDir dir;
  write_folder(dir.path(), program(kIo + " x", "    " + kIo + " y = softmax(axis = int32(-1), x = x)[name = string(\"y\")];\n", "y"));
  AneSim loud;
  const std::string m = error_of([&] { loud.compile(dir.path()); });
  EXPECT_NE(m.find("ANE018"), std::string::npos) << m;
  EXPECT_NE(m.find("model.mil:5:"), std::string::npos) << m;  // the argument's line
  AneSim faithful(options(true));
  EXPECT_NE(error_of([&] { faithful.compile(dir.path()); }).find("without a diagnosis"), std::string::npos);
}

// ANE012 is the surface's: a 4 KiB tensor runs in a surface allocated at 48 KiB (as a
// [1, 768, 1, 16] input ran on the hardware), and a 4 KiB surface is refused, or garbage when
// faithful.
TEST(AneSim, UndersizedSurfacesAreRefusedOrGarbage) {
  TempDir dir;
  const std::string io = "tensor<fp16, [1, 64, 1, 32]>";  // 4 KiB
  write_folder(dir.path(), program(io + " x", "    " + io + " y = relu(x = x)[name = string(\"y\")];\n", "y"));
  const auto ones_in = [&](AneSim& sim, std::size_t bytes) {
    const AneProgramId id = sim.compile(dir.path());
    sim.load(id);
    const AneSurface x = surface_of(std::vector<float>(C * 32, 1.0f), bytes);
    AneSurface y(bytes);
    sim.evaluate(id, {&x}, {&y});
    int ones = 0;
    for (float f : floats_of(y, C * 32)) ones += f == 1.0f;
    return ones;
  };
  AneSim loud;
  EXPECT_EQ(ones_in(loud, 49152), C * 32);
  EXPECT_NE(error_of([&] { ones_in(loud, C * 32 * 2); }).find("ANE012"), std::string::npos);
  AneSim faithful(options(true));
  EXPECT_EQ(ones_in(faithful, 49152), C * 32);
  EXPECT_LT(ones_in(faithful, C * 32 * 2), C * 32 / 100);
}

// ANE032: values cross to the device clamped to fp16's finite range; padding is zero.
TEST(AneSurface, PackClampsToFp16AndZeroesThePadding) {
  Tensor t(DType::f32, {1, 2, 1, 2});
  auto v = t.span<float>();
  v[0] = 1e6f;
  v[1] = -1e6f;
  v[2] = std::nanf("");
  v[3] = 0.25f;
  AneSurface s(64);
  std::memset(s.bytes().data(), 0x7f, s.size());
  pack_fp16(t, s);
  const auto f = floats_of(s, 32);
  EXPECT_EQ(f[0], 65504.0f);
  EXPECT_EQ(f[1], -65504.0f);
  EXPECT_TRUE(std::isnan(f[2]));
  EXPECT_EQ(f[3], 0.25f);
  for (int i = 4; i < 32; ++i) EXPECT_EQ(f[i], 0.0f);
  AneSurface small(6);
  EXPECT_THROW(pack_fp16(t, small), Error);
  EXPECT_EQ(unpack_fp16(s, {1, 2, 1, 2}).to(DType::f32).span<float>()[3], 0.25f);
}

}  // namespace
}  // namespace orion::device
