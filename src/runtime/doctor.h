#pragma once
// `orion doctor`'s run: every check of a plan on the device under test against its reference
// (runtime/doctor_check.h), the device's compile count held to the budget the runtime keeps
// (ANE030), and the weight-reload probe run once (runtime/reload_probe.h). On a Mac the device
// is the Neural Engine and the reference ane-sim; elsewhere ane-sim is checked against the CPU,
// a self-check of the emulator and not a hardware result (the report says which it is).
#include <functional>
#include <string>
#include <vector>

#include "compile/target.h"
#include "core/machine_info.h"
#include "device/ane_device.h"
#include "runtime/doctor_check.h"

namespace orion::runtime {

struct DoctorOptions {
  CheckRunOptions run;
  compile::AneTarget target;  // the probe's kernel is compiled for it, as the plan's programs were
  int device_budget = 119;   // compiles the device takes per process (CompileBudget)
  bool reload_probe = true;
};

struct BudgetResult {
  int device_budget = 0;    // the device's compiles per process
  int limit = 0;            // what the runtime allows itself (the budget minus a reserve)
  int compiles = 0;         // counted by the runtime: one per check, one for the probe
  int device_compiles = 0;  // counted by the device
  bool passed = false;      // the two counts agree, within the limit
};

struct ReloadResult {
  bool ran = false;
  bool reloads = false;  // unload, rewrite in place, load ran the new weights
  std::string detail;    // what the probe saw
  std::string error;     // why it could not run; a failure
  double seconds = 0;
};

struct DoctorReport {
  // Filled by the caller: what ran, where.
  MachineInfo machine;
  std::string orion_version, executable;  // executable_identity()
  std::string ane_error;                  // why there is no ane device; empty when it opened
  std::string target;                     // the rules the programs were compiled for: any, m1-m2
  std::string device, reference;          // "ane" and "ane-sim", or "ane-sim" and "cpu-f32"

  std::vector<CheckResult> checks;
  BudgetResult budget;
  ReloadResult reload;

  bool hardware() const { return device == "ane"; }
  int failed() const;  // checks that failed, the budget and the probe counted as checks
  bool passed() const { return failed() == 0; }
};

// Runs `plan` on `device` against `reference` (nullptr: the CPU in f32), then the probe, and
// fills the report's results (its other fields are the caller's). `progress` is called after
// each check. A check's failure is in its result; nothing a check does throws.
void run_doctor(const std::vector<DoctorCheck>& plan, device::AneDevice& device, device::AneDevice* reference,
                const DoctorOptions& options, DoctorReport& report,
                const std::function<void(const CheckResult&)>& progress = {});

}  // namespace orion::runtime
