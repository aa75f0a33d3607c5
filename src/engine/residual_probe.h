#pragma once
// How large a model's residual stream grows, measured on the CPU before it is compiled for the
// ANE, and the power of two the device's graphs divide the stream by so that fp16 holds it
// (DecoderGraphOptions::residual_scale). Gemma 3's stream is reported to pass fp16's 65,504
// (its checkpoints are bf16; in fp16 it overflows to inf and the logits to NaN); a scale is exact
// in its graphs, whose every norm of the stream is an RMSNorm.
#include <cstdint>
#include <span>
#include <vector>

#include "model/causal_lm.h"

namespace orion::engine {

// The magnitude the scaled stream is brought under: fp16's largest finite value over 16, headroom
// for the texts the probe did not see.
inline constexpr double kResidualCeiling = 4096;

// The probe's tokens: the model's BOS where it has one (a model's largest activations are
// commonly at its first token), then ids spread over the vocabulary.
std::vector<std::int32_t> residual_probe_tokens(const model::CausalLm& m, std::int64_t n = 32);

// The largest |value| of the stream on `tokens`: every layer's output ("layer_out.L"), by the
// graph executor in f32.
double residual_peak(const model::CausalLm& m, std::span<const std::int32_t> tokens);

// The least power of two that brings `peak` under kResidualCeiling; 1 when it is under already.
double residual_scale_for(double peak);

}  // namespace orion::engine
