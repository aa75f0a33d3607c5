// A package's extend program (model/decoder_ane_package.h): a prompt longer than the prefill
// window goes on in chunks after the cache, on ane-sim, and then decodes; every position's
// logits against the f32 CPU executor, for Llama's grouped-query form (Qwen3), Gemma 3's sliding
// layers and GPT-2.
#include <gtest/gtest.h>

#include <iostream>

#include "core/testing_temp_dir.h"
#include "model/gpt2_test_config.h"
#include "model/llama/llama_model.h"
#include "model/llama_test_config.h"
#include "package_test_util.h"

namespace orion::runtime {
namespace {

using namespace testing;

// Prefill of 16, chunks of 8, 8 and 5 (the last padded), then 4 decode steps.
void check_extend(const model::CausalLm& m) {
  testing_util::TempDir dir;
  compile_package(m, {}, {.window = 16, .capacity = 64, .chunk = 8}, dir.path() + "/pkg");
  const std::vector<std::int32_t> tokens = random_tokens(16 + 21 + 4, m.vocab_size(), 31);
  const Tensor want = reference_logits(m, tokens);
  device::AneSimOptions so;
  so.threads = 2;
  device::AneSim sim(so);
  PackageRunner runner(dir.path() + "/pkg", sim, 2);
  PackageSession session(runner);
  ASSERT_EQ(session.chunk(), 8);
  std::vector<float> got, ref;
  auto take = [&](const Tensor& rows, std::int64_t from) {
    for (float v : rows.to_floats()) got.push_back(v);
    for (float v : want.slice(0, from, from + rows.numel() / m.vocab_size()).contiguous().to_floats()) ref.push_back(v);
  };
  take(session.prefill(std::span(tokens).first(16)), 0);
  for (const std::int64_t n : {8, 8, 5}) {
    const std::int64_t at = session.position();
    take(session.extend(std::span(tokens).subspan(static_cast<std::size_t>(at), static_cast<std::size_t>(n))), at);
    EXPECT_EQ(session.position(), at + n);
  }
  for (int s = 0; s < 4; ++s) {
    const std::int64_t at = session.position();
    take(session.decode(tokens[static_cast<std::size_t>(at)]), at);
  }
  const double e = model::testing::rel_l2(ref, got);
  std::cout << "[ info ] " << m.arch() << ": 16 prefilled, 21 in chunks, 4 decoded: rel L2 " << e << "\n";
  EXPECT_LT(e, 1e-2);
  // More tokens than the program's chunk are refused.
  EXPECT_THROW(session.extend(std::span(tokens).first(9)), Error);
  EXPECT_EQ(sim.compiles(), runner.stats().compiles);
}

TEST(PackageExtend, LlamaChunksAfterThePrefillMatchTheCpu) {
  model::LlamaConfig c = model::testing::small_llama_config({2, 64, 4, 2, 160, 300, true, 96});
  model::testing::make_family(c, "qwen3", 32);
  check_extend(model::LlamaModel::from_weights(c, model::llama_init_weights(c, 7), "qwen3 extend"));
}

// Chunks of 8 over Gemma 3's sliding window of 5: the chunk's rows hide each other past the
// window (a banded constant) and the cache's slots too (mask_local).
TEST(PackageExtend, Gemma3ChunksCrossTheSlidingWindow) {
  model::LlamaConfig c = model::testing::small_llama_config({2, 64, 4, 2, 160, 300, true, 96});
  model::testing::make_family(c, "gemma3_text", 32);
  check_extend(model::LlamaModel::from_weights(c, model::llama_init_weights(c, 7), "gemma3 extend"));
}

TEST(PackageExtend, Gpt2ChunksAfterThePrefillMatchTheCpu) {
  const model::Gpt2Config c = model::testing::small_gpt2_config();
  check_extend(model::Gpt2Model::from_weights(c, random_weights(c, 8), "gpt2 extend"));
}

}  // namespace
}  // namespace orion::runtime
