// The fast engine's batched prefill (matrix products through the BLAS) against its
// token-by-token path (step(), itself held to the graph executor in gpt2_fast_test.cpp): the
// logits of the prompt's last token, then those of decode steps that read the K and V rows the
// prompt left in the cache. Both paths compute in f32 on the same stored weights (f16 and q8
// are expanded exactly to f32), so only the order of additions differs: 1e-5 relative for
// every format. q8's GEMVs also quantise their activations (gemv.h), which the batched
// products do not (the head, a GEMV, does): its reference is the token-by-token path of an
// f32 model of the dequantised weights, held to kQ8ActivationTol (the batched machinery
// itself is the same as f16's, which is held to 1e-5). Prompt lengths reach every tail of the attention's query blocks (128).
#include <gtest/gtest.h>

#include <string>

#include "engine/batched_prefill_check.h"
#include "model/rel_error.h"
#include "model/stored_weights_as_f32.h"
#include "core/error.h"
#include "core/random.h"
#include "engine/fast/gpt2_fast.h"
#include "engine/graph_session.h"

namespace orion::engine {
namespace {

using model::testing::rel_error;

using model::testing::kAdditionOrderTol;

model::Gpt2Config small_config(std::int64_t dim, std::int64_t heads, std::int64_t hidden) {
  model::Gpt2Config c;
  c.n_layer = 2; c.n_embd = dim; c.n_head = heads; c.n_inner = hidden;
  c.n_positions = 300; c.vocab_size = 103; c.eos_token_id = 0;
  return c;
}

// Weights far larger than GPT-2's 0.02, so that activations are of order 1 and every
// nonlinearity matters to the logits.
TensorMap big_weights(const model::Gpt2Config& c) {
  TensorMap w = model::gpt2_init_weights(c, 21);
  Rng rng(22);
  for (auto& [name, t] : w)
    if (t.rank() == 2) rng.fill_normal(t.span<float>(), 0.0f, 0.25f);
    else if (name.ends_with(".bias")) rng.fill_normal(t.span<float>(), 0.0f, 0.1f);
  return w;
}

struct Gpt2PrefillCase {
  const char* name;
  std::int64_t dim, heads, hidden;
  model::WeightDType dtype;
};

class BatchedPrefill : public ::testing::TestWithParam<Gpt2PrefillCase> {};

TEST_P(BatchedPrefill, MatchesTokenByTokenThenDecodesTheSame) {
  const Gpt2PrefillCase k = GetParam();
  const model::Gpt2Config c = small_config(k.dim, k.heads, k.hidden);
  const TensorMap w = big_weights(c);
  auto fast = std::make_shared<const Gpt2FastModel>(model::Gpt2Model::from_weights(c, w, "m"), k.dtype);
  const bool q8 = k.dtype == model::WeightDType::q8;
  auto ref_model = q8 ? std::make_shared<const Gpt2FastModel>(model::testing::model_stored_as_f32(c, w, k.dtype), model::WeightDType::f32) : fast;
  const double tol = q8 ? model::testing::kQ8ActivationTol : kAdditionOrderTol;
  testing::expect_batched_prefill_matches<Gpt2FastSession>(fast, ref_model, c.vocab_size, tol, k.name);
}

INSTANTIATE_TEST_SUITE_P(
    Formats, BatchedPrefill,
    ::testing::Values(Gpt2PrefillCase{"f32", 48, 3, 72, model::WeightDType::f32},
                      Gpt2PrefillCase{"f16", 48, 3, 72, model::WeightDType::f16},
                      // q8 blocks are 32 weights: rows of 64 and 96
                      Gpt2PrefillCase{"q8", 64, 4, 96, model::WeightDType::q8}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(BatchedPrefill, ContinuesAfterCachedTokens) {
  const model::Gpt2Config c = small_config(48, 3, 0);
  auto fast = std::make_shared<const Gpt2FastModel>(model::Gpt2Model::from_weights(c, big_weights(c), "m"), model::WeightDType::f32);
  testing::expect_batched_pieces_match<Gpt2FastSession>(fast, c.vocab_size, kAdditionOrderTol);
}

TEST(BatchedPrefill, MatchesTheGraphExecutor) {
  // Independently of step(): the reference executor on the same f32 model.
  const model::Gpt2Config c = small_config(48, 3, 72);
  const model::Gpt2Model model = model::Gpt2Model::from_weights(c, big_weights(c), "m");
  GraphSession ref(model);
  Gpt2FastSession s(std::make_shared<const Gpt2FastModel>(model, model::WeightDType::f32), 2);
  const auto prompt = testing::spread_tokens(150, c.vocab_size);
  EXPECT_LT(rel_error(s.prefill(prompt), ref.prefill(prompt)), kAdditionOrderTol);
  EXPECT_LT(rel_error(s.decode(7), ref.decode(7)), kAdditionOrderTol);
}

TEST(BatchedPrefill, CountsTheFlopsOfItsProducts) {
  // dim 48, hidden 72, 2 layers, vocab 103. Per token the linears take
  // 2 (48 * 144 + 48 * 48 + 2 * 48 * 72) = 32256 flops a layer, the head 2 * 48 * 103 = 9888.
  const model::Gpt2Config c = small_config(48, 3, 72);
  // 5 tokens, empty cache: one block of 5 queries x 5 keys; Q K^T and S V 2 * 25 * 48 each.
  EXPECT_EQ(Gpt2FastSession::batched_prefill_flops(c, 0, 5), 2 * (5 * 32256 + 2 * 2 * 25 * 48) + 9888);
  // 129 tokens after 130 cached: blocks of 128 queries x 258 keys and 1 query x 259 keys.
  EXPECT_EQ(Gpt2FastSession::batched_prefill_flops(c, 130, 129),
            2 * (129 * 32256 + 2 * 2 * (128 * 258 + 259) * 48) + 9888);
}

TEST(BatchedPrefill, RefusesAThresholdBelowOne) {
  const model::Gpt2Config c = small_config(48, 3, 0);
  Gpt2FastSession s(std::make_shared<const Gpt2FastModel>(model::Gpt2Model::from_weights(c, model::gpt2_init_weights(c, 1), "m"), model::WeightDType::f32));
  EXPECT_THROW(s.set_batched_prefill_min(0), Error);
  EXPECT_GE(s.batched_prefill_min(), 1);
}

}  // namespace
}  // namespace orion::engine
