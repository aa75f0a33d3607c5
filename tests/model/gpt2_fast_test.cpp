// The fast decoder against the graph executor (the reference). For f16 and q8 the reference
// runs on the weights as the fast path stores them (rounded to fp16, or quantized and
// dequantized), so that both compute the same function and only the order of additions
// differs: 1e-5 relative for every format, on every GEMV instruction set this CPU has.
#include <gtest/gtest.h>

#include <cmath>

#include "model/rel_error.h"
#include "core/error.h"
#include "core/half.h"
#include "core/random.h"
#include "exec/cpu/quantize.h"
#include "model/gpt2_fast.h"
#include "model/gpt2_session.h"

namespace orion::model {
namespace {

using testing::rel_error;

using exec::cpu::Isa;

// The weight as the fast path stores it, in the model's own layout.
Tensor effective(const Tensor& w, bool in_out, WeightDType dtype) {
  Tensor rows = in_out ? w.permute(std::vector<int>{1, 0}).contiguous() : w.clone();
  auto v = rows.span<float>();
  if (dtype == WeightDType::f16) round_to_half(v);
  if (dtype == WeightDType::q8) {
    std::vector<std::int8_t> q(v.size());
    std::vector<float> s(v.size() / kQ8Block);
    exec::cpu::quantize_q8(v.data(), rows.dim(0), rows.dim(1), kQ8Block, q.data(), s.data());
    exec::cpu::dequantize_q8(q.data(), s.data(), rows.dim(0), rows.dim(1), kQ8Block, v.data());
  }
  return in_out ? rows.permute(std::vector<int>{1, 0}).contiguous() : rows;
}

Gpt2Model reference_for(const Gpt2Config& c, const exec::Bindings& w, WeightDType dtype) {
  exec::Bindings eff;
  for (const auto& [name, t] : w) {
    const bool matrix = t.rank() == 2 && name != "wpe.weight";
    eff.emplace(name, matrix ? effective(t, name != "wte.weight", dtype) : t);
  }
  return Gpt2Model::from_weights(c, std::move(eff), "reference");
}

struct Case {
  const char* name;
  std::int64_t layers, dim, heads, hidden, vocab;
  WeightDType dtype;
};

class FastDecoder : public ::testing::TestWithParam<Case> {};

TEST_P(FastDecoder, MatchesTheGraphExecutorOnEveryIsa) {
  const Case k = GetParam();
  Gpt2Config c;
  c.n_layer = k.layers; c.n_embd = k.dim; c.n_head = k.heads; c.n_inner = k.hidden;
  c.n_positions = 48; c.vocab_size = k.vocab; c.eos_token_id = 0;
  // Weights far larger than GPT-2's 0.02, so that activations are of order 1 and every
  // nonlinearity matters to the logits (with tiny weights, a wrong GELU constant would hide).
  exec::Bindings w = gpt2_init_weights(c, 11);
  Rng rng(12);
  for (auto& [name, t] : w)
    if (t.rank() == 2) rng.fill_normal(t.span<float>(), 0.0f, 0.25f);
    else if (name.ends_with(".bias")) rng.fill_normal(t.span<float>(), 0.0f, 0.1f);
  const Gpt2Model ref_model = reference_for(c, w, k.dtype);
  auto fast = std::make_shared<const Gpt2FastModel>(Gpt2Model::from_weights(c, w, "fast"), k.dtype);
  std::vector<std::int32_t> tokens;
  for (int i = 0; i < 20; ++i) tokens.push_back(static_cast<std::int32_t>((i * 37 + 5) % k.vocab));
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (!exec::cpu::isa_supported(isa)) continue;
    for (int threads : {1, 2}) {
      Gpt2Session ref(ref_model);
      Gpt2FastSession s(fast, threads, isa);
      // A prompt of 5, then 15 decode steps.
      const auto prompt = std::span(tokens).first(5);
      EXPECT_LT(rel_error(s.prefill(prompt), ref.prefill(prompt)), 1e-5) << exec::cpu::isa_name(isa);
      for (std::size_t t = 5; t < tokens.size(); ++t)
        ASSERT_LT(rel_error(s.decode(tokens[t]), ref.decode(tokens[t])), 1e-5)
            << k.name << " " << exec::cpu::isa_name(isa) << " threads " << threads << " position " << t;
      EXPECT_EQ(s.position(), 20);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, FastDecoder,
    ::testing::Values(Case{"f32_odd", 2, 40, 5, 72, 101, WeightDType::f32},
                      Case{"f16_odd", 2, 40, 5, 72, 101, WeightDType::f16},
                      Case{"q8", 2, 64, 4, 96, 77, WeightDType::q8},
                      Case{"f32_wide", 1, 96, 3, 0, 300, WeightDType::f32}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(FastDecoder, QuantizationKeepsTheLogitsClose) {
  // Against the f32 model itself (not the dequantized one): the error the formats cost.
  Gpt2Config c;
  c.n_layer = 2; c.n_embd = 128; c.n_head = 4; c.n_positions = 32; c.vocab_size = 500; c.eos_token_id = 0;
  const Gpt2Model m = Gpt2Model::from_weights(c, gpt2_init_weights(c, 3), "m");
  Gpt2Session ref(m);
  const std::vector<std::int32_t> prompt{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<float> want = ref.prefill(prompt);
  for (auto [dtype, tol] : {std::pair{WeightDType::f16, 2e-3}, std::pair{WeightDType::q8, 3e-2}}) {
    Gpt2FastSession s(std::make_shared<const Gpt2FastModel>(m, dtype));
    EXPECT_LT(rel_error(s.prefill(prompt), want), tol) << weight_dtype_name(dtype);
  }
}

TEST(FastDecoder, RefusesOverflowAndForeignTokens) {
  Gpt2Config c;
  c.n_layer = 1; c.n_embd = 32; c.n_head = 2; c.n_positions = 4; c.vocab_size = 10; c.eos_token_id = 0;
  Gpt2FastSession s(std::make_shared<const Gpt2FastModel>(Gpt2Model::from_weights(c, gpt2_init_weights(c, 1), "m"), WeightDType::f32));
  EXPECT_THROW(s.decode(10), Error);
  EXPECT_THROW(s.decode(-1), Error);
  const std::vector<std::int32_t> four{1, 2, 3, 4};
  s.prefill(four);
  EXPECT_THROW(s.decode(1), Error);
  s.reset();
  EXPECT_NO_THROW(s.decode(1));
}

}  // namespace
}  // namespace orion::model
