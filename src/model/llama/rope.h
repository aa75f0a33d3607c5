#pragma once
// Rotary position embeddings exactly as Hugging Face's Llama computes them:
//   inv_freq[i] = theta^(-2i / d) for i < d/2, then stretched by rope_scaling ("linear":
//   divided by the factor; "llama3": divided for wavelengths above
//   original_max_position_embeddings / low_freq_factor, kept below .../ high_freq_factor, blended
//   between, as transformers' _compute_llama3_parameters);
//   cos[p] = cos(p * inv_freq) concatenated twice (d columns), sin likewise;
//   rope(x) = x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x[d/2:], x[:d/2]).
// With a partial rotary dim r < d (Qwen3.5), the first r dims of each head rotate as a head of
// r dims would (inv_freq over r, rotate_half pairing i with i + r/2) and the rest pass: their
// cos is 1 and their sin 0.
// The tables are computed on the host (in double, stored f32) and enter the graphs as
// constants gathered by the positions input, so a device sees them as host-made inputs.
#include <cstdint>

#include "core/tensor.h"
#include "ir/builder.h"
#include "model/llama/llama_config.h"

namespace orion::model {

struct RopeTables {
  Tensor cos, sin;  // f32 [positions, head_dim]
};

// `rotary`: the rotated dims (0: all of head_dim).
RopeTables rope_tables(std::int64_t positions, std::int64_t head_dim, double theta, const RopeScaling& scaling = {},
                       std::int64_t rotary = 0);
// The tables of a config: context() positions, its head size, theta and scaling; for Gemma 3's
// sliding-window layers (`sliding`), rope_local_theta unscaled.
RopeTables rope_tables(const LlamaConfig& c, bool sliding = false);
// Whether the sliding layers rotate by tables of their own (not when they equal the global ones).
bool has_local_rope(const LlamaConfig& c);
// The frequencies themselves, scaled (what the tables are made of).
std::vector<double> rope_inv_freq(std::int64_t head_dim, double theta, const RopeScaling& scaling);

// x [seq, heads * head_dim] rotated by cos and sin [seq, head_dim] (the tables' rows of the
// window's positions); same shape out. `rotary`: the rotated dims (0: all).
ir::Value apply_rope(ir::Builder& b, ir::Value x, ir::Value cos, ir::Value sin, std::int64_t heads,
                     std::int64_t head_dim, std::int64_t rotary = 0);

// The same rotation in the ops the ANE compiler lowers (model/llama/llama.h's ANE form), on
// token-major rows without a per-head reshape: rotate_half as a product with the constant
// signed permutation rotate_half_matrix, the tables tiled across the heads.
//   rope(x) = x * cos_tiled + (x R) * sin_tiled,  x [seq, heads * head_dim].
// R [heads * head_dim, heads * head_dim]: block diagonal, (x R) = rotate_half(x) per head.
Tensor rotate_half_matrix(std::int64_t heads, std::int64_t head_dim, std::int64_t rotary = 0);
// A table [positions, head_dim] repeated `heads` times along its columns.
Tensor tile_heads(const Tensor& table, std::int64_t heads);
ir::Value apply_rope_product(ir::Builder& b, ir::Value x, ir::Value cos_tiled, ir::Value sin_tiled,
                             ir::Value rotation);

}  // namespace orion::model
