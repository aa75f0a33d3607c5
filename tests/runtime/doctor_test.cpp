// orion doctor's checks, made to fail: devices that each break one thing the doctor claims to
// catch (outputs negated, inputs bound in declaration order, compiles miscounted or refused)
// run the doctor's programs against the CPU reference, and each break must show in the check
// meant for it, with figures worked out here: a negated output is 2 away from its reference in
// relative L2 (||-x - x|| / ||x||), a swapped subtraction likewise. ane-sim itself passes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "device/ane_sim.h"
#include "error_of.h"
#include "runtime/doctor.h"
#include "runtime/doctor_programs.h"

namespace orion::runtime {
namespace {

using orion::testing::error_of;
using testing_util::TempDir;

// ane-sim with one thing broken.
class DoctorBrokenDevice final : public device::AneDevice {
 public:
  enum class Break { none, negate_outputs, reverse_inputs, count_no_compiles, refuse_compiles };
  explicit DoctorBrokenDevice(Break b) : break_(b) {}

  device::AneProgramId compile(const std::string& folder) override {
    if (break_ == Break::refuse_compiles) {
      ++refused_;  // an attempt counts, as on the devices (AneDevice::compiles)
      throw Error("broken device: compile of " + folder + " refused on purpose");
    }
    return sim_.compile(folder);
  }
  void load(device::AneProgramId id) override { sim_.load(id); }
  void unload(device::AneProgramId id) override { sim_.unload(id); }
  void evaluate(device::AneProgramId id, const std::vector<const device::AneSurface*>& in,
                const std::vector<device::AneSurface*>& out) override {
    std::vector<const device::AneSurface*> bound = in;
    if (break_ == Break::reverse_inputs) std::reverse(bound.begin(), bound.end());
    sim_.evaluate(id, bound, out);
    if (break_ != Break::negate_outputs) return;
    for (device::AneSurface* s : out)  // every fp16 value's sign bit
      for (std::size_t i = 1; i < s->bytes().size(); i += 2) s->bytes()[i] ^= std::byte{0x80};
  }
  const std::vector<device::AneIo>& inputs(device::AneProgramId id) const override { return sim_.inputs(id); }
  const std::vector<device::AneIo>& outputs(device::AneProgramId id) const override { return sim_.outputs(id); }
  int compiles() const override { return break_ == Break::count_no_compiles ? 0 : sim_.compiles() + refused_; }
  int loaded() const override { return sim_.loaded(); }
  device::AneTimings timings() const override { return sim_.timings(); }

