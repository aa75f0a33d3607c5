#include "runtime/doctor_check.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include "core/error.h"
#include "core/stopwatch.h"
#include "runtime/program_run.h"

namespace orion::runtime {

OutputError output_error(const std::string& name, const Tensor& want, const Tensor& got) {
  if (want.shape() != got.shape())
    throw Error("output " + name + ": shape " + shape_str(got.shape()) + ", the reference's is " + shape_str(want.shape()));
  const std::vector<float> w = want.to(DType::f32).to_floats(), g = got.to(DType::f32).to_floats();
  OutputError e{name, 0, 0, 0};
  double diff2 = 0, want2 = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (!std::isfinite(g[i])) ++e.non_finite;
    const double d = static_cast<double>(g[i]) - static_cast<double>(w[i]);
    diff2 += d * d;
    want2 += static_cast<double>(w[i]) * w[i];
    // A NaN difference must not hide behind max's comparison, which it always loses.
    e.max_abs = std::isnan(d) || std::isnan(e.max_abs) ? NAN : std::max(e.max_abs, std::abs(d));
  }
  if (want2 > 0) e.rel_l2 = std::sqrt(diff2 / want2);
  else e.rel_l2 = diff2 > 0 || std::isnan(diff2) ? INFINITY : 0;
  return e;
}

CheckResult run_check(const DoctorCheck& check, device::AneDevice& device, device::AneDevice* reference,
                      CompileBudget& budget, const CheckRunOptions& o) {
  CheckResult r;
  r.name = check.name;
  r.what = check.what;
  r.tolerance = check.tolerance;
  Stopwatch sw;
  try {
    budget.charge_compile(check.name);
    r.charged = true;
    ProgramRunOptions po;
    po.seed = o.seed;
    po.evaluations = o.evaluations;
    po.compare = reference == nullptr;
    po.cpu_threads = o.cpu_threads;
    const ProgramRun got = run_program_folder(check.folder, device, po);
    r.timings = device.timings();
    std::vector<Tensor> want = got.reference;
    if (reference) {
      ProgramRunOptions ro;
      for (const ProgramValue& in : got.inputs) ro.values.emplace(in.name, in.value);
      const ProgramRun ref = run_program_folder(check.folder, *reference, ro);
      for (std::size_t i = 0; i < got.outputs.size(); ++i) {
        if (i >= ref.outputs.size() || ref.outputs[i].name != got.outputs[i].name)
          throw Error(check.folder + ": output " + got.outputs[i].name +
                      " is not bound in the same place by the reference device");
        want.push_back(ref.outputs[i].value);
      }
    }
    r.passed = !got.outputs.empty();
    for (std::size_t i = 0; i < got.outputs.size(); ++i) {
      r.outputs.push_back(output_error(got.outputs[i].name, want[i], got.outputs[i].value));
      // Written so that a NaN error fails: every comparison with NaN is false.
      r.passed = r.passed && r.outputs.back().non_finite == 0 && r.outputs.back().rel_l2 <= check.tolerance;
    }
  } catch (const std::exception& e) {  // orion::Error, and what the file system or a library throws
    r.passed = false;
    r.error = e.what();
  }
  r.seconds = sw.seconds();
  return r;
}

}  // namespace orion::runtime
