// The `ane` device on the hardware, held to ane-sim: compile, load, evaluate and unload real
// programs, load one again after an unload, run two programs of one identifier, evaluate on the
// device's own surfaces (zero-copy) beside host ones, and check the binding order (ANE027) on
// the device itself. AneHardware.* needs a Mac with an Apple Neural
// Engine; everywhere else open_ane_device throws and they skip, saying why (ORION_ANE_TESTS=0
// skips them on a Mac too: a virtual machine has no Neural Engine). The sequences also run on
// ane-sim everywhere (AneSimSequences.*), which must allow them as the bridge does.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "core/half.h"
#include "core/testing_temp_dir.h"
#include "device/ane_bridge_apple.h"
#include "device/ane_sim.h"
#include "device/device_test_util.h"
#include "device/external_memory_sim.h"
#include "model/rel_error.h"

namespace orion::device {
namespace {

using testing_util::TempDir;
using namespace test_programs;
using model::testing::rel_l2;

constexpr std::size_t kBytes = C * S * 2;

// Opens the device for each test, or skips the test saying why there is none.
class AneHardware : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* v = std::getenv("ORION_ANE_TESTS"); v && std::string(v) == "0") GTEST_SKIP() << "ORION_ANE_TESTS=0";
    try {
      ane = open_ane_device();
    } catch (const Error& e) {
      GTEST_SKIP() << e.what();
    }
  }
  std::unique_ptr<AneDevice> ane;
};

AneSurface packed(float (*value)(std::int64_t c, std::int64_t s)) {
  Tensor t(DType::f32, {1, C, 1, S});
  auto v = t.span<float>();
  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t s = 0; s < S; ++s) v[static_cast<std::size_t>(c * S + s)] = value(c, s);
  AneSurface surface(kBytes);
  pack_fp16(t, surface);
  return surface;
}

std::vector<float> floats(const AneSurface& s) {
  std::vector<std::uint16_t> h(C * S);
  std::memcpy(h.data(), s.bytes().data(), h.size() * 2);
  std::vector<float> f;
  for (std::uint16_t x : h) f.push_back(half_to_float(x));
  return f;
}

// One evaluation of a loaded program; its outputs in binding order.
std::vector<AneSurface> evaluate(AneDevice& device, AneProgramId id, const std::vector<const AneSurface*>& in) {
  std::vector<AneSurface> out(device.outputs(id).size(), AneSurface(kBytes));
  std::vector<AneSurface*> out_ptrs;
  for (AneSurface& s : out) out_ptrs.push_back(&s);
  device.evaluate(id, in, out_ptrs);
  return out;
}

// Compiles, loads, evaluates and unloads the program in `folder`; its outputs in binding order.
std::vector<AneSurface> run(AneDevice& device, const std::string& folder, const std::vector<const AneSurface*>& in) {
  const AneProgramId id = device.compile(folder);
  device.load(id);
  std::vector<AneSurface> out = evaluate(device, id, in);
  device.unload(id);
  return out;
}

float ramp(std::int64_t c, std::int64_t s) { return static_cast<float>((c * 7 + s) % 17 - 8) / 8; }

TEST_F(AneHardware, ConvMatchesAneSim) {
  TempDir dir;
  write_folder(dir.path(), conv_program());
  const AneSurface x = packed(ramp);
  AneSim sim;
  const auto want = run(sim, dir.path(), {&x});
  const auto got = run(*ane, dir.path(), {&x});
  EXPECT_LE(rel_l2(floats(want[0]), floats(got[0])), 1e-2);
  EXPECT_EQ(ane->compiles(), 1);
  EXPECT_EQ(ane->loaded(), 0);
  EXPECT_GT(ane->timings().compile_ms, 0.0);
  EXPECT_GT(ane->timings().evaluate_ms, 0.0);
}

// Declared (b, a), returned (z, m): the surfaces bind a, b and m, z on the hardware as on ane-sim.
TEST_F(AneHardware, BindsAlphabeticallyLikeAneSim) {
  TempDir dir;
  write_folder(dir.path(), unordered_io_program());
  const AneSurface a = packed([](std::int64_t, std::int64_t) { return 3.0f; });
  const AneSurface b = packed([](std::int64_t, std::int64_t) { return 0.5f; });
  const auto got = run(*ane, dir.path(), {&a, &b});
  EXPECT_EQ(floats(got[0])[5], 1.5f);  // m = a * b
  EXPECT_EQ(floats(got[1])[5], 2.5f);  // z = a - b
}

// The sequences docs/ane/DEVICE.md says the bridge supports, each run on the device and on
// ane-sim (the model of the device, where they must hold too). -unloadWithQoS:error: deletes a
// program's work folder, and the load after it must find the folder rewritten.
// The conv program's folder, an input, and ane-sim's output for it.
struct ConvCase {
  ConvCase() : x(packed(ramp)) {
    write_folder(dir.path(), conv_program());
    AneSim sim;
    want = floats(run(sim, dir.path(), {&x})[0]);
  }
  // How far `device`'s output for program `id` is from ane-sim's.
  double error(AneDevice& device, AneProgramId id) const { return rel_l2(want, floats(evaluate(device, id, {&x})[0])); }
  TempDir dir;
  AneSurface x;
  std::vector<float> want;
};

