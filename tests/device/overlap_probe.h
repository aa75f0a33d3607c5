#pragma once
// A test double of the device: ane-sim with a handshake that shows, from inside the device and
// whatever the machine's speed, whether a runtime installs (compiles or loads) kernels while it
// evaluates others. After arm():
//   - the first program installed passes (nothing can run before some kernel is there);
//   - any other program's install waits (up to `patience`) for an evaluation to have started;
//   - the first evaluation waits (up to `patience`) for an install in progress on another
//     thread, or one that started while it waited, and records whether there was one.
//     (An install that starts and ends while the evaluating thread waits to be scheduled
//     again ran during the evaluation all the same; on a loaded machine all the others can.)
// A runtime that installs on the caller's thread has no install in progress while it evaluates,
// and the record says so. The runtime's reload probe (its folder is orion-reload-probe) is left
// out. It can also fail the compiles of folders whose path contains a given text, and make
// every evaluation slow.
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "core/error.h"
#include "device/ane_sim.h"

namespace orion::device::testing {

class OverlapProbe final : public AneDevice {
 private:
  static bool ignored(const std::string& folder) { return folder.find("orion-reload-probe") != std::string::npos; }
  template <class F>
  auto installing(const std::string& folder, F&& f) {
    if (ignored(folder)) return f();
    {
      std::unique_lock lock(mutex_);
      if (first_.empty()) first_ = folder;
      else if (folder != first_) changed_.wait_for(lock, patience_, [this] { return evaluated_; });
      ++installing_;
      ++started_;
    }
    changed_.notify_all();
    struct Done {
      OverlapProbe& p;
      ~Done() {
        const std::lock_guard lock(p.mutex_);
        --p.installing_;
      }
    } done{*this};
    return f();
  }


 public:
  OverlapProbe(AneSim& sim, std::chrono::milliseconds patience) : sim_(sim), patience_(patience) {}

  void arm() {
    const std::lock_guard lock(mutex_);
    armed_ = true;
    evaluated_ = overlapped_ = false;
    first_.clear();
  }
  bool overlapped() {
    const std::lock_guard lock(mutex_);
    return overlapped_;
  }
  void fail_compiles_containing(std::string text) { fail_ = std::move(text); }
  // Every evaluation takes at least this long, as a device busy with real work would.
  void slow_evaluations(std::chrono::milliseconds ms) { slow_ = ms; }

  AneProgramId compile(const std::string& folder) override {
    if (!fail_.empty() && folder.find(fail_) != std::string::npos)
      throw Error("overlap probe: compile of " + folder + " failed on purpose");
    const AneProgramId id = installing(folder, [&] { return sim_.compile(folder); });
    const std::lock_guard lock(mutex_);
    folders_[id] = folder;
    return id;
  }
  void load(AneProgramId id) override {
    installing(folder(id), [&] {
      sim_.load(id);
      return 0;
    });
  }
  void unload(AneProgramId id) override { sim_.unload(id); }
  void evaluate(AneProgramId id, const std::vector<const AneSurface*>& in, const std::vector<AneSurface*>& out) override {
    if (!ignored(folder(id))) {
      std::unique_lock lock(mutex_);
      if (armed_) {
        armed_ = false;
        evaluated_ = true;
        changed_.notify_all();
        const int before = started_;
        overlapped_ = changed_.wait_for(lock, patience_, [&] { return installing_ > 0 || started_ != before; });
      }
    }
    sim_.evaluate(id, in, out);
    if (slow_.count() > 0) std::this_thread::sleep_for(slow_);
  }
  const std::vector<AneIo>& inputs(AneProgramId id) const override { return sim_.inputs(id); }
  const std::vector<AneIo>& outputs(AneProgramId id) const override { return sim_.outputs(id); }
  int compiles() const override { return sim_.compiles(); }
  int loaded() const override { return sim_.loaded(); }
  AneTimings timings() const override { return sim_.timings(); }

 private:
  std::string folder(AneProgramId id) {
    const std::lock_guard lock(mutex_);
    const auto it = folders_.find(id);
    return it == folders_.end() ? std::string() : it->second;
  }

  AneSim& sim_;
  std::chrono::milliseconds patience_;
  std::string fail_;
  std::chrono::milliseconds slow_{0};
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<AneProgramId, std::string> folders_;
  std::string first_;
  int installing_ = 0, started_ = 0;  // in progress now; ever started
  bool armed_ = true, evaluated_ = false, overlapped_ = false;
};

}  // namespace orion::device::testing
