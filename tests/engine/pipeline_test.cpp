// Pipeline-parallel decoding (engine/pipeline.h) with the ranks as threads
// (tests/dist/thread_collective.h): each stage's model is built from only its part of the weights,
// and the sessions through 1, 2 and 3 stages give the very logits of one fast session over the
// whole model, for prompts on each of prefill's paths (one token, a short batch, the BLAS), decode
// steps, two sessions taking turns, and a reset. The MPI transport runs the same under mpirun in
// tests/cli/data_parallel_cli_test.cpp.
#include <gtest/gtest.h>

#include <thread>

#include "core/error.h"
#include "dist/thread_collective.h"
#include "engine/fast/fast_prefill.h"
#include "engine/pipeline.h"
#include "model/llama_test_config.h"

namespace orion::engine {
namespace {

using test::ThreadJob;
using test::ThreadRank;

TEST(PipelineStages, SplitTheLayersContiguouslyTheFirstOnesLonger) {
  const LayerRange a = pipeline_stage_range(7, 3, 0), b = pipeline_stage_range(7, 3, 1), c = pipeline_stage_range(7, 3, 2);
  EXPECT_EQ(a.first, 0);
  EXPECT_EQ(a.last, 3);
  EXPECT_EQ(b.first, 3);
  EXPECT_EQ(b.last, 5);
  EXPECT_EQ(c.first, 5);
  EXPECT_EQ(c.last, 7);
  EXPECT_THROW(pipeline_stage_range(2, 3, 0), Error);
}

TEST(PipelineStages, ReadOnlyTheirLayersTheEmbeddingFirstAndTheHeadLast) {
  model::LlamaConfig c = model::testing::small_llama_config({4, 32, 4, 2, 48, 50, false, 32});
  const model::ParamFilter first = pipeline_stage_params(c, {0, 2}), last = pipeline_stage_params(c, {2, 4});
  EXPECT_TRUE(first("model.embed_tokens.weight"));
  EXPECT_TRUE(first("model.layers.1.mlp.down_proj.weight"));
  EXPECT_FALSE(first("model.layers.2.mlp.down_proj.weight"));
  EXPECT_FALSE(first("model.norm.weight"));
  EXPECT_FALSE(first("lm_head.weight"));
  EXPECT_FALSE(last("model.embed_tokens.weight"));
  EXPECT_TRUE(last("model.layers.3.self_attn.q_proj.weight"));
  EXPECT_FALSE(last("model.layers.1.self_attn.q_proj.weight"));
  EXPECT_TRUE(last("lm_head.weight"));
  EXPECT_TRUE(last("model.norm.weight"));
  c.tie_word_embeddings = true;  // the last stage's head is the embedding
  EXPECT_TRUE(pipeline_stage_params(c, {2, 4})("model.embed_tokens.weight"));
}

// Logits of every call of a script of prefills over two sessions and resets.
using Logits = std::vector<std::vector<float>>;
Logits run_script(const std::function<std::unique_ptr<Decoder>()>& new_session) {
  std::unique_ptr<Decoder> a = new_session(), b = new_session();
  Logits out;
  std::vector<std::int32_t> long_prompt;
  for (std::int32_t t = 0; t < prefill::kDefaultBatchedMin + 3; ++t) long_prompt.push_back((t * 7 + 3) % 50);
  const std::vector<std::int32_t> short_prompt = {5, 9, 2, 44};
  out.push_back(a->prefill(long_prompt));
  out.push_back(b->prefill(short_prompt));
  for (std::int32_t t = 0; t < 4; ++t) {
    out.push_back(a->decode(t + 10));
    out.push_back(b->decode(t + 20));
  }
  b->reset();
  out.push_back(b->decode(1));
  out.push_back(b->prefill(short_prompt));
  EXPECT_EQ(a->position(), static_cast<std::int64_t>(long_prompt.size()) + 4);
  EXPECT_EQ(b->position(), 5);
  return out;
}

class PipelineDecoder : public ::testing::TestWithParam<model::WeightDType> {};

TEST_P(PipelineDecoder, OneTwoAndThreeStagesGiveOneSessionsBits) {
  model::LlamaConfig c = model::testing::small_llama_config({5, 64, 4, 2, 96, 50, true, 64});
  model::testing::make_family(c, "qwen3", 0, false);
  const TensorMap w = model::testing::llama_large_weights(c);
  const auto whole = std::make_shared<const LlamaFastModel>(model::LlamaModel::from_weights(c, w, "whole"), GetParam());
  const Logits want = run_script([&] { return std::make_unique<LlamaFastSession>(whole, 1); });

  for (int ranks = 1; ranks <= 3; ++ranks) {
    ThreadJob job(ranks);
    std::vector<std::shared_ptr<const LlamaFastModel>> stages;
    for (int r = 0; r < ranks; ++r) {
      const LayerRange range = pipeline_stage_range(c.num_hidden_layers, ranks, r);
      // Each stage's model holds its part of the weights only.
      const model::LlamaModel part = model::LlamaModel::from_weights(c, w, "part", pipeline_stage_params(c, range));
      if (ranks > 1) {
        EXPECT_LT(part.float_weights().size(), w.size());
      }
      stages.push_back(std::make_shared<const LlamaFastModel>(part, GetParam(), range));
    }
    std::vector<std::thread> others;
    for (int r = 1; r < ranks; ++r)
      others.emplace_back([&, r] {
        ThreadRank rank(job, r);
        run_stage(stages[static_cast<std::size_t>(r)], 1, rank);
      });
    Logits got;
    {
      const auto sessions = pipeline_sessions(stages[0], 1, std::make_shared<ThreadRank>(job, 0));
      got = run_script(sessions);
    }  // the factory and its sessions gone: the other stages end
    for (std::thread& t : others) t.join();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << ranks << " stages, call " << i;
  }
}

std::string format_name(const ::testing::TestParamInfo<model::WeightDType>& p) {
  return std::string(model::weight_dtype_name(p.param));
}

INSTANTIATE_TEST_SUITE_P(Formats, PipelineDecoder, ::testing::Values(model::WeightDType::f32, model::WeightDType::q8),
                         format_name);

TEST(PipelineDecoderErrors, AStageOutsideTheModelIsRefused) {
  const model::LlamaConfig c = model::testing::small_llama_config({2, 32, 4, 2, 48, 50, true, 32});
  const model::LlamaModel m = model::LlamaModel::from_weights(c, model::testing::llama_large_weights(c), "m");
  EXPECT_THROW(LlamaFastModel(m, model::WeightDType::f32, {1, 3}), Error);
  EXPECT_THROW(LlamaFastModel(m, model::WeightDType::f32, {1, 1}), Error);
}

}  // namespace
}  // namespace orion::engine