void load_and_run_again_after_an_unload(AneDevice& device) {
  const ConvCase conv;
  const AneProgramId id = device.compile(conv.dir.path());
  for (int round = 0; round < 2; ++round) {
    device.load(id);
    EXPECT_LE(conv.error(device, id), 1e-2) << "round " << round;
    device.unload(id);
  }
  EXPECT_EQ(device.compiles(), 1);
  EXPECT_EQ(device.loaded(), 0);
}

// Two programs compiled from one folder have one hexStringIdentifier, hence one work folder,
// which the first one's unload deletes while the second is loaded.
void run_two_programs_with_one_identifier(AneDevice& device) {
  const ConvCase conv;
  const AneProgramId a = device.compile(conv.dir.path()), b = device.compile(conv.dir.path());
  device.load(a);
  device.load(b);
  EXPECT_LE(conv.error(device, a), 1e-2);
  EXPECT_LE(conv.error(device, b), 1e-2);
  device.unload(a);
  EXPECT_LE(conv.error(device, b), 1e-2) << "b, after a's unload";
  device.unload(b);
  device.load(a);
  EXPECT_LE(conv.error(device, a), 1e-2) << "a, loaded again after both unloads";
  device.unload(a);
  EXPECT_EQ(device.compiles(), 2);
  EXPECT_EQ(device.loaded(), 0);
}

// A copy of `s` in a surface `device` makes.
AneSurface on_device(AneDevice& device, const AneSurface& s) {
  AneSurface d = device.make_surface(s.size());
  std::memcpy(d.bytes().data(), s.bytes().data(), s.size());
  return d;
}

// One program evaluated on two sets of surfaces in turn, as layers sharing a program are: one
// set the device's own, the other mixed with host ones. Each gives its own answer, a value the
// CPU writes into a device surface between evaluations is the one read, and a set destroyed and
// made anew works (the bridge's requests follow the surfaces).
void evaluate_on_the_devices_surfaces(AneDevice& device) {
  TempDir dir;
  write_folder(dir.path(), unordered_io_program());
  const AneProgramId id = device.compile(dir.path());
  device.load(id);
  const AneSurface three = packed([](std::int64_t, std::int64_t) { return 3.0f; });
  const AneSurface half = packed([](std::int64_t, std::int64_t) { return 0.5f; });
  const AneSurface two = packed([](std::int64_t, std::int64_t) { return 2.0f; });
  for (int round = 0; round < 2; ++round) {
    AneSurface a1 = on_device(device, three), b1 = on_device(device, half);
    AneSurface m1 = device.make_surface(kBytes), z1 = device.make_surface(kBytes);
    AneSurface a2 = on_device(device, two), m2(kBytes), z2 = device.make_surface(kBytes);
    device.evaluate(id, {&a1, &b1}, {&m1, &z1});
    device.evaluate(id, {&a2, &half}, {&m2, &z2});
    EXPECT_EQ(floats(m1)[5], 1.5f) << "round " << round;  // m = a * b
    EXPECT_EQ(floats(z1)[5], 2.5f) << "round " << round;  // z = a - b
    EXPECT_EQ(floats(m2)[5], 1.0f) << "round " << round;
    EXPECT_EQ(floats(z2)[5], 1.5f) << "round " << round;
    std::memcpy(a1.bytes().data(), two.bytes().data(), kBytes);  // written in place, no new surface
    device.evaluate(id, {&a1, &b1}, {&m1, &z1});
    EXPECT_EQ(floats(m1)[5], 1.0f) << "round " << round;
  }
  device.unload(id);
}

TEST_F(AneHardware, LoadsAndRunsAgainAfterAnUnload) { load_and_run_again_after_an_unload(*ane); }
TEST_F(AneHardware, TwoProgramsWithOneIdentifier) { run_two_programs_with_one_identifier(*ane); }
TEST_F(AneHardware, EvaluatesOnTheDevicesOwnSurfaces) { evaluate_on_the_devices_surfaces(*ane); }

TEST(AneSimSequences, LoadsAndRunsAgainAfterAnUnload) {
  AneSim sim;
  load_and_run_again_after_an_unload(sim);
}

TEST(AneSimSequences, TwoProgramsWithOneIdentifier) {
  AneSim sim;
  run_two_programs_with_one_identifier(sim);
}

TEST(AneSimSequences, EvaluatesOnTheDevicesOwnSurfaces) {
  testing::ExternalMemorySim sim;
  evaluate_on_the_devices_surfaces(sim);
  EXPECT_EQ(sim.live(), 0);
}

}  // namespace
}  // namespace orion::device
