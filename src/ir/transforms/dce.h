#pragma once
// Dead-code elimination: removes every node that no graph output depends on.
//
// Graph inputs are kept by default even when nothing reads them. The ANE binds a program's
// inputs by name, in alphabetical order of the names (docs/ane/HARDWARE.md, "Inputs, outputs
// and memory"), so dropping an
// unused input would shift the binding of every input after it and change the signature the
// caller packs surfaces for. A caller that owns the signature (a partitioner cutting a graph
// into kernels) may turn that off. Params and constants carry no such contract: an unread
// weight is dropped (the CPU executor ignores bindings it does not need).
#include <memory>

#include "ir/transforms/pass.h"

namespace orion::ir {

struct DceOptions {
  bool keep_unused_inputs = true;
};

// Returns whether any node was removed. Node order is kept; ids are compacted.
bool dce(ir::Graph& graph, const DceOptions& options = {});
std::unique_ptr<Pass> dce_pass(DceOptions options = {});

}  // namespace orion::ir
