#include "core/serial_queue.h"

namespace orion {

SerialQueue::SerialQueue() : thread_([this] { loop(); }) {}

SerialQueue::~SerialQueue() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

std::shared_future<void> SerialQueue::post(std::function<void()> job) {
  std::packaged_task<void()> task(std::move(job));
  std::shared_future<void> done = task.get_future().share();
  {
    const std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(task));
  }
  wake_.notify_one();
  return done;
}

void SerialQueue::drain() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return jobs_.empty() && !running_; });
}

void SerialQueue::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and everything posted has run
    std::packaged_task<void()> task = std::move(jobs_.front());
    jobs_.pop_front();
    running_ = true;
    lock.unlock();
    task();  // a packaged_task keeps the job's exception for its future
    lock.lock();
    running_ = false;
    if (jobs_.empty()) idle_.notify_all();
  }
}

}  // namespace orion
