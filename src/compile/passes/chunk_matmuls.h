#pragma once
// chunk_matmuls: a matmul whose weight would take more than the ANE's on-chip memory (about
// 32 MB, ANE015: beyond it a kernel runs slower, docs/ane/HARDWARE.md, "Inputs, outputs and
// memory", and the whole weight must sit in one kernel) is split along its output axis into equal pieces that each
// fit, one matmul per piece on a slice of the weight, joined by a concat on the last axis:
//
//   %logits = matmul(%x, %wte) {transpose_y = true}        wte [50257, 768]: 77 MB in fp16
// becomes, with a 32 MB budget,
//   %logits.chunk0 = matmul(%x, slice(%wte, [0, 0], [16753, 768])) ...   three pieces
//   %logits = concat(%logits.chunk0, %logits.chunk1, %logits.chunk2) {axis = 1}
//
// The partitioner then gives each piece its own kernel and, with concat not opted in (ANE004),
// runs the join on the host. A weight is a param, a constant or a value computed from those
// alone (weight_values.h); its size is counted in fp16, the form the device stores.
#include <cstdint>
#include <memory>

#include "ir/transforms/pass.h"

namespace orion::compile {

// Returns the number of matmuls split.
int chunk_matmuls(ir::Graph& graph, std::int64_t max_weight_bytes);
std::unique_ptr<ir::Pass> chunk_matmuls_pass(std::int64_t max_weight_bytes);

}  // namespace orion::compile
