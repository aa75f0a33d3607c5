#pragma once
// DeviceGraph: one IR graph with params run on an ANE device while its weights change, as a
// training loop needs (a gradient graph, step after step). The graph is partitioned once
// (compile/partition.h: kernels, and host segments for what no kernel holds: the loss, the
// embedding's gather and scatter, the weight gradients' sums over tokens). The ANE bakes
// weights into a compiled program (ANE029), so each new set of weights is lowered again into
// each kernel's folder and installed through its VersionedKernel: reloaded in place where the
// device re-reads weight files, compiled while the budget allows, otherwise the supervisor
// checkpoints and restarts the process (ANE030). Host segments run on the CPU executor in f32
// and bind the current weights by name.
//
// Kernels reach the ANE's minimum surface by padding the channels of narrow inputs and
// outputs, not the sequence (LegalizeIoOptions::pad_channels): what crosses between a forward
// and a backward kernel is often one value per token.
//
// Installing happens in set_weights, never inside run: a restart then leaves the job at a
// boundary where its state is whole (for training: between two optimizer steps).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compile/ane_validator.h"
#include "core/temp_folder.h"
#include "core/thread_pool.h"
#include "device/ane_device.h"
#include "exec/cpu/executor.h"
#include "ir/graph.h"
#include "runtime/compile_budget.h"
#include "runtime/reload_probe.h"
#include "runtime/supervisor.h"

namespace orion::runtime {

struct DeviceGraphOptions {
  compile::AneTarget target;
  std::int64_t seq = 0;     // tokens in the window: every kernel's I/O is [seq, X]
  int threads = 1;          // the host segments' executor, and lowering the kernels (0: all cores)
  std::string work_folder;  // the kernels' files (created); empty: a temporary folder
  Supervisor* supervisor = nullptr;  // null: over the budget is an error, not a restart
};

struct DeviceGraphStats {
  int kernels = 0, host_segments = 0;
  int versions = 0;            // sets of weights installed
  int compiles = 0, reloads = 0;
  int runs = 0;
  double lower_ms = 0;    // lowering and writing each version's kernels
  double install_ms = 0;  // compiling or reloading them
  double device_ms = 0, pack_ms = 0, host_ms = 0;
};

class DeviceGraph {
 public:
  // Partitions `graph`; lowers and compiles nothing yet. `device`, `budget` and `reload` must
  // outlive it. Throws orion::Error when the graph cannot be partitioned for the target.
  DeviceGraph(const ir::Graph& graph, device::AneDevice& device, CompileBudget& budget, ReloadSupport& reload,
              DeviceGraphOptions options);
  ~DeviceGraph();
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;

  // The weights later runs compute with, by param name (f32): every kernel is lowered with them
  // and installed now. The host segments read `params` when they run: the tensors must stay
  // alive, and may change in place only before the next set_weights.
  void set_weights(const exec::Bindings& params);

  // The graph's outputs in order, for `inputs` bound by the graph's input names.
  std::vector<Tensor> run(const exec::Bindings& inputs);

  const ir::Graph& graph() const { return graph_; }
  const DeviceGraphStats& stats() const { return stats_; }

 private:
  struct Segment;
  ir::Graph graph_;
  device::AneDevice& device_;
  CompileBudget& budget_;
  ReloadSupport& reload_;
  DeviceGraphOptions options_;
  ThreadPool pool_;  // lowers the kernels of a new set of weights side by side
  std::optional<TempFolder> temp_;
  std::string work_;
  std::vector<std::unique_ptr<Segment>> segments_;
  std::vector<std::pair<std::string, std::string>> inputs_;  // the graph's names -> values' names
  std::vector<std::string> outputs_;                         // values' names, in output order
  exec::Bindings params_;
  DeviceGraphStats stats_;
};

}  // namespace orion::runtime
