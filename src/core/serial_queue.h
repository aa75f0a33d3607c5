#pragma once
// SerialQueue: one background thread that runs the jobs posted to it one at a time, in the
// order they were posted. For work that must stay ordered but should not hold up its caller:
// the runtime compiles the next ANE kernels on it while the caller evaluates this one.
//
// A job's exception is kept in its future and rethrown where the caller waits for it, never on
// the queue's thread: work that fails surfaces at its point of use.
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace orion {

class SerialQueue {
 public:
  SerialQueue();
  // Runs what was posted before it returns: a job may hold references to its poster's members,
  // so the poster's destructor must not free them under it.
  ~SerialQueue();
  SerialQueue(const SerialQueue&) = delete;
  SerialQueue& operator=(const SerialQueue&) = delete;

  std::shared_future<void> post(std::function<void()> job);
  // Waits until every job posted so far has run.
  void drain();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;   // the thread: a job or stop
  std::condition_variable idle_;   // drain: the queue ran dry
  std::deque<std::packaged_task<void()>> jobs_;
  bool running_ = false;  // a job is out of jobs_ and running
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace orion
