#include "engine/fast/gated_delta_fast.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/fast/fast_session.h"

namespace orion::engine {

namespace {

float silu(float x) { return x / (1.0f + std::exp(-x)); }

// x / sqrt(sum(x^2) + 1e-6) * scale over n, in place.
void l2_normalise(float* x, std::int64_t n, float scale) {
  double sq = 0;
  for (std::int64_t i = 0; i < n; ++i) sq += static_cast<double>(x[i]) * x[i];
  const auto f = static_cast<float>(scale / std::sqrt(sq + 1e-6));
  for (std::int64_t i = 0; i < n; ++i) x[i] *= f;
}

}  // namespace

FastDeltaLayer::FastDeltaLayer(const model::LlamaModel& model, std::int64_t layer)
    : shape(model.config().linear), eps(model.config().rms_norm_eps) {
  const std::string p = "model.layers." + std::to_string(layer) + ".linear_attn.";
  const std::int64_t K = shape.conv_kernel, CW = shape.conv_width();
  const std::vector<float> w = float_values(model.weight(p + "conv1d.weight"));  // [CW, 1, K]
  taps.resize(static_cast<std::size_t>(K * CW));
  for (std::int64_t c = 0; c < CW; ++c)
    for (std::int64_t j = 0; j < K; ++j) taps[static_cast<std::size_t>(j * CW + c)] = w[static_cast<std::size_t>(c * K + j)];
  decay = float_values(model.weight(p + "A_log"));
  for (float& v : decay) v = -std::exp(v);
  dt_bias = float_values(model.weight(p + "dt_bias"));
  norm = float_values(model.weight(p + "norm.weight"));
}

FastDeltaState::FastDeltaState(const model::LinearAttention& shape)
    : conv(static_cast<std::size_t>((shape.conv_kernel - 1) * shape.conv_width())),
      S(static_cast<std::size_t>(shape.value_heads * shape.key_head_dim * shape.value_head_dim)) {}

void FastDeltaState::zero() {
  std::fill(conv.begin(), conv.end(), 0.0f);
  std::fill(S.begin(), S.end(), 0.0f);
}

void delta_token(const FastDeltaLayer& L, float* proj, FastDeltaState& state, float* out, const ParallelRange& heads) {
  const model::LinearAttention& la = L.shape;
  const std::int64_t K = la.conv_kernel, CW = la.conv_width(), KW = la.key_width(), VW = la.value_width();
  const std::int64_t Hk = la.key_heads, Hv = la.value_heads, dk = la.key_head_dim, dv = la.value_head_dim;
  float* mixed = proj;
  const float* z = proj + CW;
  const float* beta_logit = z + VW;
  const float* a = beta_logit + Hv;
  // The convolution over the state's K - 1 inputs and this one, which then joins the state.
  float* conv = state.conv.data();
  for (std::int64_t c = 0; c < CW; ++c) {
    const float in = mixed[c];
    float acc = L.taps[static_cast<std::size_t>((K - 1) * CW + c)] * in;
    for (std::int64_t j = 0; j + 1 < K; ++j) acc += L.taps[static_cast<std::size_t>(j * CW + c)] * conv[j * CW + c];
    for (std::int64_t j = 0; j + 2 < K; ++j) conv[j * CW + c] = conv[(j + 1) * CW + c];
    conv[(K - 2) * CW + c] = in;
    mixed[c] = silu(acc);
  }
  float* q = mixed;
  float* k = mixed + KW;
  const float* v = mixed + 2 * KW;
  const float q_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dk)));
  for (std::int64_t h = 0; h < Hk; ++h) {
    l2_normalise(q + h * dk, dk, q_scale);
    l2_normalise(k + h * dk, dk, 1.0f);
  }
  heads(Hv, [&](std::int64_t h0, std::int64_t h1) {
    std::vector<float> recalled(static_cast<std::size_t>(dv)), o(static_cast<std::size_t>(dv));
    for (std::int64_t h = h0; h < h1; ++h) {
      const float* qh = q + (h / (Hv / Hk)) * dk;
      const float* kh = k + (h / (Hv / Hk)) * dk;
      const float* vh = v + h * dv;
      const float x = a[h] + L.dt_bias[static_cast<std::size_t>(h)];
      const float softplus = std::max(x, 0.0f) + std::log1p(std::exp(-std::abs(x)));
      const float e_g = std::exp(L.decay[static_cast<std::size_t>(h)] * softplus);
      const float beta = 1.0f / (1.0f + std::exp(-beta_logit[h]));
      float* S = state.S.data() + h * dk * dv;
      // d = beta (v - (e^g S)^T k); S = e^g S + k d^T; o = S^T q.
      std::fill(recalled.begin(), recalled.end(), 0.0f);
      for (std::int64_t i = 0; i < dk; ++i)
        for (std::int64_t j = 0; j < dv; ++j) recalled[static_cast<std::size_t>(j)] += kh[i] * S[i * dv + j];
      for (std::int64_t j = 0; j < dv; ++j)
        recalled[static_cast<std::size_t>(j)] = beta * (vh[j] - e_g * recalled[static_cast<std::size_t>(j)]);  // now d
      std::fill(o.begin(), o.end(), 0.0f);
      for (std::int64_t i = 0; i < dk; ++i)
        for (std::int64_t j = 0; j < dv; ++j) {
          float& s = S[i * dv + j];
          s = e_g * s + kh[i] * recalled[static_cast<std::size_t>(j)];
          o[static_cast<std::size_t>(j)] += qh[i] * s;
        }
      // The gated norm: rmsnorm(o) * w * silu(z).
      double sq = 0;
      for (float val : o) sq += static_cast<double>(val) * val;
      const auto inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(dv) + L.eps));
      for (std::int64_t j = 0; j < dv; ++j)
        out[h * dv + j] = o[static_cast<std::size_t>(j)] * inv * L.norm[static_cast<std::size_t>(j)] * silu(z[h * dv + j]);
    }
  });
}

}  // namespace orion::engine
