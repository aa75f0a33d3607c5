#include "compile/driver.h"

#include "compile/ane/ane_validator.h"
#include "compile/mil/mil_parser.h"
#include "compile/passes/chunk_matmuls.h"

namespace orion::compile {

Partition plan_segments(const ir::Graph& graph, const PartitionOptions& options) {
  ir::Graph g = graph;
  chunk_matmuls(g, options.target.on_chip_bytes);
  return partition_graph(g, options);
}

BuiltKernel build_kernel(const ir::Graph& graph, const TensorMap& weights, const std::string& folder,
                         const KernelOptions& options) {
  AneLoweringOptions lowering = options.lowering;
  lowering.dialect = options.mil.dialect;
  BuiltKernel k{lower_for_ane(graph, weights, lowering), {}, {}};
  MilWriteOptions mil = options.mil;
  mil.one_file_per_tensor = mil.one_file_per_tensor || options.lowering.target.m1_m2;  // ANE039
  k.mil = write_mil(k.lowered.graph, mil);
  // The rules of the text as written (concat's form, named consts, weight files), checked before
  // anything reaches the folder, and the weight slots it spends.
  const std::string mil_name = folder + "/model.mil";
  const MilAst ast = parse_mil_ast(k.mil.text, mil_name);
  refuse_errors(check_mil_program(ast, options.lowering.target, mil_name), folder);
  k.slots = count_weight_slots(ast.functions.at(0));
  write_model_folder(k.mil, folder, mil);
  return k;
}

}  // namespace orion::compile
