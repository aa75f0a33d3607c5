#pragma once
// One check of `orion doctor`: a program folder run on the device under test and on a
// reference with the same inputs, each output compared (relative L2 error against a tolerance,
// the largest absolute difference, values that are not finite), the device's compile, load and
// evaluation timed. The reference is another device (the Neural Engine is held to ane-sim) or
// the program in f32 on the CPU executor (ane-sim's self-check where there is no Neural Engine).
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "device/ane_device.h"
#include "runtime/compile_budget.h"

namespace orion::runtime {

struct DoctorCheck {
  std::string name;         // "program/conv-baked", "gpt2/prefill_ane0"
  std::string what;         // one line: what it exercises
  std::string folder;       // the program folder: model.mil and its weight files
  double tolerance = 1e-2;  // the largest relative L2 error any output may have
};

struct OutputError {
  std::string name;
  double rel_l2 = 0;    // ||got - want|| / ||want||: 0 when both are zero, infinite when only want is
  double max_abs = 0;   // the largest |got - want|
  std::int64_t non_finite = 0;  // values of got that are NaN or infinite
};

// Throws orion::Error when the shapes differ.
OutputError output_error(const std::string& name, const Tensor& want, const Tensor& got);

struct CheckResult {
  std::string name, what;
  double tolerance = 0;
  bool passed = false;
  std::string error;  // the orion::Error that stopped the check; empty when it ran to the end
  bool charged = false;  // the budget allowed the compile: the device was asked for one
  std::vector<OutputError> outputs;
  device::AneTimings timings;  // the device under test's, for this program
  double seconds = 0;          // the whole check, the reference's run included
};

struct CheckRunOptions {
  std::uint64_t seed = 0;  // the inputs: normal(0, 1), each input its own stream
  int evaluations = 2;     // on the device under test; the timings are the last one's
  int cpu_threads = 2;     // the CPU reference's
};

// Charges the compile to `budget` first (the budget's error fails the check, the program never
// reaching the device), then runs the program on `device` and on `reference` (nullptr: the CPU
// in f32) and compares. Never throws for the check's own failures: they are the result's.
CheckResult run_check(const DoctorCheck& check, device::AneDevice& device, device::AneDevice* reference,
                      CompileBudget& budget, const CheckRunOptions& options = {});

}  // namespace orion::runtime
