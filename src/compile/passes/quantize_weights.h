#pragma once
// quantize_weights: int8 weights on the ANE. Every 1x1 conv whose weight is a const (a baked
// linear layer after lower_layout) gets the weight as int8 data and fp16 scales dequantized in
// the kernel (IR dequantize, written as constexpr_blockwise_shift_scale), so that the device
// reads half the bytes of fp16 weights. The rule is core/absmax_int8.h's: one scale per output
// channel (block 0) or per `block` input channels of an output channel.
//
// Runs after lower_layout (the weights are [O, C, 1, 1]) and before to_fp16 (which makes the
// scales fp16). Runtime weights (kernel inputs) and weights whose input channels the block
// does not divide are left as they are, and said so in a note.
#include <cstdint>
#include <memory>

#include "ir/transforms/pass.h"

namespace orion::compile {

struct QuantizeWeightsStats {
  std::int64_t quantized = 0;  // weights made int8
  std::int64_t skipped = 0;    // const conv weights left in fp16 (the block does not divide them)
  std::int64_t int8_bytes = 0, scale_bytes = 0;  // what the device reads for them (scales fp16)
};

QuantizeWeightsStats quantize_weights(ir::Graph& graph, std::int64_t block);
std::unique_ptr<ir::Pass> quantize_weights_pass(std::int64_t block);

}  // namespace orion::compile