 private:
  Break break_;
  device::AneSim sim_;
  int refused_ = 0;
};

struct DoctorPrograms {
  DoctorPrograms() : plan(write_doctor_programs(dir.path(), {}, compile::MilDialect::ios18)) {}
  const DoctorCheck& check(const std::string& name) const {
    for (const DoctorCheck& c : plan)
      if (c.name == name) return c;
    throw Error("no check " + name);
  }
  TempDir dir;
  std::vector<DoctorCheck> plan;
};

const DoctorPrograms& doctor_programs() {
  static const DoctorPrograms p;
  return p;
}

DoctorReport doctor_on(device::AneDevice& device, const std::vector<DoctorCheck>& plan, int budget = 119) {
  DoctorOptions o;
  o.device_budget = budget;
  DoctorReport r;
  run_doctor(plan, device, nullptr, o, r);
  return r;
}

Tensor doctor_floats(std::vector<float> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return Tensor::from_floats({n}, v);
}

const OutputError& doctor_output(const CheckResult& r, const std::string& name) {
  for (const OutputError& o : r.outputs)
    if (o.name == name) return o;
  throw Error(r.name + " has no output " + name);
}

TEST(DoctorCheck, OutputErrorFiguresByHand) {
  const Tensor want = doctor_floats({3, 4});
  const OutputError same = output_error("y", want, want);
  EXPECT_EQ(same.rel_l2, 0.0);
  EXPECT_EQ(same.max_abs, 0.0);
  const OutputError e = output_error("y", want, doctor_floats({3, 0}));
  EXPECT_DOUBLE_EQ(e.rel_l2, 0.8);  // ||(0, -4)|| / ||(3, 4)||
  EXPECT_DOUBLE_EQ(e.max_abs, 4.0);
  const Tensor zeros = doctor_floats({0, 0});
  EXPECT_EQ(output_error("y", zeros, zeros).rel_l2, 0.0);
  EXPECT_TRUE(std::isinf(output_error("y", zeros, doctor_floats({0, 1})).rel_l2));
  const OutputError nan = output_error("y", want, doctor_floats({3, std::numeric_limits<float>::quiet_NaN()}));
  EXPECT_EQ(nan.non_finite, 1);
  EXPECT_TRUE(std::isnan(nan.rel_l2));
  EXPECT_TRUE(std::isnan(nan.max_abs));
  EXPECT_NE(error_of([&] { output_error("y", want, doctor_floats({3})); }).find("output y: shape [1]"),
            std::string::npos);
}

TEST(Doctor, AneSimPassesEveryProgramAgainstTheCpu) {
  DoctorBrokenDevice sim(DoctorBrokenDevice::Break::none);
  const DoctorReport r = doctor_on(sim, doctor_programs().plan);
  ASSERT_EQ(r.checks.size(), doctor_programs().plan.size());
  for (const CheckResult& c : r.checks) {
    EXPECT_TRUE(c.passed) << c.name << ": " << c.error;
    for (const OutputError& o : c.outputs) {
      EXPECT_GT(o.rel_l2, 0.0) << c.name << " " << o.name << ": fp16 against f32 cannot be exact";
      EXPECT_LT(o.rel_l2, 2e-3) << c.name << " " << o.name;
    }
  }
  EXPECT_TRUE(r.reload.ran);
  EXPECT_TRUE(r.reload.reloads);  // ane-sim's default
  EXPECT_EQ(r.budget.compiles, static_cast<int>(doctor_programs().plan.size()) + 1);  // and the probe's
  EXPECT_TRUE(r.budget.passed);
  EXPECT_TRUE(r.passed());
}

// Held to another device, as the Neural Engine is to ane-sim: the reference is given the inputs
// the device ran with, so one emulator against another differs by nothing at all, and a
// negated output by exactly 2.
TEST(Doctor, HeldToAnotherDeviceOnTheSameInputs) {
  device::AneSim reference;
  DoctorBrokenDevice sim(DoctorBrokenDevice::Break::none), negated(DoctorBrokenDevice::Break::negate_outputs);
  DoctorReport same, wrong;
  run_doctor(doctor_programs().plan, sim, &reference, {}, same);
  run_doctor(doctor_programs().plan, negated, &reference, {}, wrong);
  for (std::size_t i = 0; i < same.checks.size(); ++i) {
    EXPECT_TRUE(same.checks[i].passed) << same.checks[i].name << ": " << same.checks[i].error;
    for (const OutputError& o : same.checks[i].outputs) EXPECT_EQ(o.rel_l2, 0.0) << same.checks[i].name << " " << o.name;
    EXPECT_FALSE(wrong.checks[i].passed) << wrong.checks[i].name;
    for (const OutputError& o : wrong.checks[i].outputs) EXPECT_NEAR(o.rel_l2, 2.0, 1e-6) << wrong.checks[i].name;
  }
  EXPECT_EQ(reference.compiles(), static_cast<int>(2 * doctor_programs().plan.size()));
  EXPECT_TRUE(same.passed());
}

TEST(Doctor, NegatedOutputsFailEveryCheck) {
  DoctorBrokenDevice dev(DoctorBrokenDevice::Break::negate_outputs);
  const DoctorReport r = doctor_on(dev, doctor_programs().plan);
  for (const CheckResult& c : r.checks) {
    EXPECT_FALSE(c.passed) << c.name;
    EXPECT_EQ(c.error, "") << c.name;
    for (const OutputError& o : c.outputs) EXPECT_NEAR(o.rel_l2, 2.0, 1e-2) << c.name << " " << o.name;
  }
  EXPECT_EQ(r.failed(), static_cast<int>(r.checks.size()) + 1);  // the probe sees wrong values too
  EXPECT_NE(r.reload.error.find("computed wrong values"), std::string::npos) << r.reload.error;
}

// Bound in declaration order, the subtraction is turned around and the product is not: only
// the check of the binding order fails, and in z alone.
TEST(Doctor, InputsBoundOutOfOrderFailTheBindingCheck) {
  DoctorBrokenDevice dev(DoctorBrokenDevice::Break::reverse_inputs);
  const DoctorReport r =
      doctor_on(dev, {doctor_programs().check("program/binding-order"), doctor_programs().check("program/conv-baked")});
  const CheckResult& binding = r.checks[0];
  EXPECT_FALSE(binding.passed);
  EXPECT_NEAR(doctor_output(binding, "z").rel_l2, 2.0, 1e-2);
  EXPECT_LT(doctor_output(binding, "m").rel_l2, 2e-3);
  EXPECT_TRUE(r.checks[1].passed) << r.checks[1].error;  // one input: nothing to swap
}

TEST(Doctor, ADeviceThatMiscountsCompilesFailsTheBudget) {
  DoctorBrokenDevice dev(DoctorBrokenDevice::Break::count_no_compiles);
  const DoctorReport r = doctor_on(dev, {doctor_programs().check("program/conv-baked")});
  EXPECT_TRUE(r.checks[0].passed);
  EXPECT_EQ(r.budget.compiles, 2);  // the program and the probe
  EXPECT_EQ(r.budget.device_compiles, 0);
  EXPECT_FALSE(r.budget.passed);
  EXPECT_EQ(r.failed(), 1);
}

// A refused compile is the check's result, not the doctor's end; the counts still agree.
TEST(Doctor, RefusedCompilesAreReportedPerCheck) {
  DoctorBrokenDevice dev(DoctorBrokenDevice::Break::refuse_compiles);
  const DoctorReport r = doctor_on(dev, doctor_programs().plan);
  for (const CheckResult& c : r.checks) {
    EXPECT_FALSE(c.passed);
    EXPECT_NE(c.error.find("refused on purpose"), std::string::npos) << c.error;
  }
  EXPECT_NE(r.reload.error.find("refused on purpose"), std::string::npos) << r.reload.error;
  EXPECT_TRUE(r.budget.passed);
  EXPECT_EQ(r.budget.device_compiles, static_cast<int>(doctor_programs().plan.size()) + 1);
}

// Past the runtime's limit a program never reaches the device: the budget's error is the check's.
TEST(Doctor, ChecksPastTheBudgetAreRefusedBeforeTheDevice) {
  DoctorBrokenDevice sim(DoctorBrokenDevice::Break::none);
  const DoctorReport r = doctor_on(sim, doctor_programs().plan, 3);  // a limit of 2: a reserve of 1
  ASSERT_EQ(r.checks.size(), 4u);
  EXPECT_TRUE(r.checks[0].passed);
  EXPECT_TRUE(r.checks[1].passed);
  for (int i : {2, 3}) {
    EXPECT_FALSE(r.checks[i].charged);
    EXPECT_NE(r.checks[i].error.find("over the runtime's limit of 2"), std::string::npos) << r.checks[i].error;
  }
  EXPECT_NE(r.reload.error.find("over the runtime's limit of 2"), std::string::npos) << r.reload.error;
  EXPECT_EQ(sim.compiles(), 2);
  EXPECT_TRUE(r.budget.passed);
}

TEST(Doctor, APackageWithoutAManifestIsNamed) {
  TempDir dir;
  EXPECT_NE(error_of([&] { package_kernel_checks(dir.path(), "gpt2"); }).find(dir.path()), std::string::npos);
}

}  // namespace
}  // namespace orion::runtime
