#pragma once
// The demo's second half: a whole GPT-2 model compiled into an ANE package and run on ane-sim
// (prefill, then decode steps with the KV cache), against the f32 CPU executor.
#include <cstdint>

namespace orion::cli {

struct DemoPackageOptions {
  std::uint64_t seed = 0;
  int threads = 0;
  std::int64_t prompt = 40;
  int steps = 16;
};

void demo_package(const DemoPackageOptions& o);

}  // namespace orion::cli
