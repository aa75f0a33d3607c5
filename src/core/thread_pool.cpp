#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/error.h"

namespace orion {

struct ThreadPool::Job {
  const std::function<void(std::int64_t, std::int64_t)>* fn;
  // Unsigned so that a range longer than INT64_MAX cannot overflow; C++20 defines the
  // conversion back to int64_t as modular, which gives the right bounds.
  std::uint64_t begin;
  std::uint64_t base;       // every chunk has `base` elements...
  std::uint64_t remainder;  // ...and the first `remainder` chunks one more
  std::uint64_t chunks;
  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr error;  // the first one, guarded by error_mutex
  // Workers inside run_chunks: incremented under the pool's mutex_ (together with reading
  // job_), decremented without it as a worker's last touch of the Job.
  std::atomic<int> active{0};
};

ThreadPool::ThreadPool(int threads) {
  if (threads < 0) throw Error("thread pool: " + std::to_string(threads) + " threads");
  if (threads == 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  threads_ = threads;
  workers_.reserve(static_cast<std::size_t>(threads - 1));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::ThreadPool(int threads, ForkJoin fork_join) : fork_join_(fork_join) {
  if (threads < 0) throw Error("thread pool: " + std::to_string(threads) + " threads");
  threads_ = threads == 0 ? std::max(1, static_cast<int>(std::thread::hardware_concurrency())) : threads;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  std::uint64_t seen = generation_;
  for (;;) {
    // Spin a little before sleeping: a decode step runs dozens of short parallel sections back
    // to back, and a sleep/wake round trip through the kernel costs as much as a small
    // section's work (docs/PERFORMANCE.md, "Smaller measurements behind the code").
    if (generation_.load(std::memory_order_acquire) == seen) {
      lock.unlock();
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      while (generation_.load(std::memory_order_acquire) == seen && !stop_.load(std::memory_order_acquire) &&
             std::chrono::steady_clock::now() < until) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        // Not `yield`, a no-op on cores without SMT (all Apple and most other arm64 ones): an
        // isb stalls the front end briefly, as pause does, which is why Rust's spin_loop and
        // several databases' spin waits use it.
        __asm__ volatile("isb sy" ::: "memory");
#endif
      }
      lock.lock();
    }
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    // A worker that wakes after the caller has finished the job finds it gone; joining only
    // under the lock is what lets the caller know nobody else will touch its Job.
    Job* job = job_;
    if (!job) continue;
    job->active.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    run_chunks(*job);
    // After this decrement the caller may return and destroy the Job: touch only the pool.
    const bool last = job->active.fetch_sub(1, std::memory_order_acq_rel) == 1;
    lock.lock();
    if (last) idle_.notify_one();
  }
}

void ThreadPool::run_chunks(Job& job) {
  while (!job.failed.load(std::memory_order_relaxed)) {
    const std::uint64_t i = job.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= job.chunks) return;
    const std::uint64_t lo = job.begin + i * job.base + std::min(i, job.remainder);
    const std::uint64_t hi = lo + job.base + (i < job.remainder ? 1 : 0);
    try {
      (*job.fn)(static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi));
    } catch (...) {
      std::lock_guard<std::mutex> lock(job.error_mutex);
      if (!job.error) job.error = std::current_exception();
      job.failed.store(true, std::memory_order_relaxed);
    }
  }
}

void ThreadPool::parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain,
                              const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (end <= begin) return;
  const std::uint64_t n = static_cast<std::uint64_t>(end) - static_cast<std::uint64_t>(begin);
  const std::uint64_t g = static_cast<std::uint64_t>(std::max<std::int64_t>(grain, 1));
  // A few chunks per thread even out uneven chunk costs; never so many that one is below
  // `grain`, which is why chunks are sized by dividing n rather than by fixed steps.
  const std::uint64_t chunks = std::min<std::uint64_t>(n / g, 4u * static_cast<unsigned>(size()));
  bool expected = false;
  if (chunks <= 1 || threads_ == 1 || !busy_.compare_exchange_strong(expected, true)) {
    fn(begin, end);
    return;
  }

  Job job;
  job.fn = &fn;
  job.begin = static_cast<std::uint64_t>(begin);
  job.chunks = chunks;
  job.base = n / chunks;
  job.remainder = n % chunks;
  if (fork_join_) {  // the same chunks, run by the borrowed threads
    fork_join_(static_cast<int>(std::min<std::uint64_t>(chunks, static_cast<std::uint64_t>(threads_))),
               [](void* j) { run_chunks(*static_cast<Job*>(j)); }, &job);
    busy_.store(false);
    if (job.error) std::rethrow_exception(job.error);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    ++generation_;
  }
  wake_.notify_all();
  run_chunks(job);
  // The caller usually runs out of chunks a little before the workers finish theirs. Sleeping
  // on idle_ then costs a futex wait and wake per section, and a decode step has dozens of
  // sections (docs/PERFORMANCE.md, "Smaller measurements behind the code"), so spin first while
  // a worker is still inside a chunk.
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
  while (job.active.load(std::memory_order_acquire) != 0 && std::chrono::steady_clock::now() < until) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  {
    // A worker that read job_ before this lock is counted in `active`; none can join after.
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [&] { return job.active.load(std::memory_order_acquire) == 0; });
    job_ = nullptr;
  }
  busy_.store(false);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace orion
