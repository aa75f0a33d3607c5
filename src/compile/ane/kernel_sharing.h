#pragma once
// Kernels shared between the steps of a package. With the weights as kernel inputs, the layers
// of a model differ only in names: layer 3's kernel reads %h_3 and the params of layer 3, layer
// 4's %h_4 and layer 4's. Renamed by position, their graphs are equal, so one program serves
// them all, compiled once (ANE030 counts compiles, and a model of 28 layers has 56 or more), and
// each step binds the program's names to its own (PackageStep::bind).
#include <map>
#include <string>

#include "compile/ane/ane_package.h"
#include "compile/kernel_io.h"
#include "ir/graph.h"

namespace orion::compile {

struct CanonicalKernel {
  // The segment with every node renamed by its position: inputs x0, x1... in node order, params
  // p0, p1..., outputs y0, y1... in the output list's order, the rest n0, n1.... A slice of a
  // param along one axis (a chunk of a head cut for the on-chip budget) becomes a param of its
  // own, so that the chunks of one head share a kernel too.
  ir::Graph graph;
  std::map<std::string, std::string> names;  // the renamed inputs, outputs and params -> the segment's names
  std::map<std::string, WeightPart> parts;   // the params that were slices -> the part they take
  std::string key;  // equal for two segments equal but for names (their printed text, hashed)
};

CanonicalKernel canonical_kernel(const ir::Graph& segment);

// A step's bind (PackageStep::bind) for a kernel lowered from `kernel` with I/O `io`: each I/O
// name and weight param of the program -> the step's. A weight input's name is made from its
// param's (lower_layout: "w_" and the param as a MIL identifier), so it is bound the same way.
std::map<std::string, std::string> step_bind(const CanonicalKernel& kernel, const KernelIo& io);

}  // namespace orion::compile
