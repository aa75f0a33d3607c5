#include "runtime/segment_runner.h"

#include "core/stopwatch.h"

namespace orion::runtime {

SegmentRunner::SegmentRunner(std::vector<SegmentStep> steps, device::AneDevice& device, SegmentSource& source,
                             int threads, int lanes)
    : steps_(std::move(steps)), device_(device), source_(source), threads_(threads) {
  host_.resize(steps_.size());
  for (std::size_t i = 0; i < steps_.size(); ++i)
    if (steps_[i].placement == compile::Placement::host) host_[i].resize(static_cast<std::size_t>(lanes));
}

void SegmentRunner::run(TensorMap& table, int lane, const StepDone& done) {
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const StepTiming t = steps_[i].placement == compile::Placement::ane ? run_kernel(i, lane, table)
                                                                        : run_host(i, lane, table);
    if (done) done(i, t);
  }
}

StepTiming SegmentRunner::run_kernel(std::size_t step, int lane, TensorMap& table) {
  StepTiming t;
  Stopwatch wait;
  const ReadyKernel k = source_.kernel(step, lane);
  t.wait_ms = wait.ms();
  const std::lock_guard device(device_mutex_);
  struct OnDevice {  // counted while the call lasts, however it ends
    std::atomic<int>& n;
    explicit OnDevice(std::atomic<int>& count) : n(count) { ++n; }
    ~OnDevice() { --n; }
  } on_device(on_device_);
  const KernelCallTiming c = k.surfaces->call(device_, k.id, *k.io, table, steps_[step].name);
  t.device_ms = c.device_ms;
  t.pack_ms = c.pack_ms;
  t.packed_bytes = c.packed_bytes;
  return t;
}

StepTiming SegmentRunner::run_host(std::size_t step, int lane, TensorMap& table) {
  const SegmentStep& s = steps_[step];
  StepTiming t;
  t.beside_device = on_device_ > 0;
  std::unique_ptr<exec::CpuExecutor>& ex = host_[step][static_cast<std::size_t>(lane)];
  if (!ex) ex = std::make_unique<exec::CpuExecutor>(source_.host_graph(step), exec::CpuOptions{.numerics = exec::Numerics::f32, .threads = threads_});
  Stopwatch sw;
  TensorMap b;
  for (const std::string& in : s.inputs) b[in] = lookup_value(table, in, s.name);
  for (const std::string& p : s.params) b[p] = source_.host_param(step, p);
  std::vector<Tensor> out = ex->run(b);
  for (std::size_t i = 0; i < s.outputs.size(); ++i) table[s.outputs[i]] = std::move(out[i]);
  t.host_ms = sw.ms();
  return t;
}

}  // namespace orion::runtime
