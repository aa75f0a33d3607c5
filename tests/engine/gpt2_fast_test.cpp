// The fast decoder against the graph executor (the reference). For f16 and q8 the reference
// runs on the weights as the fast path stores them (rounded to fp16, or quantized and
// dequantized), so that both compute the same function: f32 and f16 differ only in the order
// of additions (1e-5 relative, on every GEMV instruction set this CPU has); q8 also quantises
// each product's activation to int8 (gemv.h), which the reference does not, so it is held to
// kQ8ActivationTol there, and to the scalar path bit for bit on every instruction set.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "engine/fast_decoder_check.h"
#include "model/rel_error.h"
#include "model/stored_weights_as_f32.h"
#include "core/error.h"
#include "core/random.h"
#include "engine/fast/gpt2_fast.h"
#include "engine/graph_session.h"

namespace orion::engine {
namespace {

using model::testing::rel_error;
using model::testing::model_stored_as_f32;
using model::testing::kQ8ActivationTol;

using exec::cpu::Isa;

struct Gpt2FastCase {
  const char* name;
  std::int64_t layers, dim, heads, hidden, vocab;
  model::WeightDType dtype;
};

class FastDecoder : public ::testing::TestWithParam<Gpt2FastCase> {};

TEST_P(FastDecoder, MatchesTheGraphExecutorOnEveryIsa) {
  const Gpt2FastCase k = GetParam();
  model::Gpt2Config c;
  c.n_layer = k.layers; c.n_embd = k.dim; c.n_head = k.heads; c.n_inner = k.hidden;
  c.n_positions = 48; c.vocab_size = k.vocab; c.eos_token_id = 0;
  // Weights far larger than GPT-2's 0.02, so that activations are of order 1 and every
  // nonlinearity matters to the logits (with tiny weights, a wrong GELU constant would hide).
  TensorMap w = model::gpt2_init_weights(c, 11);
  Rng rng(12);
  for (auto& [name, t] : w)
    if (t.rank() == 2) rng.fill_normal(t.span<float>(), 0.0f, 0.25f);
    else if (name.ends_with(".bias")) rng.fill_normal(t.span<float>(), 0.0f, 0.1f);
  const model::Gpt2Model ref_model = model_stored_as_f32(c, w, k.dtype);
  auto fast = std::make_shared<const Gpt2FastModel>(model::Gpt2Model::from_weights(c, w, "fast"), k.dtype);
  // A prompt of 5, then 15 decode steps.
  testing::expect_fast_matches_reference(
      ref_model, [&](int threads, Isa isa) { return std::make_unique<Gpt2FastSession>(fast, threads, isa); }, 20, 5, k.dtype,
      k.name);
}

INSTANTIATE_TEST_SUITE_P(
    Formats, FastDecoder,
    ::testing::Values(Gpt2FastCase{"f32_odd", 2, 40, 5, 72, 101, model::WeightDType::f32},
                      Gpt2FastCase{"f16_odd", 2, 40, 5, 72, 101, model::WeightDType::f16},
                      Gpt2FastCase{"q8", 2, 64, 4, 96, 77, model::WeightDType::q8},
                      Gpt2FastCase{"f32_wide", 1, 96, 3, 0, 300, model::WeightDType::f32}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(FastDecoder, QuantizationKeepsTheLogitsClose) {
  model::Gpt2Config c;
  c.n_layer = 2; c.n_embd = 128; c.n_head = 4; c.n_positions = 32; c.vocab_size = 500; c.eos_token_id = 0;
  const model::Gpt2Model m = model::Gpt2Model::from_weights(c, model::gpt2_init_weights(c, 3), "m");
  testing::expect_quantization_keeps_logits_close(
      m, [&](model::WeightDType dtype) { return std::make_unique<Gpt2FastSession>(std::make_shared<const Gpt2FastModel>(m, dtype)); });
}

TEST(FastDecoder, RefusesOverflowAndForeignTokens) {
  model::Gpt2Config c;
  c.n_layer = 1; c.n_embd = 32; c.n_head = 2; c.n_positions = 4; c.vocab_size = 10; c.eos_token_id = 0;
  Gpt2FastSession s(std::make_shared<const Gpt2FastModel>(model::Gpt2Model::from_weights(c, model::gpt2_init_weights(c, 1), "m"), model::WeightDType::f32));
  testing::expect_refuses_overflow_and_foreign_tokens(s);
}

}  // namespace
}  // namespace orion::engine
