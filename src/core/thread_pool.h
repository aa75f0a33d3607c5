#pragma once
// A fixed set of worker threads for data-parallel loops. The calling thread works too, so a
// pool of N threads has N - 1 workers; they sleep on a condition variable between jobs.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace orion {

class ThreadPool {
 public:
  // `threads` counts the caller; 0 means std::thread::hardware_concurrency(). 1 runs every
  // loop inline with no worker threads. Throws orion::Error when negative.
  explicit ThreadPool(int threads = 0);
  // Runs work(ctx) on `threads` threads at once, the caller among them, and returns when all
  // have finished: how a pool borrows another runtime's threads instead of owning its own.
  using ForkJoin = void (*)(int threads, void (*work)(void*), void* ctx);
  // A pool without threads of its own: each parallel_for runs its chunks on `fork_join`'s. Two
  // runtimes' threads on the same cores fight (one spins while the other works); the CPU
  // executor lends its loops to OpenMP's threads, which its matrix library already uses.
  ThreadPool(int threads, ForkJoin fork_join);
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool();

  int size() const { return threads_; }

  // Calls fn(lo, hi) over disjoint chunks covering [begin, end), each at least `grain` long
  // (a range shorter than `grain` is one chunk), in parallel, and returns when all are done.
  // If calls throw, the remaining chunks are skipped and the first exception is rethrown
  // here. A call made while the pool is busy (from inside fn, or from another thread) runs
  // inline on its caller instead of waiting.
  void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain,
                    const std::function<void(std::int64_t lo, std::int64_t hi)>& fn);

 private:
  struct Job;
  void worker_loop();
  static void run_chunks(Job& job);

  int threads_ = 1;
  ForkJoin fork_join_ = nullptr;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;  // workers: a new job or stop
  std::condition_variable idle_;  // the caller: the last worker left the job
  Job* job_ = nullptr;            // guarded by mutex_
  // Written under mutex_; atomic so that workers can spin on them without the lock.
  std::atomic<std::uint64_t> generation_{0};  // counts jobs
  std::atomic<bool> stop_{false};
  std::atomic<bool> busy_{false};
};

}  // namespace orion
