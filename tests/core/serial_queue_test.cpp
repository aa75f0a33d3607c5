#include "core/serial_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace orion {
namespace {

TEST(SerialQueue, RunsJobsOneAtATimeInOrderOffTheCallersThread) {
  std::vector<int> order;  // unguarded: a second job running beside the first would race here (tsan)
  std::atomic<int> running{0}, most{0};
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> on_caller{false};
  std::vector<std::shared_future<void>> done;
  {
    SerialQueue q;
    for (int i = 0; i < 50; ++i)
      done.push_back(q.post([&, i] {
        most = std::max(most.load(), ++running);
        if (std::this_thread::get_id() == caller) on_caller = true;
        order.push_back(i);
        std::this_thread::yield();
        --running;
      }));
    done.back().wait();
  }
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
  EXPECT_EQ(most.load(), 1);
  EXPECT_FALSE(on_caller.load());
}

TEST(SerialQueue, AFailedJobRethrowsWhereItIsWaitedForAndLaterJobsStillRun) {
  SerialQueue q;
  auto bad = q.post([] { throw std::runtime_error("kernel 3 does not compile"); });
  bool later = false;
  auto good = q.post([&] { later = true; });
  good.get();
  EXPECT_TRUE(later);
  try {
    bad.get();
    FAIL() << "the job's exception was lost";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "kernel 3 does not compile");
  }
}

TEST(SerialQueue, DrainAndTheDestructorWaitForEverythingPosted) {
  std::atomic<int> ran{0};
  {
    SerialQueue q;
    for (int i = 0; i < 20; ++i)
      q.post([&] {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        ++ran;
      });
    q.drain();
    EXPECT_EQ(ran.load(), 20);
    for (int i = 0; i < 20; ++i) q.post([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 40);
}

}  // namespace
}  // namespace orion
