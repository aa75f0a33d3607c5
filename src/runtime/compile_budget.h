#pragma once
// CompileBudget: the runtime's count of ANE compiles and loads in this process, held against
// the device's budget (ANE030: about 119 compiles per process, after which the hardware fails
// silently). The runtime asks it BEFORE compiling, because after the fact the only symptom is
// garbage. The limit it enforces is the device's budget minus a reserve: reports put the real
// limit anywhere from 119 to 132, and a count that is off by one (a compile made outside the
// runtime) must not cost a silent failure.
//
// It knows nothing of devices or jobs: callers charge it, and sync it with the device's own
// counter where one exists (AneSim::compiles()).
#include <string_view>

namespace orion::runtime {

class CompileBudget {
 public:
  // `device_budget`: compiles the device takes per process (AneSimOptions::compile_budget);
  // `reserve`: compiles kept back, -1 for device_budget / 16, at least 1.
  explicit CompileBudget(int device_budget = 119, int reserve = -1);

  int limit() const { return limit_; }  // compiles the runtime allows itself
  int compiles() const { return compiles_; }
  int loads() const { return loads_; }
  int loaded() const { return loaded_; }  // programs loaded now
  int remaining() const { return limit_ - compiles_; }
  bool allows_compile(int n = 1) const { return compiles_ + n <= limit_; }

  // Counts one compile of `what`; throws orion::Error naming it and the counts when the
  // compile would go over the limit (the caller should have asked allows_compile first).
  void charge_compile(std::string_view what);
  // One report says the limit is on programs loaded at once, so loads are held to it too.
  void note_load(std::string_view what);
  void note_unload();
  // Adopts the device's count when it saw compiles the runtime did not make.
  void sync(int device_compiles);

 private:
  int limit_;
  int compiles_ = 0, loads_ = 0, loaded_ = 0;
};

}  // namespace orion::runtime
