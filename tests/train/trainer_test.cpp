#include "train/trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/temp_folder.h"
#include "model/gpt2/gpt2_model.h"
#include "model/llama/llama_model.h"
#include "train/model_loss.h"
#include "train/data/token_file.h"
#include "trainer_test_util.h"

namespace orion::train {
namespace {

using namespace testing;

struct TrainerArchCase {
  std::string name;
  LossGraphFn loss;
  TensorMap weights;
};

void PrintTo(const TrainerArchCase& a, std::ostream* os) { *os << a.name; }

std::vector<TrainerArchCase> trainer_archs() {
  return {{"Gpt2", model_loss_graph(tiny_config()), model::gpt2_init_weights(tiny_config(), 7)},
          {"LlamaGqa", model_loss_graph(tiny_llama()), model::llama_init_weights(tiny_llama(), 7)}};
}

std::vector<double> train_curve(const TrainerArchCase& arch, exec::Numerics precision) {
  TempFolder tmp("orion-trainer-test");
  Trainer t(arch.loss, arch.weights, overfit_config(precision), memorisable_data(tmp, tiny_config().vocab_size));
  std::vector<double> losses;
  while (t.steps_done() < t.config().steps) {
    const StepStats s = t.step();
    EXPECT_FALSE(s.skipped) << "step " << s.step;
    losses.push_back(s.loss);
  }
  EXPECT_EQ(t.skipped_steps(), 0);
  return losses;
}

class TrainerArch : public ::testing::TestWithParam<TrainerArchCase> {};

TEST_P(TrainerArch, OverfitsASmallBatchInF32AndF16AndTheCurvesAgree) {
  const std::vector<double> f32 = train_curve(GetParam(), exec::Numerics::f32);
  const std::vector<double> f16 = train_curve(GetParam(), exec::Numerics::f16);
  ASSERT_EQ(f32.size(), f16.size());
  EXPECT_NEAR(f32.front(), std::log(61.0), 0.3);  // a fresh model guesses uniformly
  EXPECT_LT(f32.back(), 0.05);
  EXPECT_LT(f16.back(), 0.1);
  // Over the first half, where the loss is well above fp16's resolution, the curves coincide
  // to fp16 tolerance (the step's rounding grows along the run, so the tail only has to fall).
  for (std::size_t i = 0; i < f32.size() / 2; ++i) EXPECT_NEAR(f16[i], f32[i], 0.02 + 0.02 * f32[i]) << "step " << i + 1;
}

INSTANTIATE_TEST_SUITE_P(Archs, TrainerArch, ::testing::ValuesIn(trainer_archs()),
                         [](const ::testing::TestParamInfo<TrainerArchCase>& p) { return p.param.name; });

TEST(Trainer, AStepWithInfiniteGradientsIsSkippedAndLeavesTheWeightsAlone) {
  TempFolder tmp("orion-trainer-test");
  const model::Gpt2Config mc = tiny_config();
  TensorMap w = model::gpt2_init_weights(mc, 7);
  // Token embeddings past fp16's range: the forward pass overflows in the ANE's numerics.
  for (float& v : w.at("wte.weight").span<float>()) v *= 3e4f;
  TrainConfig c = overfit_config(exec::Numerics::f16);
  Trainer t(model_loss_graph(mc), w, c, memorisable_data(tmp, mc.vocab_size));
  const TensorMap before = [&] {
    TensorMap copy;
    for (const auto& [name, tensor] : t.params()) copy.emplace(name, tensor.clone());
    return copy;
  }();
  const StepStats s = t.step();
  EXPECT_TRUE(s.skipped);
  EXPECT_EQ(t.skipped_steps(), 1);
  for (const auto& [name, tensor] : t.params()) {
    const auto a = tensor.span<const float>(), b = before.at(name).span<const float>();
    ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin())) << name;
  }
  EXPECT_LT(t.step().loss_scale, s.loss_scale);  // halved after the overflow
}

// The figure `bench train` divides by its time, for Llama: every product of the forward pass
// counted here from the shapes, times 3 (the backward pass takes two products of the same size
// per forward product: the gradients of both operands, none of which is a constant).
TEST(Trainer, CountsALlamaStepsMatrixProductFlops) {
  TempFolder tmp("orion-trainer-test");
  const model::LlamaConfig mc = tiny_llama();
  TrainConfig c = overfit_config(exec::Numerics::f32);
  const Trainer t(model_loss_graph(mc), model::llama_init_weights(mc, 7), c, memorisable_data(tmp, mc.vocab_size));
  const double rows = static_cast<double>(c.batch * c.seq), T = static_cast<double>(c.seq);
  const double C = 32, KVW = 2 * (32 / 4), F = 48, V = 61, L = 2;  // tiny_llama()'s shapes
  const double per_layer = rows * C * C * 2 + rows * C * KVW * 2 + rows * C * F * 3 + 2 * rows * T * C;  // q o, k v, mlp, attention
  const double forward_macs = L * per_layer + rows * C * V;
  EXPECT_DOUBLE_EQ(t.matmul_flops_per_micro_batch(), 3 * 2 * forward_macs);
}

}  // namespace
}  // namespace orion::train
