#pragma once
// DeviceGraph: one IR graph with params run on an ANE device while its weights change, as a
// training loop needs (a gradient graph, step after step). The graph is partitioned once
// (compile/ane/partition.h: kernels, and host segments for what no kernel holds: the loss, the
// embedding's gather and scatter, the weight gradients' sums over tokens). The ANE bakes
// weights into a compiled program (ANE029), so each new set of weights is lowered again into
// each kernel's folder and installed through its VersionedKernel: reloaded in place where the
// device re-reads weight files, compiled while the budget allows, otherwise the supervisor
// checkpoints and restarts the process (ANE030). Host segments run on the CPU executor in f32
// and bind the current weights by name. The segments run through the segment runner
// (runtime/segment_runner.h), as a package's do, with the device graph as their source.
//
// Weights as inputs (DeviceGraphWeights::inputs, the default): every kernel is lowered with its
// weights as runtime weights (compile/passes/lower_layout.h), once, and compiled once at the
// first set_weights; each set of weights after that is written into the kernels' resident weight
// surfaces (KernelSurfaces::write_weights, fp16 clamped), in the background in run order as an
// install is: nothing is lowered, reloaded or compiled per step, and the budget is spent once.
// The reports (HARDWARE.md, "Weights") say the hardware trains this way; `baked` is the path
// above, kept for devices that refuse the input form.
//
// Kernels reach the ANE's minimum surface by padding the channels of narrow inputs and
// outputs, not the sequence (LegalizeIoOptions::pad_channels): what crosses between a forward
// and a backward kernel is often one value per token.
//
// set_weights returns before the kernels are ready: lowering runs on a thread of its own (the
// kernels side by side on the pool), installing on another in run order, and run() waits for
// each kernel only when it reaches it, so that kernel k+1 is lowered and reloaded while kernel
// k evaluates and while the caller does its host work. An install that failed is rethrown by
// the run that needs the kernel.
//
// run_many runs independent inputs (the sequences of a micro-batch) on two lanes, each with
// its own surfaces, host executors and values: while one lane's kernel is on the device, the
// other runs its host segments (the weight gradients' sums) and prepares its next kernel's
// inputs. The device takes one evaluation at a time, as the ANE's queue does. Each input's
// outputs are the bits run() gives it.
//
// Whether a set of weights needs a restart is decided in set_weights, before anything of it is
// installed: the kernels that cannot be reloaded are counted against the budget there, and a
// restart happens on the caller's thread at a boundary where its state is whole (for training:
// between two optimizer steps), never from the install thread in the middle of a step.
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compile/target.h"
#include "core/serial_queue.h"
#include "core/temp_folder.h"
#include "device/ane_cost_model.h"
#include "core/thread_pool.h"
#include "device/ane_device.h"
#include "exec/cpu/executor.h"
#include "ir/graph.h"
#include "runtime/compile_budget.h"
#include "runtime/reload_probe.h"
#include "runtime/segment_runner.h"
#include "runtime/supervisor.h"

namespace orion::runtime {

enum class DeviceGraphWeights { inputs, baked };

struct DeviceGraphOptions {
  DeviceGraphWeights weights = DeviceGraphWeights::inputs;
  compile::AneTarget target;
  std::int64_t seq = 0;     // tokens in the window: every kernel's I/O is [seq, X]
  int threads = 1;          // the host segments' executor, and lowering the kernels (0: all cores)
  std::string work_folder;  // the kernels' files (created); empty: a temporary folder
  Supervisor* supervisor = nullptr;  // null: over the budget is an error, not a restart
  int lanes = 2;  // run_many's inputs in flight at once (1: one after another)
  // Nodes kernels end after (compile::PartitionOptions::cut_after): each layer's end, forward
  // and backward. With weights as inputs, kernels equal but for names then share one program
  // (compile/ane/kernel_sharing.h), compiled once: the compiles do not grow with depth.
  std::set<std::string, std::less<>> cut_after;
};

struct DeviceGraphStats {
  bool weights_inputs = false;  // the weights are kernel inputs (DeviceGraphWeights::inputs)
  int kernels = 0, host_segments = 0;
  int programs = 0;  // the kernels' distinct programs: what is compiled (fewer when shared)
  int versions = 0;            // sets of weights installed
  int compiles = 0, reloads = 0;
  int runs = 0;
  // Weights as inputs: fp16 bytes written into the weight surfaces (every lane's), summed over
  // the versions, and the time it took.
  std::int64_t weight_bytes = 0;
  double weight_ms = 0;
  double lower_ms = 0;    // lowering and writing each version's kernels, summed over the kernels
  double install_ms = 0;  // compiling or reloading them, summed
  double wait_ms = 0;     // what of both runs waited for: the rest overlapped with other work
  // run_many: host segments that started while another lane's kernel was on the device.
  int host_beside_device = 0;
  double device_ms = 0, pack_ms = 0, host_ms = 0;
  // Kernel evaluations, and the fp16 bytes of their input and output surfaces (runtime weights
  // included): what a device's dispatch and transfer costs scale with.
  std::int64_t evaluations = 0, surface_bytes = 0;
  // What each kernel does in one run (device/ane_cost_model.h), for a projection of the
  // device's time; empty until every kernel has run once.
  std::vector<device::KernelWork> kernel_works;
};

class DeviceGraph : private SegmentSource {
 public:
  // Partitions `graph`; lowers and compiles nothing yet. `device`, `budget` and `reload` must
  // outlive it. Throws orion::Error when the graph cannot be partitioned for the target.
  DeviceGraph(const ir::Graph& graph, device::AneDevice& device, CompileBudget& budget, ReloadSupport& reload,
              DeviceGraphOptions options);
  ~DeviceGraph() override;
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;

