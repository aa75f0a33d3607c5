#pragma once
// quantize_weights: baked conv weights in fewer bits on the ANE. Every 1x1 conv whose weight is
// a const (a baked linear layer after lower_layout) gets it in the target's form, dequantized in
// the kernel by the MIL's constexpr ops, so that the device reads fewer bytes than fp16's:
//   int8   one fp16 scale per output channel (block 0) or per `block` input channels
//          (core/absmax_int8.h's rule): IR dequantize, constexpr_blockwise_shift_scale
//   int4   symmetric int4 with fp16 scales per block, uint4: affine with uint4 offsets
//          (int4_weights.h): IR dequantize with bits 4, the same op over sub-byte data
//   lut4   4-bit codes into 16-entry fp16 tables, one per `block` output channels, fitted by
//          k-means (lut4_weights.h): the IR's LUT form, constexpr_lut_to_dense
//
// int8 runs after lower_layout (the weights are [O, C, 1, 1]) and before to_fp16 (which makes
// the scales fp16). The 4-bit forms run last, after the final fold_constants: their scales and
// tables are made in fp16, and the LUT form's reshape of a const is not folded away. Runtime
// weights (kernel inputs) and weights whose channels the block does not divide are left as they
// are, and said so in a note; so are weights of at most 2048 values in the 4-bit forms, as
// coremltools' compressors leave them. Given the model's weight names (model_weight_names), the
// constants a model's graph writes itself (RoPE's rotation, grouped-query selections) are taken
// into a 4-bit form only where it holds their values exactly (their 0 and +-1 it does), and int8
// leaves them alone: a weight's quantization error is the model's to accept, a rotation's is not.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>

#include "compile/mil/mil_syntax.h"
#include "compile/passes/int4_weights.h"
#include "compile/target.h"
#include "ir/transforms/pass.h"

namespace orion::compile {

struct QuantizeWeightsStats {
  std::int64_t quantized = 0;  // weights in the form
  std::int64_t given = 0;      // of which the model's own 4-bit values
  std::int64_t skipped = 0;    // const conv weights left in fp16 (small, not divided by the block, or a constant changed by the form)
  std::int64_t data_bytes = 0, side_bytes = 0;  // what the device reads: the values, and their scales, offsets or tables
};

// The names of a model graph's params and of the values computed from params alone (the slices
// chunk_matmuls cuts): the model's weights, which lowering turns into conv weight consts named
// after them with ".conv" (lower_layout).
std::unordered_set<std::string> model_weight_names(const ir::Graph& model_graph);

// `dialect` chooses the LUT's form: per-group tables (ios18), or one table per weight (ios16,
// whose op has no other). `model_weights`: quantize only the conv weights named after these
// (nullptr: every const conv weight). `given`: in the int4 and uint4 forms, the weights named
// there (by model weight name) take their given values, block and offsets as they are.
QuantizeWeightsStats quantize_weights(ir::Graph& graph, WeightForm form, std::int64_t block,
                                      MilDialect dialect = MilDialect::ios18,
                                      const std::unordered_set<std::string>* model_weights = nullptr,
                                      const Int4Weights* given = nullptr);
// `given` must outlive the pass.
std::unique_ptr<ir::Pass> quantize_weights_pass(WeightForm form, std::int64_t block, MilDialect dialect = MilDialect::ios18,
                                                std::optional<std::unordered_set<std::string>> model_weights = std::nullopt,
                                                const Int4Weights* given = nullptr);

}  // namespace orion::compile
