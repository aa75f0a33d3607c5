#include "runtime/doctor_programs.h"

#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

#include "compile/ane/ane_package.h"
#include "compile/driver.h"
#include "core/error.h"
#include "core/random.h"
#include "ir/builder.h"

namespace orion::runtime {

namespace {

constexpr std::int64_t kDoctorSeq = 32, kDoctorDim = 64;

// normal(0, 1 / sqrt(rows)): a matrix that keeps its input's scale.
Tensor doctor_matrix(Rng& rng, std::int64_t rows, std::int64_t cols) {
  Tensor t(DType::f32, {rows, cols});
  rng.fill_normal(t.span<float>(), 0.0f, 1.0f / std::sqrt(static_cast<float>(rows)));
  return t;
}

Tensor doctor_gain(Rng& rng, std::int64_t n) {
  Tensor t(DType::f32, {n});
  rng.fill_uniform(t.span<float>(), 0.5f, 1.5f);
  return t;
}

struct DoctorProgram {
  std::string name, what;
  // The graph and the weights it bakes; with runtime_weights, params without a value are inputs.
  std::function<ir::Graph(Rng&, TensorMap&)> build;
  bool runtime_weights = false;
};

// y = x @ W with W baked: the lowering's 1x1 conv, its weights read from weights/weight.bin.
ir::Graph conv_baked(Rng& rng, TensorMap& w) {
  ir::Builder b("conv_baked");
  const ir::Value x = b.input("x", DType::f32, {kDoctorSeq, kDoctorDim});
  b.output(b.name(b.matmul(x, b.param("w", DType::f32, {kDoctorDim, kDoctorDim})), "y"));
  w["w"] = doctor_matrix(rng, kDoctorDim, kDoctorDim);
  return b.finish();
}

// Declared (b, a), returned (z, m): bound a, b and m, z (ANE027). Subtraction does not commute,
// so a device binding in another order gives another z.
ir::Graph binding_order(Rng&, TensorMap&) {
  ir::Builder b("binding_order");
  const ir::Value in_b = b.input("b", DType::f32, {kDoctorSeq, kDoctorDim});
  const ir::Value in_a = b.input("a", DType::f32, {kDoctorSeq, kDoctorDim});
  b.output(b.name(b.sub(in_b, in_a), "z"));
  b.output(b.name(b.mul(in_a, in_b), "m"));
  return b.finish();
}

// y = x @ w with w a kernel input (training's and LoRA's form): matmul, not conv, which would
// ignore a weight given at run time (ANE005); two input sizes in one allocation (ANE010).
ir::Graph weight_input(Rng&, TensorMap&) {
  ir::Builder b("weight_input");
  const ir::Value x = b.input("x", DType::f32, {kDoctorSeq, kDoctorDim});
  b.output(b.name(b.matmul(x, b.param("w", DType::f32, {kDoctorDim, 96})), "y"));
  return b.finish();
}

// The reductions and activations a decoder uses, over the channels: layer_norm, gelu and
// softmax on one branch, rms_norm and silu on the other.
ir::Graph norms_and_activations(Rng& rng, TensorMap& w) {
  ir::Builder b("norms_and_activations");
  const ir::Value x = b.input("x", DType::f32, {kDoctorSeq, kDoctorDim});
  const ir::Value h = b.layer_norm(x, b.param("ln_g", DType::f32, {kDoctorDim}), b.param("ln_b", DType::f32, {kDoctorDim}));
  const ir::Value up = b.gelu(b.matmul(h, b.param("w_up", DType::f32, {kDoctorDim, 128})));
  b.output(b.name(b.softmax(b.matmul(up, b.param("w_down", DType::f32, {128, kDoctorDim}))), "p"));
  b.output(b.name(b.silu(b.rms_norm(x, b.param("rms_g", DType::f32, {kDoctorDim}))), "r"));
  w["ln_g"] = doctor_gain(rng, kDoctorDim);
  w["ln_b"] = doctor_gain(rng, kDoctorDim);
  w["w_up"] = doctor_matrix(rng, kDoctorDim, 128);
  w["w_down"] = doctor_matrix(rng, 128, kDoctorDim);
  w["rms_g"] = doctor_gain(rng, kDoctorDim);
  return b.finish();
}

const std::vector<DoctorProgram>& doctor_program_list() {
  static const std::vector<DoctorProgram> list = {
      {"conv-baked", "a matmul by a baked weight: the 1x1 conv reading weights/weight.bin", conv_baked},
      {"binding-order", "inputs declared (b, a) and outputs (z, m): bound alphabetically (ANE027); z = b - a",
       binding_order},
      {"weight-input", "a matmul whose weight is an input (ANE005), inputs of two sizes in one allocation (ANE010)",
       weight_input, true},
      {"norms-activations", "layer_norm, gelu, softmax, rms_norm and silu over the channels", norms_and_activations},
  };
  return list;
}

}  // namespace

std::vector<DoctorCheck> write_doctor_programs(const std::string& dir, const compile::AneTarget& target,
                                               compile::MilDialect dialect) {
  std::vector<DoctorCheck> checks;
  Rng rng(20250101);
  for (const DoctorProgram& p : doctor_program_list()) {
    TensorMap weights;
    const ir::Graph g = p.build(rng, weights);
    compile::KernelOptions ko;
    ko.lowering.target = target;
    ko.lowering.kernel_name = p.name;
    ko.lowering.runtime_weights = p.runtime_weights;
    ko.mil.dialect = dialect;
    const std::string folder = (std::filesystem::path(dir) / p.name).string();
    compile::build_kernel(g, weights, folder, ko);
    checks.push_back({"program/" + p.name, p.what, folder, kProgramTolerance});
  }
  return checks;
}

std::vector<DoctorCheck> package_kernel_checks(const std::string& package, const std::string& label, double tolerance) {
  const compile::PackageManifest m = compile::read_manifest(package);
  std::vector<DoctorCheck> checks;
  std::set<std::string> seen;
  for (const compile::PackageProgram& p : m.programs)
    for (const compile::PackageStep& s : p.steps) {
      if (s.placement != compile::Placement::ane) continue;
      const std::string& folder = compile::kernel_folder(s);
      if (!seen.insert(folder).second) continue;
      std::string what = "the tiny " + label + "'s " + p.name + " kernel: inputs";
      for (std::size_t i = 0; i < s.io.inputs.size(); ++i) what += (i ? ", " : " ") + s.io.inputs[i].name;
      what += "; outputs";
      for (std::size_t i = 0; i < s.io.outputs.size(); ++i) what += (i ? ", " : " ") + s.io.outputs[i].name;
      checks.push_back({label + "/" + folder, what, (std::filesystem::path(package) / folder).string(), tolerance});
    }
  if (checks.empty()) throw Error(package + ": the package has no kernels to check");
  return checks;
}

}  // namespace orion::runtime
