#include "runtime/reload_probe.h"

#include <string>
#include <vector>

#include "compile/driver.h"
#include "core/error.h"
#include "core/temp_folder.h"
#include "device/ane_packing.h"
#include "ir/builder.h"
#include "runtime/weight_reload.h"

namespace orion::runtime {

namespace {

constexpr std::int64_t kSeq = 32, kDim = 64;

// y = x @ (scale * I): the output is the input times the weights' scale, exactly in fp16 for
// small integers, so it tells which weights ran. The weight has 4096 elements: it lives in
// the blob file, which is what a reload has to re-read.
compile::AneLowered probe_kernel(float scale, const std::string& folder, const compile::AneTarget& target) {
  ir::Builder b("reload_probe");
  const auto x = b.input("x", DType::f32, {kSeq, kDim});
  b.output(b.matmul(x, b.param("w", DType::f32, {kDim, kDim})));
  std::vector<float> w(kDim * kDim, 0.0f);
  for (std::int64_t i = 0; i < kDim; ++i) w[static_cast<std::size_t>(i * kDim + i)] = scale;
  compile::KernelOptions ko;
  ko.lowering.kernel_name = "reload_probe";
  ko.lowering.target = target;
  ko.mil.dialect = target.m1_m2 ? compile::MilDialect::ios16 : compile::MilDialect::ios18;
  return compile::build_kernel(b.finish(), {{"w", Tensor::from_floats({kDim, kDim}, w)}}, folder, ko).lowered;
}

std::vector<float> evaluate(device::AneDevice& device, device::AneProgramId id, const compile::KernelIo& io,
                            const Tensor& x) {
  device::AneSurface in(static_cast<std::size_t>(io.input_bytes)), out(static_cast<std::size_t>(io.output_bytes));
  device::pack_token_major(x, io.padded_seq, in);
  device.evaluate(id, {&in}, {&out});
  return device::unpack_token_major(out, kDim, kSeq, io.padded_seq).to_floats();
}

std::vector<float> scaled(const std::vector<float>& v, float s) {
  std::vector<float> out(v);
  for (float& f : out) f *= s;
  return out;
}

}  // namespace

ReloadProbeResult probe_weight_reload(device::AneDevice& device, CompileBudget& budget, const compile::AneTarget& target) {
  TempFolder scratch("orion-reload-probe");
  const std::string kernel = scratch.path() + "/kernel", version = scratch.path() + "/version";
  const compile::AneLowered k = probe_kernel(1.0f, kernel, target);
  probe_kernel(2.0f, version, target);

  std::vector<float> xs(kSeq * kDim);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(static_cast<int>(i % 17) - 8);
  const Tensor x = Tensor::from_floats({kSeq, kDim}, xs);

  budget.sync(device.compiles());
  budget.charge_compile("the weight-reload probe");
  const device::AneProgramId id = device.compile(kernel);
  device.load(id);
  budget.note_load("the weight-reload probe");
  const std::vector<float> first = evaluate(device, id, k.io, x);
  if (first != xs) {
    device.unload(id);
    budget.note_unload();
    throw Error("weight-reload probe: the probe kernel computed wrong values before any reload (the device is "
                "broken or over its budget)");
  }
  rewrite_weights_in_place(kernel, version);
  device.unload(id);
  budget.note_unload();
  device.load(id);
  budget.note_load("the weight-reload probe");
  const std::vector<float> second = evaluate(device, id, k.io, x);
  device.unload(id);
  budget.note_unload();

  if (second == scaled(xs, 2.0f)) return {true, "unload, rewrite in place, load ran the new weights"};
  if (second == xs) return {false, "unload, rewrite in place, load kept the compiled weights (stale): recompile"};
  return {false, "unload, rewrite in place, load gave neither the old nor the new weights' result: recompile"};
}

bool ReloadSupport::supported() {
  if (!result_) result_ = probe_weight_reload(device_, budget_);
  return result_->reloads;
}

const std::string& ReloadSupport::detail() {
  supported();
  return result_->detail;
}

}  // namespace orion::runtime
