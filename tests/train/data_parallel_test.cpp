// Trainer::distribute with ranks as threads of one process (a collective over shared memory that
// adds in rank order, as dist's transports do): two ranks train as one trainer with the same
// global batch to f32 rounding, and give the same bits run after run. The MPI transport runs
// the same under mpirun in tests/cli/data_parallel_cli_test.cpp.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/temp_folder.h"
#include "model/gpt2/gpt2_model.h"
#include "train/model_loss.h"
#include "train/trainer.h"
#include "trainer_test_util.h"

namespace orion::train {
namespace {

using namespace testing;

// What the thread ranks share: each deposits its values; the last to arrive adds them in rank
// order, and each takes the result. Doubles hold every float and double exactly.
class SharedSums {
 public:
  explicit SharedSums(int ranks) : ranks_(ranks), parts_(static_cast<std::size_t>(ranks)) {}
  template <class T>
  void sum(int rank, std::span<T> values) {
    std::unique_lock lock(mutex_);
    const std::int64_t round = round_;
    parts_[static_cast<std::size_t>(rank)].assign(values.begin(), values.end());
    if (++arrived_ == ranks_) {
      result_.assign(values.size(), 0.0);
      for (std::size_t i = 0; i < values.size(); ++i) {
        T acc = static_cast<T>(parts_[0][i]);
        for (std::size_t r = 1; r < parts_.size(); ++r) acc += static_cast<T>(parts_[r][i]);
        result_[i] = static_cast<double>(acc);
      }
      arrived_ = 0;
      ++round_;
      ready_.notify_all();
    } else {
      ready_.wait(lock, [&] { return round_ != round; });
    }
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(result_[i]);
  }

 private:
  int ranks_;
  std::mutex mutex_;
  std::condition_variable ready_;
  int arrived_ = 0;
  std::int64_t round_ = 0;
  std::vector<std::vector<double>> parts_;
  std::vector<double> result_;
};

class ThreadRank final : public dist::Collective {
 public:
  ThreadRank(SharedSums& sums, int rank, int size) : sums_(sums), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void sum(std::span<float> v) override { sums_.sum(rank_, v); }
  void sum(std::span<double> v) override { sums_.sum(rank_, v); }
  void broadcast(std::span<std::byte>, int) override {}
  void barrier() override {}
  [[noreturn]] void abort(const std::string& why) override { throw Error(why); }
  std::string describe() const override { return "threads"; }

 private:
  SharedSums& sums_;
  int rank_, size_;
};

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
  SharedSums sums(ranks);
  std::vector<RankRun> runs(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      Trainer t(model_loss_graph(tiny_config()), model::gpt2_init_weights(tiny_config(), 7), data_parallel_config(), data);
      if (ranks > 1) t.distribute(std::make_shared<ThreadRank>(sums, r, ranks));
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
  SharedSums sums(3);
  Trainer t(model_loss_graph(tiny_config()), model::gpt2_init_weights(tiny_config(), 7), data_parallel_config(),
            memorisable_data(tmp, tiny_config().vocab_size));
  EXPECT_THROW(t.distribute(std::make_shared<ThreadRank>(sums, 0, 3)), Error);
}

}  // namespace
}  // namespace orion::train
