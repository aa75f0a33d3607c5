#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"

namespace orion {
namespace {

// A value per index whose sum a wrong, missing or repeated chunk would change.
std::uint64_t term(std::int64_t i) {
  const auto u = static_cast<std::uint64_t>(i);
  return u * u * 2654435761u + 17;
}

TEST(ThreadPool, SumsEqualTheSerialSum) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (std::int64_t n : {0, 1, 2, 3, 5, 8, 17, 100, 1000, 4097, 100003}) {
      for (std::int64_t grain : {0, 1, 3, 64, 5000}) {
        for (std::int64_t begin : {std::int64_t{0}, std::int64_t{-37}, std::int64_t{1} << 40}) {
          std::uint64_t serial = 0;
          for (std::int64_t i = begin; i < begin + n; ++i) serial += term(i);
          std::atomic<std::uint64_t> sum{0};
          std::mutex mutex;
          std::vector<std::pair<std::int64_t, std::int64_t>> chunks;
          pool.parallel_for(begin, begin + n, grain, [&](std::int64_t lo, std::int64_t hi) {
            std::uint64_t local = 0;
            for (std::int64_t i = lo; i < hi; ++i) local += term(i);
            sum += local;
            std::lock_guard<std::mutex> lock(mutex);
            chunks.emplace_back(lo, hi);
          });
          ASSERT_EQ(sum.load(), serial) << threads << " threads, n " << n << ", grain " << grain;
          // The chunks tile the range exactly, and each is at least `grain` long unless the
          // whole range is shorter.
          std::sort(chunks.begin(), chunks.end());
          std::int64_t next = begin;
          for (auto [lo, hi] : chunks) {
            ASSERT_EQ(lo, next);
            ASSERT_GT(hi, lo);
            if (n >= grain) {
              ASSERT_GE(hi - lo, grain);
            }
            next = hi;
          }
          ASSERT_EQ(next, begin + n);
          if (n == 0) {
            ASSERT_TRUE(chunks.empty());
          }
        }
      }
    }
  }
}

TEST(ThreadPool, UsesSeveralChunksWhenItHasThreads) {
  ThreadPool pool(4);
  std::atomic<int> calls{0};
  pool.parallel_for(0, 1000, 10, [&](std::int64_t, std::int64_t) { ++calls; });
  EXPECT_GT(calls.load(), 1);
}

TEST(ThreadPool, OneThreadRunsInlineOnTheCaller) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.size(), 1);
  std::vector<std::thread::id> ids;
  pool.parallel_for(0, 1000, 1, [&](std::int64_t lo, std::int64_t hi) {
    ids.push_back(std::this_thread::get_id());
    EXPECT_EQ(lo, 0);
    EXPECT_EQ(hi, 1000);
  });
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids[0], std::this_thread::get_id());
}

TEST(ThreadPool, EmptyAndReversedRangesCallNothing) {
  ThreadPool pool(2);
  int calls = 0;
  pool.parallel_for(5, 5, 1, [&](std::int64_t, std::int64_t) { ++calls; });
  pool.parallel_for(5, 2, 1, [&](std::int64_t, std::int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ThreadPool, RethrowsTheFirstExceptionAndStaysUsable) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 20; ++round) {
      try {
        pool.parallel_for(0, 1000, 1, [](std::int64_t lo, std::int64_t hi) {
          if (lo <= 500 && 500 < hi) throw std::runtime_error("bad index 500");
        });
        FAIL() << "no exception with " << threads << " threads";
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "bad index 500");
      }
      std::atomic<std::int64_t> count{0};
      pool.parallel_for(0, 1000, 1, [&](std::int64_t lo, std::int64_t hi) { count += hi - lo; });
      EXPECT_EQ(count.load(), 1000);
    }
  }
}

TEST(ThreadPool, NestedAndConcurrentCallsComplete) {
  ThreadPool pool(4);
  std::atomic<std::int64_t> count{0};
  pool.parallel_for(0, 16, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i)
      pool.parallel_for(0, 100, 1, [&](std::int64_t a, std::int64_t b) { count += b - a; });
  });
  EXPECT_EQ(count.load(), 1600);

  count = 0;
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([&] {
      for (int k = 0; k < 50; ++k)
        pool.parallel_for(0, 1000, 7, [&](std::int64_t a, std::int64_t b) { count += b - a; });
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(count.load(), 3 * 50 * 1000);
}

TEST(ThreadPool, ZeroMeansHardwareConcurrency) {
  ThreadPool pool(0);
  const int expected = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_EQ(pool.size(), expected);
  EXPECT_THROW(ThreadPool(-1), Error);
}

}  // namespace
}  // namespace orion
