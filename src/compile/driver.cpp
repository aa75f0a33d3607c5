#include "compile/driver.h"

#include "compile/passes/chunk_matmuls.h"

namespace orion::compile {

Partition plan_segments(const ir::Graph& graph, const PartitionOptions& options) {
  ir::Graph g = graph;
  chunk_matmuls(g, options.target.on_chip_bytes);
  return partition_graph(g, options);
}

BuiltKernel build_kernel(const ir::Graph& graph, const TensorMap& weights, const std::string& folder,
                         const KernelOptions& options) {
  BuiltKernel k{lower_for_ane(graph, weights, options.lowering), {}};
  k.mil = write_mil(k.lowered.graph, options.mil);
  write_model_folder(k.mil, folder, options.mil);
  return k;
}

}  // namespace orion::compile
