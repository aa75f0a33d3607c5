#pragma once
// SegmentRunner: runs a partitioned program (compile/ane/partition.h: kernels and host segments
// in run order) over one table of values named as its segments name them: kernels on an ANE
// device, their inputs packed into fp16 surfaces and their outputs unpacked (kernel_call.h);
// host segments on the CPU executor in f32, their weights bound by name. It is the one loop
// behind inference and training. Where a kernel comes from, and when it is ready, is its
// source's business (SegmentSource): a package's, compiled from the package's folders when a
// program first needs it (runtime/package_runner.h), or a training graph's, lowered again and
// installed for every set of weights (runtime/device_graph.h).
//
// Lanes: run() may be called from several threads at once, each with a lane of its own (its
// own host executors, and its own surfaces from the source), to run independent inputs side by
// side. The device takes one evaluation at a time, as the ANE's queue does; a host step that
// starts while another lane's kernel is on the device says so in its timing.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compile/ane/partition.h"
#include "compile/kernel_io.h"
#include "core/tensor.h"
#include "core/tensor_map.h"
#include "device/ane_device.h"
#include "exec/cpu/executor.h"
#include "ir/graph.h"
#include "runtime/kernel_call.h"

namespace orion::runtime {

struct SegmentStep {
  compile::Placement placement = compile::Placement::ane;
  std::string name;
  // Host steps: the values its graph reads and writes (its inputs and outputs), and its params.
  std::vector<std::string> inputs, params, outputs;
};

// A kernel that can be evaluated now.
struct ReadyKernel {
  device::AneProgramId id = -1;
  const compile::KernelIo* io = nullptr;
  KernelSurfaces* surfaces = nullptr;  // the lane's
};

// Where the steps' kernels, host graphs and host weights come from. Called from the lanes'
// threads: what two lanes may ask for at once must be safe to give at once.
class SegmentSource {
 public:
  virtual ~SegmentSource() = default;
  // Kernel step `step`, compiled and loaded, with `lane`'s surfaces: waits while it is still
  // being made, and rethrows why it could not be.
  virtual ReadyKernel kernel(std::size_t step, int lane) = 0;
  // The graph of host step `step`; asked once per lane, when the lane first runs the step.
  virtual ir::Graph host_graph(std::size_t step) = 0;
  // The weight `param` that host step `step` reads; throws orion::Error when there is none.
  virtual const Tensor& host_param(std::size_t step, const std::string& param) = 0;
};

struct StepTiming {
  // Kernels:
  double wait_ms = 0;  // in SegmentSource::kernel (a compile or an install not yet done)
  double device_ms = 0, pack_ms = 0;
  std::int64_t packed_bytes = 0;
  // Host steps:
  double host_ms = 0;  // binding its values and the executor's run (not making the executor)
  bool beside_device = false;  // started while another lane's kernel was on the device
};

class SegmentRunner {
 public:
  // `device` and `source` must outlive the runner. `threads` is the host executors'.
  SegmentRunner(std::vector<SegmentStep> steps, device::AneDevice& device, SegmentSource& source, int threads,
                int lanes = 1);
  SegmentRunner(const SegmentRunner&) = delete;
  SegmentRunner& operator=(const SegmentRunner&) = delete;

  const std::vector<SegmentStep>& steps() const { return steps_; }

  using StepDone = std::function<void(std::size_t step, const StepTiming&)>;
  // Runs every step in order over `table` (its inputs bound, by the segments' names), which
  // ends up holding every value computed; `done` is called after each step.
  void run(TensorMap& table, int lane = 0, const StepDone& done = {});

 private:
  StepTiming run_kernel(std::size_t step, int lane, TensorMap& table);
  StepTiming run_host(std::size_t step, int lane, TensorMap& table);

  std::vector<SegmentStep> steps_;
  device::AneDevice& device_;
  SegmentSource& source_;
  int threads_;
  std::vector<std::vector<std::unique_ptr<exec::CpuExecutor>>> host_;  // [step][lane], made when first run
  std::mutex device_mutex_;        // one evaluation at a time, whichever lane
  std::atomic<int> on_device_{0};  // lanes in a device call now
};

}  // namespace orion::runtime