  // The weights later runs compute with, by param name (f32): every kernel is lowered with them
  // and installed, in the background (see above); a restart, when the budget needs one, happens
  // here. The tensors must stay alive, and unchanged until the next run() has returned (the
  // lowering reads them until then; the host segments read them when they run).
  // With `may_restart` false, a set of weights that would need a restart is left alone and the
  // call returns false: a caller that is not at a boundary (a trainer finishing its step) tries
  // early, and leaves the restart to its next call at the boundary.
  bool set_weights(const TensorMap& params, bool may_restart = true);

  // The graph's outputs in order, for `inputs` bound by the graph's input names.
  std::vector<Tensor> run(const TensorMap& inputs);
  // run() of each of `inputs`, up to `lanes` at once; the results in the inputs' order.
  std::vector<std::vector<Tensor>> run_many(const std::vector<TensorMap>& inputs);

  const ir::Graph& graph() const { return graph_; }
  // Counts the installs of the current set of weights once they are done.
  const DeviceGraphStats& stats() const { return stats_; }

 private:
  struct Segment;
  // Whether the kernels that must compile for a new set of weights fit the budget; when they do
  // not and `may_restart`, throws orion::Error or restarts the process.
  bool plan_installs(const std::vector<Segment*>& kernels, int compiles, bool may_restart);
  void write_weights(Segment& seg);
  Segment& owner_of(Segment& seg);
  // A segment of a shared program: its I/O under its own names, and its surfaces.
  void bind(Segment& seg);
  std::string next_folder(const Segment& seg) const;
  void lower(Segment& seg);
  void install(Segment& seg);
  // Waits for the previous set_weights' work; `rethrow`: its first error.
  void finish(bool rethrow);
  void count_version();
  struct LaneStats;
  std::vector<Tensor> run_lane(int lane, const TensorMap& inputs, LaneStats& st);
  // SegmentSource: the segments' kernels once installed, their host graphs and the weights.
  ReadyKernel kernel(std::size_t step, int lane) override;
  ir::Graph host_graph(std::size_t step) override;
  const Tensor& host_param(std::size_t step, const std::string& param) override;
  ir::Graph graph_;
  device::AneDevice& device_;
  CompileBudget& budget_;
  ReloadSupport& reload_;
  DeviceGraphOptions options_;
  ThreadPool pool_;  // lowers the kernels of a new set of weights side by side
  std::optional<TempFolder> temp_;
  std::string work_;
  std::vector<std::unique_ptr<Segment>> segments_;
  std::unique_ptr<SegmentRunner> runner_;  // runs segments_, by index
  std::vector<std::pair<std::string, std::string>> inputs_;  // the graph's names -> values' names
  std::vector<std::string> outputs_;                         // values' names, in output order
  TensorMap params_;
  DeviceGraphStats stats_;
  bool has_weights_ = false;
  bool compiled_ = false;  // weights as inputs: the kernels are lowered and installed
  bool version_counted_ = true;
  std::future<void> lowering_;  // the current version's lowering thread
  std::unique_ptr<SerialQueue> installer_;  // last: it goes first, before what its jobs use
};

}  // namespace orion::runtime
