// The fast decoder against the graph executor (the reference). For f16 and q8 the reference
// runs on the weights as the fast path stores them (rounded to fp16, or quantized and
// dequantized), so that both compute the same function: f32 and f16 differ only in the order
// of additions (1e-5 relative, on every GEMV instruction set this CPU has); q8 also quantises
// each product's activation to int8 (gemv.h), which the reference does not, so it is held to
// kQ8ActivationTol there, and to the scalar path bit for bit on every instruction set.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "model/rel_error.h"
#include "model/stored_weights_as_f32.h"
#include "core/error.h"
#include "core/random.h"
#include "model/gpt2_fast.h"
#include "model/graph_session.h"

namespace orion::model {
namespace {

using testing::rel_error;
using testing::model_stored_as_f32;
using testing::kQ8ActivationTol;

using exec::cpu::Isa;

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
  const Gpt2Model ref_model = model_stored_as_f32(c, w, k.dtype);
  auto fast = std::make_shared<const Gpt2FastModel>(Gpt2Model::from_weights(c, w, "fast"), k.dtype);
  std::vector<std::int32_t> tokens;
  for (int i = 0; i < 20; ++i) tokens.push_back(static_cast<std::int32_t>((i * 37 + 5) % k.vocab));
  const bool q8 = k.dtype == WeightDType::q8;
  const double tol = q8 ? kQ8ActivationTol : 1e-5;
  std::vector<std::vector<float>> scalar_logits;  // q8: every ISA must give these bits
  double worst = 0;
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (!exec::cpu::isa_supported(isa)) continue;
    for (int threads : {1, 2}) {
      GraphSession ref(ref_model);
      Gpt2FastSession s(fast, threads, isa);
      std::vector<std::vector<float>> logits;
      // A prompt of 5, then 15 decode steps.
      const auto prompt = std::span(tokens).first(5);
      logits.push_back(s.prefill(prompt));
      EXPECT_LT(rel_error(logits.back(), ref.prefill(prompt)), tol) << exec::cpu::isa_name(isa);
      for (std::size_t t = 5; t < tokens.size(); ++t) {
        logits.push_back(s.decode(tokens[t]));
        const double e = rel_error(logits.back(), ref.decode(tokens[t]));
        worst = std::max(worst, e);
        ASSERT_LT(e, tol) << k.name << " " << exec::cpu::isa_name(isa) << " threads " << threads << " position " << t;
      }
      EXPECT_EQ(s.position(), 20);
      if (!q8) continue;
      if (scalar_logits.empty()) scalar_logits = logits;
      EXPECT_TRUE(logits == scalar_logits) << exec::cpu::isa_name(isa) << " threads " << threads << ": not the scalar path's bits";
    }
  }
  std::cout << k.name << ": largest relative error of the logits against the reference " << worst << "\n";
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
  GraphSession ref(m);
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
