// Llama compiled into an ANE package (model/decoder_ane_package.h: the graph's ANE form, RoPE
// from host tables with the rotation as a constant product, grouped-query heads expanded in
// prefill and attending group by group over the cache in decode) and
// run on ane-sim: prefill and 32 teacher-forced decode steps against the f32 CPU executor on
// the model's own graph, with and without grouped-query attention, tied and untied; Gemma 3's
// sliding layers (window 5) take the sessions' "mask_local" at every step.
#include <gtest/gtest.h>

#include <iostream>

#include "core/testing_temp_dir.h"
#include "model/llama/llama_model.h"
#include "model/llama_test_config.h"
#include "package_test_util.h"

namespace orion::runtime {
namespace {

using namespace testing;

struct Case {
  const char* name;
  std::int64_t heads, kv_heads;
  bool tied;
  const char* family = "llama";  // model::testing::make_family
  std::int64_t head_dim = 0;
  bool bias = false;
};

model::LlamaModel small_llama(const Case& k) {
  model::LlamaConfig c = model::testing::small_llama_config({2, 64, k.heads, k.kv_heads, 160, 300, k.tied, 96});
  model::testing::make_family(c, k.family, k.head_dim, k.bias);
  TensorMap w = model::llama_init_weights(c, 5);
  // Gains away from 1, so that a dropped or misplaced RMSNorm weight shows.
  Rng rng(6);
  for (auto& [name, t] : w)
    if (t.rank() == 1 && !name.ends_with(".bias")) rng.fill_uniform(t.span<float>(), 0.5f, 1.5f);
  return model::LlamaModel::from_weights(c, std::move(w), std::string("llama ") + k.name);
}

class LlamaPackage : public ::testing::TestWithParam<Case> {};

// Measured on ane-sim (printed): rel L2 about 1e-3 in prefill and decode, as GPT-2's package
// (fp16 keeps 11 bits).
TEST_P(LlamaPackage, PrefillAnd32DecodeStepsMatchTheCpu) {
  const model::LlamaModel m = small_llama(GetParam());
  testing_util::TempDir dir;
  compile_package(m, {}, {.window = 32}, dir.path() + "/pkg");
  const Errors e = run_package(m, {}, 24, 32, dir.path() + "/pkg");
  std::cout << "[ info ] " << GetParam().name << ": rel L2 prefill " << e.prefill << ", decode " << e.decode << "\n";
  EXPECT_LT(e.prefill, 1e-2);
  EXPECT_LT(e.decode, 1e-2);
}

TEST_P(LlamaPackage, EveryKernelRoundTripsThroughTheMilParser) {
  const model::LlamaModel m = small_llama(GetParam());
  testing_util::TempDir dir;
  compile_package(m, {}, {.window = 32}, dir.path() + "/pkg");
  expect_kernels_round_trip(dir.path() + "/pkg", compile::MilDialect::ios18);
}

// Gemma's (1 + w) norms with the weights as kernel inputs (what a model past the compile budget
// gets, Gemma-3-1B among them): the ANE computes nothing on a weight alone, so the norm is
// n + n * w of a gain-free n, never n * (1 + w).
TEST(LlamaPackageGemma3, RunsWithTheWeightsAsKernelInputs) {
  const model::LlamaModel m = small_llama({"gemma3_inputs", 4, 1, true, "gemma3_text", 32});
  testing_util::TempDir dir;
  compile::PackageOptions po;
  po.kernel_weights = compile::KernelWeights::inputs;
  compile_package(m, po, {.window = 32}, dir.path() + "/pkg");
  const Errors e = run_package(m, po, 24, 16, dir.path() + "/pkg");
  std::cout << "[ info ] gemma3, weights as inputs: rel L2 prefill " << e.prefill << ", decode " << e.decode << "\n";
  EXPECT_LT(e.prefill, 1e-2);
  EXPECT_LT(e.decode, 1e-2);
}

// Qwen3.5's Gated DeltaNet layers keep a state the session passes whole from run to run (their
// update on the host, their projections in kernels): a prompt as long as the prefill window runs
// the prefill program (the chunked form), a shorter one decode steps from position 0
// (PrefillAnd32DecodeStepsMatchTheCpu/qwen3_5's prompt of 24); both continue by decoding.
TEST(LlamaPackageQwen3_5, AWholeWindowRunsThePrefillProgramAndTheStateCarriesOn) {
  const model::LlamaModel m = small_llama({"qwen3_5", 4, 2, true, "qwen3_5_text", 32});
  testing_util::TempDir dir;
  compile_package(m, {}, {.window = 32}, dir.path() + "/pkg");
  const compile::PackageManifest manifest = compile::read_manifest(dir.path() + "/pkg");
  EXPECT_EQ(manifest.program("prefill").session.at("state").size(), 2u);  // layer 0's conv and state
  EXPECT_EQ(manifest.program("decode").session.at("cache").size(), 2u);   // layer 1's keys and values
  const Errors e = run_package(m, {}, 32, 16, dir.path() + "/pkg");
  std::cout << "[ info ] qwen3_5, a whole window: rel L2 prefill " << e.prefill << ", decode " << e.decode << "\n";
  EXPECT_LT(e.prefill, 1e-2);
  EXPECT_LT(e.decode, 1e-2);
  // A package of recurrent layers has no extend or decode_batch program.
  EXPECT_THROW(compile_package(m, {}, {.window = 32, .chunk = 8}, dir.path() + "/extend"), Error);
}

INSTANTIATE_TEST_SUITE_P(Models, LlamaPackage,
                         ::testing::Values(Case{"gqa", 4, 2, false}, Case{"mha_tied", 4, 4, true}, Case{"mqa_tied", 4, 1, true},
                                           Case{"qwen3", 4, 2, true, "qwen3", 32}, Case{"qwen2_bias", 4, 2, true, "qwen2"},
                                           Case{"llama_bias_rope3", 4, 2, false, "llama", 0, true},
                                           Case{"gemma3", 4, 2, true, "gemma3_text", 32},
                                           Case{"qwen3_5", 4, 2, true, "qwen3_5_text", 32}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace orion::runtime
