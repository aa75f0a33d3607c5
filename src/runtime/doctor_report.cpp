#include "runtime/doctor_report.h"

#include <cmath>
#include <cstdio>

#include "core/atomic_file.h"

namespace orion::runtime {

namespace {

using DoctorJson = nlohmann::ordered_json;

std::string figure(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string doctor_comparison(const std::string& device, const std::string& reference, double tolerance) {
  return device + " against " + (reference == "cpu-f32" ? "the CPU in f32" : reference) +
         ", relative L2 error <= " + figure("%g", tolerance);
}

// The output with the largest relative error (a NaN one first: it fails whatever the others do).
const OutputError* doctor_worst_output(const CheckResult& r) {
  const OutputError* worst = nullptr;
  for (const OutputError& o : r.outputs)
    if (!worst || std::isnan(o.rel_l2) || o.rel_l2 > worst->rel_l2) {
      worst = &o;
      if (std::isnan(o.rel_l2)) break;
    }
  return worst;
}

// JSON has no NaN or infinity: such a figure is written as null.
DoctorJson json_figure(double v) { return std::isfinite(v) ? DoctorJson(v) : DoctorJson(nullptr); }

}  // namespace

std::string doctor_plan_text(const std::vector<DoctorCheck>& plan, const std::string& device,
                             const std::string& reference) {
  std::string s;
  for (const DoctorCheck& c : plan)
    s += "  " + c.name + ": " + c.what + "; " + doctor_comparison(device, reference, c.tolerance) + "\n";
  s += "  weight reload: the reload probe on " + device +
       " (unload, rewrite the weights in place, load: are the new weights used?), once\n";
  s += "  compile budget: the compiles " + device + " counts against the runtime's count, within its limit (ANE030)\n";
  return s;
}

std::string check_line(const CheckResult& r) {
  std::string s = std::string(r.passed ? "  ok    " : "  FAIL  ") + r.name;
  if (!r.error.empty()) return s + ": " + r.error;
  if (const OutputError* w = doctor_worst_output(r)) {
    s += ": relative L2 error " + figure("%.2g", w->rel_l2) + " (<= " + figure("%g", r.tolerance) + ")";
    if (r.outputs.size() > 1) s += " in " + w->name;
    s += ", max abs " + figure("%.2g", w->max_abs);
    if (w->non_finite > 0) s += ", " + std::to_string(w->non_finite) + " values not finite";
  }
  s += "; compile " + figure("%.1f", r.timings.compile_ms) + " ms, load " + figure("%.1f", r.timings.load_ms) +
       " ms, evaluate " + figure("%.2f", r.timings.evaluate_ms) + " ms";
  return s;
}

std::string doctor_summary_text(const DoctorReport& r) {
  std::string s;
  if (!r.reload.error.empty()) s += "  FAIL  weight reload: " + r.reload.error + "\n";
  else if (r.reload.ran) s += "  ok    weight reload: " + r.reload.detail + "\n";
  const BudgetResult& b = r.budget;
  s += std::string(b.passed ? "  ok    " : "  FAIL  ") + "compile budget: " + std::to_string(b.compiles) +
       " compiles asked for, " + std::to_string(b.device_compiles) + " counted by " + r.device + "; the runtime allows " +
       std::to_string(b.limit) + " of the device's " + std::to_string(b.device_budget) + "\n";
  int passed = 0;
  for (const CheckResult& c : r.checks) passed += c.passed;
  s += std::to_string(passed) + " of " + std::to_string(r.checks.size()) + " programs passed on " + r.device +
       (r.hardware() ? " (the Neural Engine)" : " (the emulator: not a hardware result)") + "; " +
       (r.passed() ? "everything passed"
                   : std::to_string(r.failed()) + " failure(s) in all, the weight reload and the budget counted") +
       "\n";
  return s;
}

nlohmann::ordered_json doctor_json(const DoctorReport& r) {
  DoctorJson j;
  j["format"] = kDoctorFormat;
  j["version"] = kDoctorVersion;
  j["orion"] = {{"version", r.orion_version}, {"executable", r.executable}};
  j["machine"] = {{"os", r.machine.os}, {"os_version", r.machine.os_version}, {"arch", r.machine.arch},
                  {"cpu", r.machine.cpu}, {"cores", r.machine.cores}};
  j["ane"] = {{"available", r.ane_error.empty()}, {"error", r.ane_error}};
  j["hardware"] = r.hardware();
  j["device"] = r.device;
  j["reference"] = r.reference;
  j["target"] = r.target;
  DoctorJson checks = DoctorJson::array();
  for (const CheckResult& c : r.checks) {
    DoctorJson outs = DoctorJson::array();
    for (const OutputError& o : c.outputs)
      outs.push_back({{"name", o.name}, {"rel_l2", json_figure(o.rel_l2)}, {"max_abs", json_figure(o.max_abs)},
                      {"non_finite", o.non_finite}});
    checks.push_back({{"name", c.name},
                      {"what", c.what},
                      {"tolerance", c.tolerance},
                      {"passed", c.passed},
                      {"error", c.error},
                      {"outputs", outs},
                      {"ms",
                       {{"compile", c.timings.compile_ms},
                        {"load", c.timings.load_ms},
                        {"evaluate", c.timings.evaluate_ms}}},
                      {"seconds", c.seconds}});
  }
  j["checks"] = checks;
  j["weight_reload"] = {{"ran", r.reload.ran}, {"reloads", r.reload.reloads}, {"detail", r.reload.detail},
                        {"error", r.reload.error}, {"seconds", r.reload.seconds}};
  const BudgetResult& b = r.budget;
  j["compile_budget"] = {{"device_budget", b.device_budget}, {"limit", b.limit}, {"compiles", b.compiles},
                         {"device_compiles", b.device_compiles}, {"passed", b.passed}};
  j["failed"] = r.failed();
  j["passed"] = r.passed();
  return j;
}

void write_doctor_json(const DoctorReport& r, const std::string& path) {
  write_file_atomic(path, doctor_json(r).dump(2) + "\n");
}

}  // namespace orion::runtime
