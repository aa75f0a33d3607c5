// decode_batch (engine/decoder.h) on the fast engine's sessions (FastSession::decode_batch):
// one token of each of several sessions of one model, at different positions, run together (each
// weight matrix read once for all rows by the gemv_*_columns kernels, each row's attention over
// its own cache), against each session decoding alone: the same logits bit for bit, step after
// step, and the caches left such that decoding alone afterwards goes on as if nothing had been
// batched. GPT-2, and Llama in Qwen3's form (grouped heads, q/k norms, biases, an explicit
// head_dim), each in f32, f16, q8 and q4. Sessions of other models or engines are not batched
// together.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/error.h"
#include "engine/batched_prefill_check.h"
#include "engine/fast/gpt2_fast.h"
#include "engine/fast/llama_fast.h"
#include "engine/graph_session.h"
#include "model/gpt2_test_config.h"
#include "model/llama_test_config.h"

namespace orion::engine {
namespace {

// Three sessions at different positions (prompts of 1, 5 and 11 tokens), decoded 4 steps
// together in `batched` and alone in `alone`. `source`: the model `model` was packed from.
template <class Session, class Model>
void expect_batch_matches_alone(std::shared_ptr<const Model> model, const model::CausalLm& source, std::int64_t vocab) {
  std::vector<std::unique_ptr<Session>> batched, alone;
  std::vector<std::vector<float>> last;
  const std::vector<std::size_t> prompts = {1, 5, 11};
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<std::int32_t> p = testing::spread_tokens(prompts[i] + 3 * i, vocab);
    const std::vector<std::int32_t> prompt(p.end() - static_cast<std::ptrdiff_t>(prompts[i]), p.end());
    batched.push_back(std::make_unique<Session>(model, 2));
    alone.push_back(std::make_unique<Session>(model, 2));
    last.push_back(batched.back()->prefill(prompt));
    alone.back()->prefill(prompt);
    // A prompt shorter than the batched prefill's minimum runs as one batched pass: the same
    // bits as feeding it a token at a time.
    Session stepped(model, 2);
    std::vector<float> logits;
    for (std::int32_t t : prompt) logits = stepped.decode(t);
    EXPECT_EQ(last.back(), logits) << "prompt of " << prompt.size();
    Session again(model, 2);
    again.prefill(prompt);
    EXPECT_EQ(stepped.decode(5), again.decode(5)) << "prompt of " << prompt.size();
  }
  std::vector<Decoder*> sessions;
  for (auto& s : batched) sessions.push_back(s.get());
  ASSERT_TRUE(can_decode_batch(sessions));
  for (int step = 0; step < 4; ++step) {
    std::vector<std::int32_t> tokens;
    for (std::size_t i = 0; i < sessions.size(); ++i) tokens.push_back(static_cast<std::int32_t>((step * 37 + i * 11 + 3) % vocab));
    std::vector<std::vector<float>> together;
    decode_batch(sessions, tokens, together);
    ASSERT_EQ(together.size(), sessions.size());
    for (std::size_t i = 0; i < sessions.size(); ++i) {
      const std::vector<float> one = alone[i]->decode(tokens[i]);
      EXPECT_EQ(together[i], one) << "step " << step << " session " << i;
      EXPECT_EQ(batched[i]->position(), alone[i]->position());
    }
  }
  // Alone again from the batched caches.
  for (std::size_t i = 0; i < sessions.size(); ++i)
    EXPECT_EQ(batched[i]->decode(7), alone[i]->decode(7)) << i;
  // One model's sessions only; the tokens checked like decode()'s.
  const std::vector<std::int32_t> bad = {0, static_cast<std::int32_t>(vocab), 1};
  std::vector<std::vector<float>> out;
  EXPECT_THROW(decode_batch(sessions, bad, out), Error);
  // Another model's session, or the graph session of this one, does not join the batch.
  Session other(std::make_shared<const Model>(*model), 2);
  GraphSession graph(source);
  for (Decoder* stranger : std::initializer_list<Decoder*>{&other, &graph}) {
    std::vector<Decoder*> mixed = {sessions[0], stranger};
    EXPECT_FALSE(can_decode_batch(mixed));
    EXPECT_THROW(decode_batch(mixed, std::vector<std::int32_t>{1, 2}, out), Error);
  }
  EXPECT_FALSE(can_decode_batch(std::span(sessions).first(1)));
}

const model::WeightDType kFormats[] = {model::WeightDType::f32, model::WeightDType::f16, model::WeightDType::q8,
                                       model::WeightDType::q4};

TEST(FastDecodeBatch, Gpt2RowsDecodedTogetherEqualEachAlone) {
  const model::Gpt2Config c = model::testing::small_gpt2_config({2, 64, 4, 320, 64});
  const model::Gpt2Model m = model::Gpt2Model::from_weights(c, model::gpt2_init_weights(c, 5), "m");
  for (model::WeightDType dtype : kFormats) {
    SCOPED_TRACE(model::weight_dtype_name(dtype));
    auto fast = std::make_shared<const Gpt2FastModel>(m, dtype);
    expect_batch_matches_alone<Gpt2FastSession>(fast, m, c.vocab_size);
  }
}

// q8's blocks and q4's groups take whole multiples of 32 columns: a width of 64 for those.
TEST(FastDecodeBatch, Qwen3RowsDecodedTogetherEqualEachAlone) {
  for (model::WeightDType dtype : kFormats) {
    SCOPED_TRACE(model::weight_dtype_name(dtype));
    const bool blocks = dtype == model::WeightDType::q8 || dtype == model::WeightDType::q4;
    model::LlamaConfig c = model::testing::small_llama_config({2, blocks ? 64 : 48, 4, 2, 96, 300, true, 64});
    model::testing::make_family(c, "qwen3", 16, true);
    const model::LlamaModel m = model::LlamaModel::from_weights(c, model::testing::llama_large_weights(c), "m");
    auto fast = std::make_shared<const LlamaFastModel>(m, dtype);
    expect_batch_matches_alone<LlamaFastSession>(fast, m, c.vocab_size);
  }
}

// Each row steps its own session's Gated DeltaNet state.
TEST(FastDecodeBatch, Qwen3_5RowsDecodedTogetherEqualEachAlone) {
  model::LlamaConfig c = model::testing::small_llama_config({2, 64, 4, 2, 96, 300, true, 64});
  model::testing::make_family(c, "qwen3_5_text", 16);
  const model::LlamaModel m = model::LlamaModel::from_weights(c, model::testing::llama_large_weights(c), "m");
  expect_batch_matches_alone<LlamaFastSession>(std::make_shared<const LlamaFastModel>(m, model::WeightDType::q8), m, c.vocab_size);
}

TEST(FastDecodeBatch, Gemma3RowsDecodedTogetherEqualEachAlone) {
  for (model::WeightDType dtype : {model::WeightDType::f32, model::WeightDType::q8}) {
    SCOPED_TRACE(model::weight_dtype_name(dtype));
    model::LlamaConfig c = model::testing::small_llama_config({2, 64, 4, 2, 96, 300, true, 64});
    model::testing::make_family(c, "gemma3_text", 16);
    const model::LlamaModel m = model::LlamaModel::from_weights(c, model::testing::llama_large_weights(c), "m");
    expect_batch_matches_alone<LlamaFastSession>(std::make_shared<const LlamaFastModel>(m, dtype), m, c.vocab_size);
  }
}

}  // namespace
}  // namespace orion::engine
