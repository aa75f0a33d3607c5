#include "runtime/compile_budget.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace orion::runtime {

CompileBudget::CompileBudget(int device_budget, int reserve_or_auto) {
  if (device_budget < 1)
    throw Error("compile budget: the device budget must be at least 1, got " + std::to_string(device_budget));
  const int reserve = reserve_or_auto >= 0 ? reserve_or_auto : std::max(1, device_budget / 16);
  limit_ = device_budget - reserve;
  if (limit_ < 1)
    throw Error("compile budget: a reserve of " + std::to_string(reserve) + " leaves no compile of the device's " +
                std::to_string(device_budget));
}

void CompileBudget::charge_compile(std::string_view what) {
  if (!allows_compile())
    throw Error("compile budget: compiling " + std::string(what) + " would be compile " +
                std::to_string(compiles_ + 1) + " of this process, over the runtime's limit of " +
                std::to_string(limit_) +
                " (the ANE fails silently past its budget): reload weights or restart the process");
  ++compiles_;
}

void CompileBudget::note_load(std::string_view what) {
  if (loaded_ + 1 > limit_)
    throw Error("compile budget: loading " + std::string(what) + " would make " + std::to_string(loaded_ + 1) +
                " programs loaded at once, over the runtime's limit of " + std::to_string(limit_));
  ++loads_;
  ++loaded_;
}

void CompileBudget::note_unload() {
  if (loaded_ == 0) throw Error("compile budget: an unload with no program loaded");
  --loaded_;
}

void CompileBudget::sync(int device_compiles) { compiles_ = std::max(compiles_, device_compiles); }

}  // namespace orion::runtime
