#pragma once
// A job's ranks as threads of one test process: a dist::Collective over shared memory that adds
// in rank order and passes messages in order, as dist's transports do, so that a test runs
// data-parallel training (tests/train/data_parallel_test.cpp) or a pipeline's stages
// (tests/engine/pipeline_test.cpp) without mpirun. The MPI transport runs the same under mpirun
// in the CLI tests.
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/error.h"
#include "dist/collective.h"

namespace orion::test {

// What the thread ranks share: each sum's parts, and the messages on their way.
class ThreadJob {
 public:
  explicit ThreadJob(int ranks) : ranks_(ranks), parts_(static_cast<std::size_t>(ranks)) {}
  int ranks() const { return ranks_; }

  // Each rank deposits its values; the last to arrive adds them in rank order, and each takes the
  // result. Doubles hold every float and double exactly.
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
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return round_ != round; });
    }
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(result_[i]);
  }

  void send(int from, int to, std::span<const std::byte> bytes) {
    std::lock_guard lock(mutex_);
    mail_[{from, to}].emplace_back(bytes.begin(), bytes.end());
    changed_.notify_all();
  }
  void receive(int from, int to, std::span<std::byte> bytes) {
    std::unique_lock lock(mutex_);
    auto& box = mail_[{from, to}];
    changed_.wait(lock, [&] { return !box.empty(); });
    const std::vector<std::byte> m = std::move(box.front());
    box.pop_front();
    if (m.size() != bytes.size())
      throw Error("rank " + std::to_string(from) + " sent " + std::to_string(m.size()) + " bytes, not " + std::to_string(bytes.size()));
    std::memcpy(bytes.data(), m.data(), m.size());
  }

 private:
  int ranks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  std::int64_t round_ = 0;
  std::vector<std::vector<double>> parts_;
  std::vector<double> result_;
  std::map<std::pair<int, int>, std::deque<std::vector<std::byte>>> mail_;
};

class ThreadRank final : public dist::Collective {
 public:
  ThreadRank(ThreadJob& job, int rank) : job_(job), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return job_.ranks(); }
  void sum(std::span<float> v) override { job_.sum(rank_, v); }
  void sum(std::span<double> v) override { job_.sum(rank_, v); }
  void broadcast(std::span<std::byte>, int) override {}
  void barrier() override {}
  void send(std::span<const std::byte> bytes, int to) override { job_.send(rank_, to, bytes); }
  void receive(std::span<std::byte> bytes, int from, Wait) override { job_.receive(from, rank_, bytes); }
  [[noreturn]] void abort(const std::string& why) override { throw Error(why); }
  std::string describe() const override { return "threads"; }

 private:
  ThreadJob& job_;
  int rank_;
};

}  // namespace orion::test
