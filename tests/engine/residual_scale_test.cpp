// The residual guard of compile_model_package (engine/residual_probe.h): a Gemma 3 model whose
// residual stream passes fp16's 65,504 returns non-finite logits on ane-sim when compiled as it
// is, and the CPU's logits within fp16's tolerance when its stream is scaled; the scale leaves
// the f32 logits as they were.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "core/testing_temp_dir.h"
#include "engine/model_package.h"
#include "engine/residual_probe.h"
#include "model/llama/llama.h"
#include "model/llama/llama_model.h"
#include "model/llama_test_config.h"
#include "runtime/package_test_util.h"

namespace orion::engine {
namespace {

// Gemma 3 (sandwich norms, its (1 + w) gains, sliding layers) with an untied embedding 400,000
// times init's: rows of magnitude 8,000 times sqrt(64), a stream far past fp16 from the first
// layer on (the head, untied, stays of init's size, so that the logits themselves fit).
model::LlamaModel huge_stream_gemma() {
  model::LlamaConfig c = model::testing::small_llama_config({2, 64, 4, 2, 160, 300, false, 96});
  model::testing::make_family(c, "gemma3_text", 16);
  TensorMap w = model::llama_init_weights(c, 5);
  Tensor e = w.at("model.embed_tokens.weight").clone();
  for (float& v : e.span<float>()) v *= 4e5f;
  w.insert_or_assign("model.embed_tokens.weight", e);
  return model::LlamaModel::from_weights(c, std::move(w), "huge stream");
}

TEST(ResidualScale, IsThePowerOfTwoThatBringsThePeakUnderTheCeiling) {
  EXPECT_EQ(residual_scale_for(100), 1);
  EXPECT_EQ(residual_scale_for(kResidualCeiling), 1);
  EXPECT_EQ(residual_scale_for(kResidualCeiling + 1), 2);
  EXPECT_EQ(residual_scale_for(1e6), 256);  // 1e6 / 256 = 3906
  EXPECT_THROW(residual_scale_for(INFINITY), Error);
}

TEST(ResidualScale, LeavesTheF32LogitsAsTheyWere) {
  const model::LlamaModel m = huge_stream_gemma();
  const std::vector<std::int32_t> tokens = residual_probe_tokens(m, 16);
  const double peak = residual_peak(m, tokens);
  EXPECT_GT(peak, 65504.0);
  const double s = residual_scale_for(peak);
  EXPECT_GE(s, 16);
  auto logits = [&](double scale) {
    TensorMap in = m.weights();
    std::vector<std::int32_t> pos(tokens.size());
    for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(i);
    in["tokens"] = Tensor::from_ints({16}, tokens);
    in["positions"] = Tensor::from_ints({16}, pos);
    return exec::CpuExecutor(model::llama_graph(m.config(), {.seq = 16, .ane_form = true, .residual_scale = scale})).run(in)[0];
  };
  EXPECT_LT(model::testing::rel_error(logits(s).span<float>(), logits(1).span<float>()), 1e-5);
}

TEST(ResidualScale, AStreamPastFp16RunsOnAneSimOnlyScaled) {
  const model::LlamaModel m = huge_stream_gemma();
  testing_util::TempDir dir;
  // As it is: the stream overflows fp16 in the first kernel.
  runtime::testing::compile_package(m, {}, {.window = 32}, dir.path() + "/raw");
  const runtime::testing::Errors raw = runtime::testing::run_package(m, {}, 24, 8, dir.path() + "/raw");
  EXPECT_FALSE(raw.prefill < 1e-2) << raw.prefill;
  // compile_model_package probes the stream and scales it.
  AnePackageOptions o;
  o.seq = 32;
  compile_model_package(m, "test", o, dir.path() + "/scaled", true, false);
  const runtime::testing::Errors scaled = runtime::testing::run_package(m, {}, 24, 8, dir.path() + "/scaled");
  std::cout << "[ info ] rel L2 against the CPU: as it is, prefill " << raw.prefill << "; scaled, prefill " << scaled.prefill
            << ", decode " << scaled.decode << "\n";
  EXPECT_LT(scaled.prefill, 1e-2);
  EXPECT_LT(scaled.decode, 1e-2);
}

}  // namespace
}  // namespace orion::engine
