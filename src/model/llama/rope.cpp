#include "model/llama/rope.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace orion::model {

std::vector<double> rope_inv_freq(std::int64_t head_dim, double theta, const RopeScaling& scaling) {
  std::vector<double> f(static_cast<std::size_t>(head_dim / 2));
  for (std::size_t i = 0; i < f.size(); ++i) {
    double v = std::pow(theta, -static_cast<double>(2 * i) / static_cast<double>(head_dim));
    switch (scaling.type) {
      case RopeScaling::Type::none: break;
      case RopeScaling::Type::linear: v /= scaling.factor; break;
      case RopeScaling::Type::llama3: {
        const double old_len = static_cast<double>(scaling.original_max_position_embeddings);
        const double low_wavelen = old_len / scaling.low_freq_factor, high_wavelen = old_len / scaling.high_freq_factor;
        const double wavelen = 2 * M_PI / v;
        if (wavelen > low_wavelen) {
          v /= scaling.factor;
        } else if (wavelen >= high_wavelen) {  // the band between: blended
          const double smooth =
              (old_len / wavelen - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor);
          v = (1 - smooth) * v / scaling.factor + smooth * v;
        }
        break;
      }
    }
    f[i] = v;
  }
  return f;
}

bool has_local_rope(const LlamaConfig& c) {
  return !c.sliding_layers.empty() && c.rope_local_theta > 0 &&
         (c.rope_local_theta != c.rope_theta || c.rope_scaling.type != RopeScaling::Type::none);
}

RopeTables rope_tables(const LlamaConfig& c, bool sliding) {
  if (sliding && has_local_rope(c)) return rope_tables(c.context(), c.head_dim(), c.rope_local_theta);
  return rope_tables(c.context(), c.head_dim(), c.rope_theta, c.rope_scaling, c.rotary_dim());
}

RopeTables rope_tables(std::int64_t positions, std::int64_t head_dim, double theta, const RopeScaling& scaling,
                       std::int64_t rotary) {
  if (rotary == 0) rotary = head_dim;
  if (positions <= 0 || head_dim <= 0 || rotary % 2 != 0 || rotary < 0 || rotary > head_dim)
    throw Error("rope: need positions > 0 and an even rotated share of the head, not " + std::to_string(positions) +
                " and " + std::to_string(rotary) + " of " + std::to_string(head_dim));
  RopeTables t{Tensor(DType::f32, {positions, head_dim}), Tensor(DType::f32, {positions, head_dim})};
  const std::int64_t half = rotary / 2;
  const std::vector<double> inv = rope_inv_freq(rotary, theta, scaling);
  float* c = t.cos.data<float>();
  float* s = t.sin.data<float>();
  std::fill(c, c + positions * head_dim, 1.0f);  // the dims past `rotary` pass unrotated
  std::fill(s, s + positions * head_dim, 0.0f);
  for (std::int64_t p = 0; p < positions; ++p)
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * inv[static_cast<std::size_t>(i)];
      const auto cv = static_cast<float>(std::cos(angle)), sv = static_cast<float>(std::sin(angle));
      c[p * head_dim + i] = c[p * head_dim + half + i] = cv;
      s[p * head_dim + i] = s[p * head_dim + half + i] = sv;
    }
  return t;
}

ir::Value apply_rope(ir::Builder& b, ir::Value x, ir::Value cos, ir::Value sin, std::int64_t heads,
                     std::int64_t head_dim, std::int64_t rotary) {
  const std::int64_t T = b.shape(x)[0], D = head_dim, R = rotary > 0 ? rotary : D, half = R / 2;
  ir::Value xh = b.reshape(x, {T, heads, D});
  ir::Value x1 = b.slice(xh, {0, 0, 0}, {T, heads, half});
  ir::Value x2 = b.slice(xh, {0, 0, half}, {T, heads, R});
  std::vector<ir::Value> parts{b.neg(x2), x1};
  if (R < D) parts.push_back(b.slice(xh, {0, 0, R}, {T, heads, D}));  // times sin 0: any values serve
  ir::Value rotated = b.concat(parts, 2);
  ir::Value c = b.reshape(cos, {T, 1, D});
  ir::Value s = b.reshape(sin, {T, 1, D});
  return b.reshape(b.add(b.mul(xh, c), b.mul(rotated, s)), {T, heads * D});
}

}  // namespace orion::model

namespace orion::model {

Tensor rotate_half_matrix(std::int64_t heads, std::int64_t head_dim, std::int64_t rotary) {
  const std::int64_t W = heads * head_dim, half = (rotary > 0 ? rotary : head_dim) / 2;
  Tensor r(DType::f32, {W, W});  // zero-filled
  float* p = r.data<float>();
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t j = 0; j < half; ++j) {
      const std::int64_t lo = h * head_dim + j, hi = lo + half;
      p[hi * W + lo] = -1.0f;  // out[lo] = -x[hi]
      p[lo * W + hi] = 1.0f;   // out[hi] = x[lo]
    }
  return r;
}

Tensor tile_heads(const Tensor& table, std::int64_t heads) {
  const std::int64_t P = table.dim(0), D = table.dim(1);
  Tensor out(DType::f32, {P, heads * D});
  const float* src = table.data<float>();
  float* dst = out.data<float>();
  for (std::int64_t p = 0; p < P; ++p)
    for (std::int64_t h = 0; h < heads; ++h) std::copy_n(src + p * D, D, dst + (p * heads + h) * D);
  return out;
}

ir::Value apply_rope_product(ir::Builder& b, ir::Value x, ir::Value cos_tiled, ir::Value sin_tiled,
                             ir::Value rotation) {
  ir::Value straight = b.mul(x, cos_tiled);
  return b.add(straight, b.mul(b.matmul(x, rotation), sin_tiled));
}

}  // namespace orion::model
