// A package's decode_batch program (model/decoder_ane_package.h) run through PackageBatch on
// ane-sim: three sequences of different prompt lengths, in slots that join the batch at
// different steps, each teacher-forced and compared with the f32 CPU executor on its own
// tokens; and the packages' weights-as-inputs form sharing the batch's programs by layer.
#include <gtest/gtest.h>

#include <iostream>

#include "core/testing_temp_dir.h"
#include "model/llama/llama_model.h"
#include "model/llama_test_config.h"
#include "package_test_util.h"
#include "runtime/package_batch.h"

namespace orion::runtime {
namespace {

using namespace testing;

model::LlamaModel small_model(const char* family = "qwen3") {
  model::LlamaConfig c = model::testing::small_llama_config({2, 64, 4, 2, 160, 300, true, 96});
  model::testing::make_family(c, family, 32);
  return model::LlamaModel::from_weights(c, model::llama_init_weights(c, 5), std::string(family) + " batch");
}

struct Sequence {
  int slot;
  std::int64_t prompt;
  std::vector<std::int32_t> tokens;
  Tensor want;
  std::vector<float> got, ref;
};

void check_batch(const compile::PackageOptions& po, const char* family = "qwen3") {
  const model::LlamaModel m = small_model(family);
  testing_util::TempDir dir;
  compile_package(m, po, {.window = 16, .batch = 3}, dir.path() + "/pkg");
  device::AneSimOptions so;
  so.threads = 2;
  device::AneSim sim(so);
  PackageRunner runner(dir.path() + "/pkg", sim, 2);
  PackageBatch batch(runner);
  ASSERT_EQ(batch.sequences(), 3);
  ASSERT_EQ(batch.capacity(), 64);

  constexpr int kSteps = 6;
  std::vector<Sequence> seqs;
  for (const auto& [slot, prompt, seed] : {std::tuple{0, 5, 21}, std::tuple{2, 3, 22}, std::tuple{1, 9, 23}}) {
    Sequence s{slot, prompt, random_tokens(prompt + kSteps, m.vocab_size(), static_cast<std::uint64_t>(seed)), {}, {}, {}};
    s.want = reference_logits(m, s.tokens);
    seqs.push_back(std::move(s));
  }
  auto prefill = [&](Sequence& s) {
    const Tensor rows = batch.prefill(s.slot, std::span(s.tokens).first(static_cast<std::size_t>(s.prompt)));
    EXPECT_LT(model::testing::rel_l2(s.want.slice(0, 0, s.prompt).contiguous().to_floats(), rows.to_floats()), 1e-2);
  };
  auto step = [&](std::vector<Sequence*> active) {
    std::vector<int> slots;
    std::vector<std::int32_t> tokens;
    for (Sequence* s : active) {
      slots.push_back(s->slot);
      tokens.push_back(s->tokens[static_cast<std::size_t>(batch.position(s->slot))]);
    }
    const Tensor rows = batch.decode(slots, tokens);
    for (std::size_t i = 0; i < active.size(); ++i) {
      Sequence& s = *active[i];
      const std::int64_t at = batch.position(s.slot) - 1;
      for (float v : rows.slice(0, static_cast<std::int64_t>(i), static_cast<std::int64_t>(i) + 1).contiguous().to_floats()) s.got.push_back(v);
      for (float v : s.want.slice(0, at, at + 1).contiguous().to_floats()) s.ref.push_back(v);
    }
  };
  // The first two run alone and together; the third joins half-way, in the slot between them.
  prefill(seqs[0]);
  step({&seqs[0]});
  prefill(seqs[1]);
  step({&seqs[1], &seqs[0]});
  step({&seqs[0], &seqs[1]});
  prefill(seqs[2]);
  for (int i = 0; i < 3; ++i) step({&seqs[0], &seqs[1], &seqs[2]});
  step({&seqs[2]});
  for (const Sequence& s : seqs) {
    const double e = model::testing::rel_l2(s.ref, s.got);
    std::cout << "[ info ] slot " << s.slot << ": " << s.got.size() / static_cast<std::size_t>(m.vocab_size())
              << " batched steps, rel L2 " << e << "\n";
    EXPECT_LT(e, 1e-2) << "slot " << s.slot;
  }
  // The prefill and decode_batch kernels, each compiled once.
  EXPECT_EQ(sim.compiles(), runner.stats().compiles);
}

TEST(PackageBatch, SlotsDecodeTogetherAndMatchTheCpuEachOnItsOwnTokens) { check_batch({}); }

TEST(PackageBatch, WeightsAsInputsShareTheBatchProgramsByLayer) {
  compile::PackageOptions po;
  po.kernel_weights = compile::KernelWeights::inputs;
  check_batch(po);
}

// Gemma 3's sliding layers (window 5): each slot's rows of mask_local hide its own old slots.
TEST(PackageBatch, Gemma3SlotsSlideTheirOwnWindows) { check_batch({}, "gemma3_text"); }

TEST(PackageBatch, RefusesAPackageWithoutABatchProgram) {
  const model::LlamaModel m = small_model();
  testing_util::TempDir dir;
  compile_package(m, {}, {.window = 16}, dir.path() + "/pkg");
  device::AneSimOptions so;
  so.threads = 2;
  device::AneSim sim(so);
  PackageRunner runner(dir.path() + "/pkg", sim, 2);
  EXPECT_THROW(
      {
        try {
          PackageBatch b(runner);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("--ane-batch"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

}  // namespace
}  // namespace orion::runtime
