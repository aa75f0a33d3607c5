#pragma once
// orion bench decode --package: the same decode measured on ane-sim, through the runtime that
// runs a compiled package (runtime/package_session.h), so that the emulator's speed is reported
// against the CPU device's in one run on one machine state.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace orion::cli {

class AneSimDecodeBench {
 public:
  // Opens `package` (orion compile --target ane) on an ane-sim of `threads` threads and runs
  // one prefill and one decode step, so that every kernel is compiled and loaded before timing.
  AneSimDecodeBench(const std::string& package, int threads);
  ~AneSimDecodeBench();
  AneSimDecodeBench(const AneSimDecodeBench&) = delete;
  AneSimDecodeBench& operator=(const AneSimDecodeBench&) = delete;

  // A one-token prefill of tokens[0], then one decode step per other token: tok/s of those
  // steps. Throws orion::Error when they do not fit the package's decode capacity.
  double run(std::span<const std::int32_t> tokens);
  // Teacher-forced logits over `tokens` from an empty context (a one-token prefill, then a
  // decode step per token): what the package computes, for its error against f32 weights.
  std::vector<std::vector<float>> logits(std::span<const std::int32_t> tokens);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orion::cli
