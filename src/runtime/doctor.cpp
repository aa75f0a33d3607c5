#include "runtime/doctor.h"

#include <algorithm>
#include <exception>

#include "core/stopwatch.h"
#include "runtime/compile_budget.h"
#include "runtime/reload_probe.h"

namespace orion::runtime {

int DoctorReport::failed() const {
  int n = 0;
  for (const CheckResult& c : checks) n += !c.passed;
  n += !budget.passed;
  n += !reload.error.empty();
  return n;
}

void run_doctor(const std::vector<DoctorCheck>& plan, device::AneDevice& device, device::AneDevice* reference,
                const DoctorOptions& o, DoctorReport& report, const std::function<void(const CheckResult&)>& progress) {
  // The runtime's count and the device's are kept apart, so that a device counting compiles
  // differently from the runtime shows (the budget's sync would adopt the larger count).
  CompileBudget budget(o.device_budget);
  const int before = device.compiles();  // compiles made before the doctor's are not its own...
  budget.sync(before);                   // ...but they are the process's
  int asked = 0;
  for (const DoctorCheck& check : plan) {
    report.checks.push_back(run_check(check, device, reference, budget, o.run));
    asked += report.checks.back().charged;
    if (progress) progress(report.checks.back());
  }
  if (o.reload_probe) {
    // The probe syncs the budget with the device, then charges its one compile.
    const int synced = std::max(budget.compiles(), device.compiles());
    Stopwatch sw;
    try {
      const ReloadProbeResult r = probe_weight_reload(device, budget, o.target);
      report.reload.ran = true;
      report.reload.reloads = r.reloads;
      report.reload.detail = r.detail;
    } catch (const std::exception& e) {
      report.reload.error = e.what();
    }
    report.reload.seconds = sw.seconds();
    asked += budget.compiles() == synced + 1;
  }
  BudgetResult& b = report.budget;
  b.device_budget = o.device_budget;
  b.limit = budget.limit();
  b.compiles = asked;
  b.device_compiles = device.compiles() - before;
  b.passed = b.compiles == b.device_compiles && before + b.device_compiles <= b.limit;
}

}  // namespace orion::runtime
