// Llama's batched prefill (matrix products through the BLAS) against its token-by-token path
// (step(), itself held to the graph executor in llama_fast_test.cpp), as
// gpt2_fast_prefill_test.cpp holds GPT-2's: the logits of the prompt's last token, then those of
// decode steps that read the rotated K and the V rows the prompt left in the cache. Both paths
// compute in f32 on the same stored weights (f16 and q8 expanded exactly to f32), so only the
// order of additions differs: 1e-5 relative. q8's GEMVs also quantise their activations, which
// the batched products do not: its reference is the token-by-token path of an f32 model of the
// dequantised weights, held to kQ8ActivationTol. Grouped and ungrouped heads, tied and untied
// heads, odd sizes; prompt lengths reach every tail of the attention's query blocks (128).
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "engine/batched_prefill_check.h"
#include "engine/graph_session.h"
#include "engine/fast/llama_fast.h"
#include "model/llama_test_config.h"
#include "model/rel_error.h"
#include "model/stored_weights_as_f32.h"

namespace orion::engine {
namespace {

using model::testing::rel_error;

using model::testing::kAdditionOrderTol;

struct LlamaPrefillCase {
  const char* name;
  std::int64_t dim, heads, kv_heads, hidden, vocab;
  bool tied;
  model::WeightDType dtype;
  const char* family = "llama";  // model::testing::make_family
  std::int64_t head_dim = 0;
  bool bias = false;
  double tol = 0;  // > 0: instead of the format's
};

model::LlamaConfig config_of(const LlamaPrefillCase& k) {
  model::LlamaConfig c = model::testing::small_llama_config({2, k.dim, k.heads, k.kv_heads, k.hidden, k.vocab, k.tied, 300});
  model::testing::make_family(c, k.family, k.head_dim, k.bias);
  return c;
}

using model::testing::llama_large_weights;

class LlamaBatchedPrefill : public ::testing::TestWithParam<LlamaPrefillCase> {};

TEST_P(LlamaBatchedPrefill, MatchesTokenByTokenThenDecodesTheSame) {
  const LlamaPrefillCase k = GetParam();
  const model::LlamaConfig c = config_of(k);
  const TensorMap w = llama_large_weights(c);
  auto fast = std::make_shared<const LlamaFastModel>(model::LlamaModel::from_weights(c, w, "m"), k.dtype);
  const bool q8 = k.dtype == model::WeightDType::q8;
  auto ref_model = q8 ? std::make_shared<const LlamaFastModel>(model::testing::llama_stored_as_f32(c, w, k.dtype), model::WeightDType::f32) : fast;
  const double tol = k.tol > 0 ? k.tol : q8 ? model::testing::kQ8ActivationTol : kAdditionOrderTol;
  testing::expect_batched_prefill_matches<LlamaFastSession>(fast, ref_model, c.vocab_size, tol, k.name);
}

INSTANTIATE_TEST_SUITE_P(
    Formats, LlamaBatchedPrefill,
    ::testing::Values(LlamaPrefillCase{"f32_odd_mqa_untied", 40, 5, 1, 67, 101, false, model::WeightDType::f32},
                      LlamaPrefillCase{"f32_gqa_tied", 48, 6, 2, 100, 77, true, model::WeightDType::f32},
                      LlamaPrefillCase{"f32_mha_untied", 36, 3, 3, 53, 300, false, model::WeightDType::f32},
                      LlamaPrefillCase{"f16_odd_mha_tied", 40, 5, 5, 67, 101, true, model::WeightDType::f16},
                      LlamaPrefillCase{"f16_gqa_untied", 48, 6, 3, 100, 77, false, model::WeightDType::f16},
                      // q8 blocks are 32 weights: rows of 64 and 96
                      LlamaPrefillCase{"q8_gqa_untied", 64, 4, 2, 96, 77, false, model::WeightDType::q8},
                      LlamaPrefillCase{"q8_mha_tied", 64, 8, 8, 128, 50, true, model::WeightDType::q8},
                      LlamaPrefillCase{"f32_qwen3_head_dim", 40, 4, 2, 67, 101, true, model::WeightDType::f32, "qwen3", 14},
                      LlamaPrefillCase{"q8_qwen2_bias", 64, 4, 2, 96, 77, true, model::WeightDType::q8, "qwen2"},
                      LlamaPrefillCase{"f16_llama_bias_rope3", 48, 6, 3, 100, 77, false, model::WeightDType::f16, "llama", 0, true},
                      LlamaPrefillCase{"f32_gemma3", 48, 4, 2, 100, 77, true, model::WeightDType::f32, "gemma3_text", 16},
                      LlamaPrefillCase{"q8_gemma3_mqa", 64, 4, 1, 96, 77, true, model::WeightDType::q8, "gemma3_text", 32},
                      // The recurrent state carries the products' rounding (sgemm's against the
                      // GEMV's) from token to token.
                      LlamaPrefillCase{"f32_qwen3_5", 48, 4, 2, 100, 77, true, model::WeightDType::f32, "qwen3_5_text", 16, false, 2e-4}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

LlamaFastSession f32_session(const model::LlamaConfig& c, int threads) {
  return LlamaFastSession(std::make_shared<const LlamaFastModel>(model::LlamaModel::from_weights(c, llama_large_weights(c), "m"), model::WeightDType::f32),
                          threads);
}

TEST(LlamaBatchedPrefill, ContinuesAfterCachedTokens) {
  const model::LlamaConfig c = config_of({"m", 40, 5, 1, 67, 101, false, model::WeightDType::f32});
  auto fast = std::make_shared<const LlamaFastModel>(model::LlamaModel::from_weights(c, llama_large_weights(c), "m"), model::WeightDType::f32);
  testing::expect_batched_pieces_match<LlamaFastSession>(fast, c.vocab_size, kAdditionOrderTol);
}

TEST(LlamaBatchedPrefill, ThresholdPicksThePath) {
  // Below the threshold the prompt runs token by token: the reference's bits exactly. At it,
  // batched: the same logits to rounding.
  const model::LlamaConfig c = config_of({"m", 48, 6, 2, 100, 77, true, model::WeightDType::f32});
  auto fast = std::make_shared<const LlamaFastModel>(model::LlamaModel::from_weights(c, llama_large_weights(c), "m"), model::WeightDType::f32);
  const auto tokens = testing::spread_tokens(20, c.vocab_size);
  for (std::size_t T : {15, 16}) {
    LlamaFastSession ref(fast, 2), s(fast, 2);
    ref.set_batched_prefill_min(1'000'000);
    ASSERT_EQ(s.batched_prefill_min(), 16);
    const auto prompt = std::span(tokens).first(T);
    const auto got = s.prefill(prompt), want = ref.prefill(prompt);
    if (T < 16) EXPECT_EQ(got, want);
    else EXPECT_LT(rel_error(got, want), kAdditionOrderTol);
  }
}

TEST(LlamaBatchedPrefill, MatchesTheGraphExecutor) {
  // Independently of step(): the reference executor on the same f32 model.
  const model::LlamaConfig c = config_of({"m", 48, 6, 2, 100, 77, false, model::WeightDType::f32});
  const model::LlamaModel model = model::LlamaModel::from_weights(c, llama_large_weights(c), "m");
  GraphSession ref(model);
  LlamaFastSession s(std::make_shared<const LlamaFastModel>(model, model::WeightDType::f32), 2);
  const auto prompt = testing::spread_tokens(150, c.vocab_size);
  EXPECT_LT(rel_error(s.prefill(prompt), ref.prefill(prompt)), kAdditionOrderTol);
  EXPECT_LT(rel_error(s.decode(7), ref.decode(7)), kAdditionOrderTol);
}

TEST(LlamaBatchedPrefill, CountsTheFlopsOfItsProducts) {
  // dim 40, 5 heads of 8, 1 key/value head, hidden 67, 2 layers, vocab 101. Per token the
  // linears take 2 (40 * (40 + 16) + 40 * 40 + 40 * 134 + 67 * 40) = 23760 flops a layer, the
  // head 2 * 40 * 101 = 8080.
  const model::LlamaConfig c = config_of({"m", 40, 5, 1, 67, 101, false, model::WeightDType::f32});
  // 5 tokens, empty cache: one block of 5 queries x 5 keys; Q K^T and S V 2 * 25 * 40 each.
  EXPECT_EQ(LlamaFastSession::batched_prefill_flops(c, 0, 5), 2 * (5 * 23760 + 2 * 2 * 25 * 40) + 8080);
  // 129 tokens after 130 cached: blocks of 128 queries x 258 keys and 1 query x 259 keys.
  EXPECT_EQ(LlamaFastSession::batched_prefill_flops(c, 130, 129), 2 * (129 * 23760 + 2 * 2 * (128 * 258 + 259) * 40) + 8080);
}

TEST(LlamaBatchedPrefill, RefusesAThresholdBelowOne) {
  const model::LlamaConfig c = config_of({"m", 40, 5, 1, 67, 101, false, model::WeightDType::f32});
  LlamaFastSession s = f32_session(c, 1);
  EXPECT_THROW(s.set_batched_prefill_min(0), Error);
  EXPECT_GE(s.batched_prefill_min(), 1);
}

}  // namespace
}  // namespace orion::engine
