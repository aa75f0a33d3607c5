#pragma once
// write_ane_package: model graphs in, a package folder out (layout in ane_package.h). For each
// program, through the compile driver (compile/driver.h): plan_segments (kernels and host
// segments), then build_kernel per kernel and the IR printer per host segment; the params
// host segments read go to one fp32 blob file. With the weights as kernel inputs, segments
// equal but for names share one kernel (kernel_sharing.h), and the params kernels read go to
// one fp16 blob file instead of each kernel's. The folder is written beside `out` and renamed
// into place, so a failed compile leaves nothing half written. Output is deterministic: the
// same graphs and weights give the same bytes.
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compile/ane/ane_package.h"
#include "compile/passes/int4_weights.h"
#include "ir/transforms/bind_params.h"

namespace orion::compile {

struct ProgramSpec {
  std::string name;
  ir::Graph graph;                               // token-major, with params
  std::int64_t seq = 0;                          // tokens in its window
  std::set<std::string, std::less<>> host_nodes;  // see PartitionOptions
  nlohmann::json session;                        // stored as it is
  // The node that ends each layer: with weights as inputs the kernels are cut after them
  // (PartitionOptions::cut_after), so that the layers' kernels are alike and share programs.
  std::set<std::string, std::less<>> layer_ends;
};

struct PackageOptions {
  AneTarget target;
  MilDialect dialect = MilDialect::ios18;
  bool replace = false;  // replace an existing `out`
  // A param with no value in the weights becomes a runtime weight (manifest runtime_weights):
  // a kernel input written by the runner, and read from the runner's values by host steps.
  // Otherwise it is an error.
  bool runtime_weights = false;
  // How kernels hold the weights: baked, as inputs (shared kernels), or nullopt: baked while
  // the kernels fit `compile_budget` (a process compiles them all, ANE030), inputs when not.
  std::optional<KernelWeights> kernel_weights;
  int compile_budget = 119;
  std::function<void(std::string_view)> progress;  // one line per step written
  // The int4/uint4 forms' weights the model arrived in, by param name (an MLX 4-bit folder's).
  std::shared_ptr<const Int4Weights> given_int4;
};

struct PackageReport {
  int kernels = 0, host_segments = 0;
  int programs = 0;  // kernel folders: what a process compiles (fewer than kernels when shared)
  KernelWeights weights = KernelWeights::baked;
  std::int64_t kernel_weight_bytes = 0;  // fp16 blobs, all kernels
  std::int64_t host_weight_bytes = 0;
  std::vector<ir::Diagnostic> diagnostics;   // the passes' notes, prefixed by the step
};

PackageReport write_ane_package(const std::vector<ProgramSpec>& programs, const TensorMap& weights,
                                const PackageOptions& options, const std::string& out, nlohmann::json model);

}  // namespace orion::compile
