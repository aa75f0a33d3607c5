#pragma once
// Whether this device picks up weights rewritten in place across unload + load (see
// weight_reload.h). Reports disagree from machine to machine, and a wrong guess is silent
// (stale weights), so it is measured once per process: compile a tiny kernel whose output
// shows which weights it ran with, evaluate, rewrite its weights in place, unload, load,
// evaluate again. The probe costs one compile, charged to the budget.
#include <optional>
#include <string>

#include "compile/target.h"
#include "device/ane_device.h"
#include "runtime/compile_budget.h"

namespace orion::runtime {

struct ReloadProbeResult {
  bool reloads = false;
  std::string detail;  // what the probe saw, for logs
};

// Runs the probe in a temporary folder, its kernel compiled for `target` (in the ios16 dialect
// for M1/M2, which refuse ios18 programs: ANE024). Throws orion::Error when the probe kernel
// cannot be compiled or run at all (or the budget has no compile left for it).
ReloadProbeResult probe_weight_reload(device::AneDevice& device, CompileBudget& budget,
                                      const compile::AneTarget& target = {});

// The probe's answer, asked for when first needed and kept: one per device (one AneDevice is one
// process's view of the device).
class ReloadSupport {
 public:
  ReloadSupport(device::AneDevice& device, CompileBudget& budget) : device_(device), budget_(budget) {}
  bool supported();
  bool probed() const { return result_.has_value(); }
  const std::string& detail();

 private:
  device::AneDevice& device_;
  CompileBudget& budget_;
  std::optional<ReloadProbeResult> result_;
};

}  // namespace orion::runtime
