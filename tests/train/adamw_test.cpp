#include "train/optim/adamw.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/random.h"
#include "train/optim/adamw_kernels.h"

namespace orion::train {
namespace {


// Params of several ranks: a tail that is no multiple of any vector width, a 1-D bias, a
// tensor spanning more than one of the optimizer's 64K-element chunks, a rank-3 tensor.
TensorMap make_params(std::uint64_t seed, double scale = 1.0) {
  const std::map<std::string, Shape> shapes = {
      {"w1", {37, 19}}, {"b1", {19}}, {"big", {300, 250}}, {"emb", {5, 3, 7}}, {"ln.g", {1}}};
  Rng rng(seed);
  TensorMap out;
  for (const auto& [name, shape] : shapes) {
    Tensor t(DType::f32, shape);
    for (float& x : t.span<float>()) x = static_cast<float>(rng.normal() * scale);
    out.emplace(name, t);
  }
  return out;
}

TensorMap clone_all(const TensorMap& b) {
  TensorMap out;
  for (const auto& [name, t] : b) out.emplace(name, t.clone());
  return out;
}

// AdamW written straight from the paper's algorithm (decoupled decay) in double, one
// element at a time: what the optimizer must compute up to f32 rounding.
struct RefAdamW {
  AdamWConfig c;
  std::map<std::string, std::vector<double>> p, m, v;
  std::map<std::string, int> rank;
  int t = 0;

  RefAdamW(const AdamWConfig& config, const TensorMap& params) : c(config) {
    for (const auto& [name, tensor] : params) {
      for (const float x : tensor.span<const float>()) p[name].push_back(x);
      m[name].assign(p[name].size(), 0.0);
      v[name].assign(p[name].size(), 0.0);
      rank[name] = tensor.rank();
    }
  }

