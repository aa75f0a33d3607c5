#pragma once
// The compile driver: the one way from a model graph to ANE kernels on disk, in two calls.
//
//   plan_segments  chunk_matmuls (weights beyond the on-chip budget), then partition_graph:
//                  the kernels and host segments a runtime runs in order (ane/partition.h)
//   build_kernel   lower_for_ane (passes + validator, ane/ane_lowering.h), write_mil, the
//                  MIL-stage rules on the text written, and write_model_folder: model.mil and
//                  its weight blob in the kernel's folder
//
// Its users: the package writer (ane/ane_package_writer.h), the device graph of training
// (runtime/device_graph.h), the reload probe, and `orion compile` and `orion demo`.
#include <string>

#include "compile/ane/ane_lowering.h"
#include "compile/ane/partition.h"
#include "compile/ane/weight_slots.h"
#include "compile/mil/mil_writer.h"

namespace orion::compile {

// `graph` is left unchanged; the segments are cut from a copy with its large matmuls chunked
// for options.target.on_chip_bytes.
Partition plan_segments(const ir::Graph& graph, const PartitionOptions& options);

struct KernelOptions {
  AneLoweringOptions lowering;
  MilWriteOptions mil;
};

struct BuiltKernel {
  AneLowered lowered;  // the graph in ANE form, its KernelIo, the passes' notes and warnings
  MilProgram mil;      // the text and weight blob written to the folder
  WeightSlots slots;   // what the program spends of the per-program weight budget (ANE037)
};

// Lowers `graph` (every param bound from `weights`) and writes the kernel into `folder`
// (created; files written atomically). Throws orion::Error where a pass, the validator or the
// writer refuses.
BuiltKernel build_kernel(const ir::Graph& graph, const TensorMap& weights, const std::string& folder,
                         const KernelOptions& options = {});

}  // namespace orion::compile
