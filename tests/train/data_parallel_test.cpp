// Trainer::distribute with ranks as threads of one process (tests/dist/thread_collective.h): two
// ranks train as one trainer with the same global batch to f32 rounding, and give the same bits
// run after run. The MPI transport runs the same under mpirun in
// tests/cli/data_parallel_cli_test.cpp.
#include <gtest/gtest.h>

#include <thread>

#include "core/error.h"
#include "core/temp_folder.h"
#include "dist/thread_collective.h"
#include "model/gpt2/gpt2_model.h"
#include "train/model_loss.h"
#include "train/trainer.h"
#include "trainer_test_util.h"

namespace orion::train {
namespace {

using namespace testing;

using test::ThreadJob;
using test::ThreadRank;

TrainConfig data_parallel_config() {
  TrainConfig c = overfit_config(exec::Numerics::f32);
  c.steps = 12;
  c.accum = 4;
  c.threads = 1;
  return c;
}

struct RankRun {
  std::vector<double> losses;
  TensorMap params;
};

// `ranks` trainers, one thread each; rank 0's losses and weights.
RankRun train_ranks(int ranks) {
  const TempFolder tmp("orion-dp");
  const auto data = memorisable_data(tmp, tiny_config().vocab_size);
  ThreadJob job(ranks);
  std::vector<RankRun> runs(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      Trainer t(model_loss_graph(tiny_config()), model::gpt2_init_weights(tiny_config(), 7), data_parallel_config(), data);
      if (ranks > 1) t.distribute(std::make_shared<ThreadRank>(job, r));
      RankRun& run = runs[static_cast<std::size_t>(r)];
      for (int s = 0; s < data_parallel_config().steps; ++s) run.losses.push_back(t.step().loss);
      run.params = t.params();
    });
  for (std::thread& t : threads) t.join();
  for (int r = 1; r < ranks; ++r) {  // every rank took the same steps
    EXPECT_EQ(runs[static_cast<std::size_t>(r)].losses, runs[0].losses);
    for (const auto& [name, w] : runs[0].params) EXPECT_EQ(runs[static_cast<std::size_t>(r)].params.at(name).to_floats(), w.to_floats()) << name;
  }
  return runs[0];
}

TEST(DataParallelTrainer, TwoRanksTrainAsOneWithTheSameGlobalBatchAndRepeatBitForBit) {
  const RankRun one = train_ranks(1), two = train_ranks(2), again = train_ranks(2);
  ASSERT_EQ(one.losses.size(), two.losses.size());
  for (std::size_t i = 0; i < one.losses.size(); ++i) EXPECT_NEAR(two.losses[i], one.losses[i], 1e-5 * one.losses[i]) << i;
  EXPECT_LT(one.losses.back(), one.losses.front() - 0.5);
  // The weights' relative L2 difference.
  double diff = 0, norm = 0;
  for (const auto& [name, w] : one.params) {
    const std::vector<float> a = w.to_floats(), b = two.params.at(name).to_floats();
    for (std::size_t i = 0; i < a.size(); ++i) {
      diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
      norm += static_cast<double>(a[i]) * a[i];
    }
  }
  EXPECT_LT(std::sqrt(diff / norm), 1e-5);
  EXPECT_EQ(again.losses, two.losses);
  for (const auto& [name, w] : two.params) EXPECT_EQ(again.params.at(name).to_floats(), w.to_floats()) << name;
}

TEST(DataParallelTrainer, AnAccumulationTheRanksDoNotDivideIsRefused) {
  const TempFolder tmp("orion-dp");
  ThreadJob job(3);
  Trainer t(model_loss_graph(tiny_config()), model::gpt2_init_weights(tiny_config(), 7), data_parallel_config(),
            memorisable_data(tmp, tiny_config().vocab_size));
  EXPECT_THROW(t.distribute(std::make_shared<ThreadRank>(job, 0)), Error);
}

}  // namespace
}  // namespace orion::train