  // Returns {norm, clipped}.
  std::pair<double, bool> step(const TensorMap& grads, double lr, double scale) {
    double sq = 0.0;
    std::map<std::string, std::vector<double>> g;
    for (const auto& [name, tensor] : grads)
      for (const float x : tensor.span<const float>()) {
        g[name].push_back(x / scale);
        sq += (x / scale) * (x / scale);
      }
    const double norm = std::sqrt(sq);
    const bool clipped = c.clip_norm > 0 && norm > c.clip_norm;
    ++t;
    for (auto& [name, pv] : p) {
      const double wd = rank[name] >= 2 ? c.weight_decay : 0.0;
      for (std::size_t i = 0; i < pv.size(); ++i) {
        double gi = g[name][i];
        if (clipped) gi *= c.clip_norm / norm;
        m[name][i] = c.beta1 * m[name][i] + (1 - c.beta1) * gi;
        v[name][i] = c.beta2 * v[name][i] + (1 - c.beta2) * gi * gi;
        const double mhat = m[name][i] / (1 - std::pow(c.beta1, t));
        const double vhat = v[name][i] / (1 - std::pow(c.beta2, t));
        pv[i] = pv[i] - lr * wd * pv[i] - lr * mhat / (std::sqrt(vhat) + c.eps);
      }
    }
    return {norm, clipped};
  }
};

void expect_close(const std::vector<double>& ref, const Tensor& got, double abs_tol, double rel_tol,
                  const std::string& what) {
  const auto g = got.span<const float>();
  ASSERT_EQ(ref.size(), g.size()) << what;
  for (std::size_t i = 0; i < ref.size(); ++i)
    ASSERT_NEAR(g[i], ref[i], abs_tol + rel_tol * std::abs(ref[i])) << what << "[" << i << "]";
}

void run_against_reference(const AdamWConfig& config, double grad_scale, bool expect_clipping) {
  TensorMap params = make_params(1);
  RefAdamW ref(config, params);
  AdamW opt(config, params);
  Rng rng(2);
  const double lr = 0.01;
  for (int step = 0; step < 6; ++step) {
    TensorMap grads = make_params(100 + static_cast<std::uint64_t>(step), 0.05 * grad_scale);
    const auto [ref_norm, ref_clipped] = ref.step(grads, lr, grad_scale);
    const AdamW::StepResult r = opt.step(params, grads, lr, grad_scale);
    EXPECT_NEAR(r.grad_norm, ref_norm, 1e-12 * ref_norm) << "step " << step;
    EXPECT_EQ(r.clipped, ref_clipped) << "step " << step;
    EXPECT_EQ(r.clipped, expect_clipping) << "step " << step;
  }
  EXPECT_EQ(opt.steps(), 6);
  const TensorMap state = opt.state();
  for (const auto& [name, t] : params) {
    // p ~ N(0, 1) moves by about lr a step. f32 rounds p and the decay factor at each step
    // (~6e-8 relative each) and the update (~1e-7 of lr); a wrong term would be off by >1e-3.
    expect_close(ref.p[name], t, 1e-5 * lr, 1e-6, "param " + name);
    // m can cancel to near zero: its error is relative to the gradients' size (~0.05).
    expect_close(ref.m[name], state.at("m." + name), 1e-8, 1e-5, "m." + name);
    expect_close(ref.v[name], state.at("v." + name), 1e-12, 1e-5, "v." + name);
  }
}

TEST(AdamW, MatchesADoublePrecisionReferenceWithoutClippingOrDecay) {
  run_against_reference({.weight_decay = 0.0, .clip_norm = 0.0}, 1.0, false);
}

TEST(AdamW, MatchesTheReferenceWithDecayAndClipping) {
  // The gradients' norm is about 0.05 * sqrt(80k) = 14, far above the clip norm of 1.
  run_against_reference({.weight_decay = 0.1, .clip_norm = 1.0}, 1.0, true);
}

TEST(AdamW, MatchesTheReferenceWithAGradScaleThatIsNoPowerOfTwo) {
  run_against_reference({.beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.05, .clip_norm = 100.0}, 3.0,
                        false);
}

TEST(AdamW, FirstStepMovesEachWeightByTheLearningRateAgainstItsGradientsSign) {
  // Bias correction makes the first step m_hat / sqrt(v_hat) = g / |g|: every weight moves by
  // lr g / (|g| + eps), about lr whatever the size of its gradient.
  TensorMap params = make_params(3);
  const TensorMap before = clone_all(params);
  TensorMap grads = make_params(4, 1e-3);
  AdamW opt({.weight_decay = 0.0, .clip_norm = 0.0}, params);
  opt.step(params, grads, 0.5);
  for (const auto& [name, t] : params) {
    const auto p0 = before.at(name).span<const float>(), g = grads.at(name).span<const float>(), p1 = t.span<const float>();
    for (std::size_t i = 0; i < p1.size(); ++i)
      ASSERT_NEAR(p1[i], p0[i] - 0.5 * g[i] / (std::abs(g[i]) + 1e-8), 1e-6) << name << "[" << i << "]";
  }
}

TEST(AdamW, WeightDecayAppliesToMatricesOnly) {
  TensorMap params = make_params(5);
  const TensorMap before = clone_all(params);
  TensorMap zeros;
  for (const auto& [name, t] : params) zeros.emplace(name, Tensor(DType::f32, t.shape()));
  AdamW opt({.weight_decay = 0.1, .clip_norm = 1.0}, params);
  EXPECT_TRUE(opt.decays("w1"));
  EXPECT_TRUE(opt.decays("emb"));
  EXPECT_FALSE(opt.decays("b1"));
  EXPECT_FALSE(opt.decays("ln.g"));
  // Zero gradients leave the moments at zero: only the decay moves a weight.
  const AdamW::StepResult r = opt.step(params, zeros, 0.01);
  EXPECT_EQ(r.grad_norm, 0.0);
  EXPECT_FALSE(r.clipped);
  for (const auto& [name, t] : params) {
    const auto p0 = before.at(name).span<const float>(), p1 = t.span<const float>();
    const float factor = t.rank() >= 2 ? static_cast<float>(1.0 - 0.01 * 0.1) : 1.0f;
    for (std::size_t i = 0; i < p1.size(); ++i) ASSERT_EQ(p1[i], p0[i] * factor) << name << "[" << i << "]";
  }
}

// Bits of every param and moment after three steps.
std::vector<std::uint32_t> run_bits(const AdamWConfig& config, std::vector<double>* norms) {
  TensorMap params = make_params(6);
  AdamW opt(config, params);
  for (int s = 0; s < 3; ++s) {
    const AdamW::StepResult r = opt.step(params, make_params(50 + static_cast<std::uint64_t>(s), 0.2), 1e-3, 1.0);
    norms->push_back(r.grad_norm);
  }
  std::vector<std::uint32_t> bits;
  const auto add = [&](const TensorMap& b) {
    for (const auto& [name, t] : b)
      for (const float x : t.span<const float>()) {
        std::uint32_t u;
        std::memcpy(&u, &x, 4);
        bits.push_back(u);
      }
  };
  add(params);
  add(opt.state());
  return bits;
}

TEST(AdamW, GivesTheSameBitsOnAnyNumberOfThreads) {
  std::vector<double> norms1, norms;
  const std::vector<std::uint32_t> one = run_bits({.threads = 1}, &norms1);
  for (const int threads : {2, 3, 5}) {
    norms.clear();
    EXPECT_EQ(run_bits({.threads = threads}, &norms), one) << threads << " threads";
    EXPECT_EQ(norms, norms1) << threads << " threads";  // exactly: the norm is a fixed-order sum
  }
}

TEST(AdamW, EveryIsaUpdatesToTheSameBitsAsThePortableLoop) {
  // Without clipping the norm does not feed the update, so the paths must agree bit for bit.
  std::vector<double> scalar_norms, norms;
  const std::vector<std::uint32_t> scalar = run_bits({.clip_norm = 0.0, .isa = exec::cpu::Isa::scalar}, &scalar_norms);
  for (const exec::cpu::Isa isa : {exec::cpu::Isa::avx2, exec::cpu::Isa::avx512, exec::cpu::Isa::neon}) {
    if (!exec::cpu::isa_supported(isa)) continue;
    norms.clear();
    EXPECT_EQ(run_bits({.clip_norm = 0.0, .isa = isa}, &norms), scalar) << exec::cpu::isa_name(isa);
    for (std::size_t i = 0; i < norms.size(); ++i) EXPECT_NEAR(norms[i], scalar_norms[i], 1e-13 * scalar_norms[i]);
  }
}

TEST(AdamW, GradScaleIsDividedOut) {
  // Gradients 1024 times larger with grad_scale 1024 (exact in binary) give the same bits.
  for (const double clip : {0.0, 1.0}) {
    TensorMap a = make_params(7), b = make_params(7);
    AdamW opt_a({.clip_norm = clip}, a), opt_b({.clip_norm = clip}, b);
    for (int s = 0; s < 3; ++s) {
      const TensorMap g = make_params(60 + static_cast<std::uint64_t>(s), 0.5);
      const TensorMap g_scaled = make_params(60 + static_cast<std::uint64_t>(s), 0.5 * 1024);
      const AdamW::StepResult ra = opt_a.step(a, g, 1e-2, 1.0);
      const AdamW::StepResult rb = opt_b.step(b, g_scaled, 1e-2, 1024.0);
      EXPECT_EQ(ra.grad_norm, rb.grad_norm);
      EXPECT_EQ(ra.clipped, rb.clipped);
    }
    for (const auto& [name, t] : a) {
      const auto x = t.span<const float>(), y = b.at(name).span<const float>();
      for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << name << "[" << i << "], clip " << clip;
    }
  }
}

TEST(AdamW, RefusesNonFiniteGradientsWithoutTouchingTheWeights) {
  TensorMap params = make_params(8);
  const TensorMap before = clone_all(params);
  TensorMap grads = make_params(9);
  grads.at("big").span<float>()[74'999] = std::numeric_limits<float>::quiet_NaN();
  AdamW opt({}, params);
  EXPECT_THROW(opt.step(params, grads, 0.1), Error);
  EXPECT_EQ(opt.steps(), 0);
  for (const auto& [name, t] : params)
    EXPECT_EQ(std::memcmp(t.raw(), before.at(name).raw(), t.nbytes()), 0) << name;
}

// The message of the orion::Error that fn throws, or "no error".
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(AdamW, MismatchedTensorsAreNamed) {
  TensorMap params = make_params(10);
  AdamW opt({}, params);
  TensorMap grads = make_params(11);
  grads.erase("b1");
  EXPECT_NE(error_of([&] { opt.step(params, grads, 0.1); }).find("gradient of 'b1' is missing"), std::string::npos);
  grads = make_params(11);
  grads["b1"] = Tensor(DType::f32, {20});
  EXPECT_NE(error_of([&] { opt.step(params, grads, 0.1); }).find("'b1' has shape [20]"), std::string::npos);
  grads = make_params(11);
  grads["extra"] = Tensor(DType::f32, {2});
  EXPECT_NE(error_of([&] { opt.step(params, grads, 0.1); }).find("'extra' is not a parameter"), std::string::npos);
  EXPECT_EQ(opt.steps(), 0);
}

TEST(AdamW, StateRoundTripsAndRestoreChecksShapes) {
  TensorMap params = make_params(12);
  AdamW a({}, params);
  for (int s = 0; s < 2; ++s) a.step(params, make_params(70 + static_cast<std::uint64_t>(s)), 1e-2);
  TensorMap saved = clone_all(a.state());
  TensorMap params_b = clone_all(params);
  AdamW b({}, params_b);
  b.restore(saved, a.steps());
  EXPECT_EQ(b.steps(), 2);
  const TensorMap g = make_params(80);
  a.step(params, g, 1e-2);
  b.step(params_b, g, 1e-2);
  for (const auto& [name, t] : params)
    EXPECT_EQ(std::memcmp(t.raw(), params_b.at(name).raw(), t.nbytes()), 0) << name;

  TensorMap bad = clone_all(saved);
  bad["v.w1"] = Tensor(DType::f32, {19, 37});
  EXPECT_NE(error_of([&] { b.restore(bad, 99); }).find("'v.w1' has shape [19, 37]"), std::string::npos);
  EXPECT_EQ(b.steps(), 3);  // unchanged by the failed restore
  bad = clone_all(saved);
  bad.erase("m.emb");
  EXPECT_THROW(b.restore(bad, 99), Error);
  bad = clone_all(saved);
  bad["m.nothing"] = Tensor(DType::f32, {1});
  EXPECT_THROW(b.restore(bad, 99), Error);
  // The refused restores changed nothing: b's moments are still a's.
  EXPECT_EQ(b.steps(), 3);
  const TensorMap sa = a.state(), sb = b.state();
  for (const auto& [name, t] : sa) EXPECT_EQ(std::memcmp(t.raw(), sb.at(name).raw(), t.nbytes()), 0) << name;
}

constexpr exec::cpu::Isa kIsas[] = {exec::cpu::Isa::scalar, exec::cpu::Isa::avx2, exec::cpu::Isa::avx512,
                                     exec::cpu::Isa::neon};

// The kernels straight, on every length up to a few vectors and at every alignment of a float,
// so that every lane of the vector loop and every tail length of each ISA meets values that
// round differently: zeros, subnormals, gradients whose squares underflow or overflow, moments
// of very different sizes. The update must give the portable loop's bits and write nothing past
// n; the sum of squares must not read past n.
TEST(AdamWKernels, EveryIsaMatchesThePortableLoopOnEveryLengthAndAlignment) {
  const detail::AdamWCoeffs c{.grad_mul = 0.37f, .beta1 = 0.9f, .one_minus_beta1 = 0.1f, .beta2 = 0.999f,
                              .one_minus_beta2 = 0.001f, .step_size = 3e-3f, .inv_sqrt_bc2 = 1.7f, .eps = 1e-8f,
                              .decay = 0.9999f};
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::denorm_min(), 1e-30f, -3e-20f, 1e20f, 65504.0f};
  const auto& scalar = detail::adamw_kernels(exec::cpu::Isa::scalar);
  Rng rng(21);
  int checked = 0;
  for (const exec::cpu::Isa isa : kIsas) {
    if (isa == exec::cpu::Isa::scalar || !exec::cpu::isa_supported(isa)) continue;
    const auto& k = detail::adamw_kernels(isa);
    for (std::size_t offset = 0; offset < 4; ++offset) {
      for (std::size_t n = 0; n <= 37; ++n) {
        const std::size_t size = offset + n + 8;
        std::vector<float> p(size), g(size), m(size), v(size);
        for (std::size_t i = 0; i < size; ++i) {
          p[i] = rng.normal();
          g[i] = i % 5 == 3 ? specials[i % 7] : rng.normal() * 0.1f;
          m[i] = rng.normal() * (i % 3 == 0 ? 1e-6f : 0.01f);
          v[i] = i % 4 == 1 ? 0.0f : std::fabs(rng.normal()) * (i % 3 == 2 ? 1e-12f : 1e-4f);
        }
        std::vector<float> p2 = p, m2 = m, v2 = v;
        const auto at = [&](std::vector<float>& x) { return x.data() + offset; };
        k.update(at(p), at(g), at(m), at(v), static_cast<std::int64_t>(n), c);
        scalar.update(at(p2), at(g), at(m2), at(v2), static_cast<std::int64_t>(n), c);
        // Beyond n, the copies still hold the inputs: an update that wrote past n differs there.
        for (std::size_t i = 0; i < size; ++i) {
          ASSERT_EQ(std::bit_cast<std::uint32_t>(p[i]), std::bit_cast<std::uint32_t>(p2[i]))
              << exec::cpu::isa_name(isa) << " n " << n << " offset " << offset << " p[" << i << "]";
          ASSERT_EQ(std::bit_cast<std::uint32_t>(m[i]), std::bit_cast<std::uint32_t>(m2[i])) << "m[" << i << "]";
          ASSERT_EQ(std::bit_cast<std::uint32_t>(v[i]), std::bit_cast<std::uint32_t>(v2[i])) << "v[" << i << "]";
        }
        // A huge value just past the end would dominate the sum if it were read.
        g[offset + n] = 1e30f;
        const double want = scalar.sum_squares(at(g), static_cast<std::int64_t>(n));
        ASSERT_NEAR(k.sum_squares(at(g), static_cast<std::int64_t>(n)), want, 1e-14 * want)
            << exec::cpu::isa_name(isa) << " n " << n << " offset " << offset;
      }
    }
    ++checked;
  }
  std::cout << checked << " vector ISAs checked against the portable loop\n";
}

// A non-finite value at every position of vectors of many lengths, for every ISA's loop: the
// main loop, the masked tail and the scalar remainder must all see it.
TEST(AllFinite, FindsASingleNanOrInfAnywhere) {
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::signaling_NaN()};
  for (const exec::cpu::Isa isa : kIsas) {
    if (!exec::cpu::isa_supported(isa)) continue;
    const auto& k = detail::adamw_kernels(isa);
    for (std::int64_t n = 1; n <= 70; ++n) {
      std::vector<float> x(static_cast<std::size_t>(n) + 1, 1.0f);
      x[static_cast<std::size_t>(n)] = specials[0];  // just past the end: must not be read
      x[0] = std::numeric_limits<float>::max();
      if (n > 1) x[1] = std::numeric_limits<float>::denorm_min();
      ASSERT_TRUE(k.all_finite(x.data(), n)) << exec::cpu::isa_name(isa) << " n " << n;
      for (std::int64_t at = 0; at < n; ++at)
        for (const float s : specials) {
          const float keep = x[static_cast<std::size_t>(at)];
          x[static_cast<std::size_t>(at)] = s;
          ASSERT_FALSE(k.all_finite(x.data(), n)) << exec::cpu::isa_name(isa) << " n " << n << " at " << at;
          x[static_cast<std::size_t>(at)] = keep;
        }
    }
  }
}

TEST(AllFinite, ChecksEveryTensorOfABindingOnAPoolOrNot) {
  ThreadPool pool(2);
  TensorMap b = make_params(13);
  Tensor half(DType::f16, {9});
  b.emplace("half", half);
  b.emplace("ints", Tensor(DType::i32, {4}));
  EXPECT_TRUE(all_finite(b));
  EXPECT_TRUE(all_finite(b, &pool));
  for (const std::string name : {"w1", "b1", "big", "emb", "ln.g"}) {
    auto x = b.at(name).span<float>();
    for (const std::size_t at : {std::size_t{0}, x.size() / 2, x.size() - 1}) {
      const float keep = x[at];
      x[at] = std::numeric_limits<float>::infinity();
      EXPECT_FALSE(all_finite(b)) << name << "[" << at << "]";
      EXPECT_FALSE(all_finite(b, &pool)) << name << "[" << at << "]";
      x[at] = keep;
    }
  }
  half.span<std::uint16_t>()[8] = 0x7c00;  // +inf in binary16
  EXPECT_FALSE(all_finite(b, &pool));
  half.span<std::uint16_t>()[8] = 0x7bff;  // 65504
  EXPECT_TRUE(all_finite(b, &pool));
  // A strided view is checked through its own elements only.
  Tensor big = b.at("big");
  b.clear();
  big.span<float>()[1] = std::numeric_limits<float>::quiet_NaN();  // row 0, column 1
  b.emplace("column0", big.slice(1, 0, 1));
  EXPECT_TRUE(all_finite(b));
  b.emplace("column1", big.slice(1, 1, 2));
  EXPECT_FALSE(all_finite(b));
}

}  // namespace
}  // namespace orion::train
