#pragma once
// Qwen3.5's Gated DeltaNet layer in the fast CPU engine (model/llama/gated_delta.h has the maths
// and the graph form the graph executor runs). The projections are the layer's packed matrices
// (in_proj_qkv, in_proj_z, in_proj_b and in_proj_a stacked as one, out_proj); what lies between
// them runs here, one token at a time: the causal convolution over the state's last inputs,
// silu, the l2 norms, the gates, the delta rule's recurrent step per value head (a rank-one
// update of its [key_head_dim, value_head_dim] state) and the gated norm. A prompt runs the same
// step token after token (its projections batched around it): on the CPU the step costs
// value_heads * key_head_dim * value_head_dim * 6 flops a token, little beside the projections,
// so the chunked form buys nothing here.
#include <cstdint>
#include <functional>
#include <vector>

#include "model/llama/llama_model.h"

namespace orion::engine {

struct FastDeltaLayer {
  model::LinearAttention shape;
  double eps = 1e-6;
  std::vector<float> taps;     // [kernel, conv_width]: conv1d.weight by tap
  std::vector<float> decay;    // [value_heads]: -exp(A_log)
  std::vector<float> dt_bias;  // [value_heads]
  std::vector<float> norm;     // [value_head_dim]: the gated norm's weight

  // Layer `layer`'s parameters of `model` (the matrices are packed by the caller).
  FastDeltaLayer(const model::LlamaModel& model, std::int64_t layer);
  // Columns of the stacked projection's output: q, k, v (conv_width), z (value_width), b, a.
  std::int64_t projection_width() const { return shape.conv_width() + shape.value_width() + 2 * shape.value_heads; }
};

// One sequence's state of one layer: the convolution's last kernel - 1 inputs and S per value
// head. Zero at position 0.
struct FastDeltaState {
  std::vector<float> conv;  // [kernel - 1, conv_width]
  std::vector<float> S;     // [value_heads, key_head_dim, value_head_dim]
  explicit FastDeltaState(const model::LinearAttention& shape);
  void zero();
};

// A parallel loop over [0, n): the session's pool or the BLAS's threads.
using ParallelRange = std::function<void(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>&)>;

// One token through the layer between its projections: `proj` the token's stacked projection
// (projection_width() floats; overwritten), `out` the value_width() floats out_proj reads. The
// state advances by the token.
void delta_token(const FastDeltaLayer& L, float* proj, FastDeltaState& state, float* out, const ParallelRange& heads);

}  // namespace orion::engine
