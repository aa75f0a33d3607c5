#pragma once
// Qwen3.5's linear-attention layer, Gated DeltaNet, as IR ops, with Hugging Face's parameter
// names under the layer's "linear_attn." (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a,
// conv1d.weight [conv_width, 1, kernel], A_log, dt_bias, norm.weight, out_proj):
//   q, k, v = silu(causal depthwise conv over time of in_proj_qkv(h)), split by heads;
//   q, k l2-normalised per head (eps 1e-6 inside the root), q scaled by key_head_dim^-1/2;
//   beta = sigmoid(in_proj_b(h)), g = -exp(A_log) * softplus(in_proj_a(h) + dt_bias) (<= 0);
//   per value head a state S [key_head_dim, value_head_dim], value head i reading key head
//   i / (value_heads / key_heads):  S = e^g S;  d = beta (v - S^T k);  S += k d^T;  o = S^T q;
//   out_proj(rmsnorm(o) * norm.weight * silu(in_proj_z(h))), the norm per head.
//
// Every window runs the delta rule's chunked form (chunks of at most kDeltaChunk positions),
// which a single decode step is the one-position case of. Within a chunk, with c the cumulative
// sum of g and A[r, s] = beta_r (k_r . k_s) e^(c_r - c_s) for s < r, the deltas solve
// (I + A) D = beta V - beta e^c K S0; (I + A)^-1 is built by doubling blocks,
// T_2s = T_s - T_s (A restricted to the blocks' off-diagonal halves) T_s, so every
// intermediate is a block of the true inverse (the Neumann series' terms would cancel
// catastrophically when a chunk's keys agree) and the whole form is products and elementwise
// ops: what the ANE runs and what autodiff differentiates. Every exponential is of a
// non-positive number (c_r - c_s with s <= r, and c itself).
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "ir/builder.h"
#include "model/llama/llama_config.h"

namespace orion::model {

inline constexpr std::int64_t kDeltaChunk = 64;

struct GatedDeltaOutputs {
  ir::Value y;  // [rows, hidden]: out_proj's output
  // The state after the window (one window only): the convolution's last kernel - 1 inputs
  // [kernel - 1, conv_width] and S per value head [value_heads, key_head_dim, value_head_dim].
  std::optional<ir::Value> conv, state;
};

// The mixer on h [batch * T, hidden] (the layer's normed input) inside the layer's scope;
// `past_conv` and `past_state` the state before the window (one window only), zeros without.
GatedDeltaOutputs gated_delta(ir::Builder& b, ir::Value h, const LlamaConfig& c, std::int64_t batch,
                              std::optional<ir::Value> past_conv, std::optional<ir::Value> past_state, bool state_out);

// The nodes of a Gated DeltaNet layer that run on the host in a device's program: everything of
// the layers' "linear_attn" scope but its projections (in_proj_*, out_proj), which are kernels.
// The recurrence is sequential in the tokens and reads a state of three axes, which kernels'
// token-major values do not carry; on the host it runs in f32.
std::set<std::string, std::less<>> gated_delta_host_nodes(const ir::Graph& g);

// The state's shapes for one sequence.
Shape gated_delta_conv_shape(const LlamaConfig& c);
Shape gated_delta_state_shape(const LlamaConfig& c);

}  // namespace orion::model
