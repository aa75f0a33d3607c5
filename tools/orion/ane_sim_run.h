#pragma once
// How the CLI runs a model on ane-sim or the ane device: its compiled package (the one --package names, or the
// package cache's, compiled into it on first use), the emulator, the package runner and a
// session; and the model::Decoder that generation and perplexity drive in Orion's two device
// modes:
//   --device ane-sim                everything the package can run on the device: prefill and
//                                   decode programs (attention over the KV cache on the host)
//   --device ane-sim --ane-prefill  the prompt on the device, then decoding on the CPU (the graph
//                                   engine takes over the device's KV cache)
#include <memory>
#include <optional>
#include <string>

#include "ane_package_cli.h"
#include "core/temp_folder.h"
#include "device/ane_sim.h"
#include "model/session/decoder.h"
#include "model/session/graph_session.h"
#include "model/session/perplexity.h"
#include "model/model_folder.h"
#include "runtime/package_session.h"

namespace orion::cli {

struct AneSimRunOptions {
  std::string device = "ane-sim";  // or "ane": the Neural Engine through the bridge (macOS)
  std::string package;  // use this package; empty: the package cache
  AnePackageOptions pkg;
  bool ane_prefill = false;
  int threads = 0;
  bool no_cache = false;  // compile into a temporary folder instead of the cache
};

void add_ane_sim_run_options(CLI::App* cmd, AneSimRunOptions& o);

class AneSimRun {
 public:
  // Finds or compiles the package; `say` gets one line about it (hit or miss, time). Throws
  // orion::Error for a model it cannot compile.
  AneSimRun(const model::ModelFolder& md, const AneSimRunOptions& o, const std::function<void(const std::string&)>& say);
  ~AneSimRun();

  std::unique_ptr<model::Decoder> decoder();
  // Logits of every position of a window from position 0: the first part (up to half the
  // window, at most the package's prefill window) by the prefill program, the rest one token
  // at a time by the mode's decoder, so that perplexity exercises both.
  model::WindowLogitsFn window_logits();
  std::int64_t max_window() const;

  device::AneDevice& device() { return *device_; }
  runtime::PackageRunner& runner() { return *runner_; }
  // "ane-sim: N compiles, M program-cache hits, ... kernel runs ..." for --profile and summaries.
  std::string profile() const;
  // One line per step of the package, in run order: compile and load, runs, time per run.
  std::string profile_table() const;

 private:
  const model::CausalLm& model_;
  std::string source_;  // the model's folder
  AneSimRunOptions o_;
  std::optional<TempFolder> temp_;
  std::string dir_;
  std::unique_ptr<device::AneDevice> device_;
  device::AneSim* sim_ = nullptr;  // device_ when it is the emulator
  // Before the runner, which counts its unloads in it when it goes.
  runtime::CompileBudget budget_;  // the process's compiles, refused before the device's budget
  std::unique_ptr<runtime::PackageRunner> runner_;
  std::unique_ptr<runtime::PackageSession> session_;
};

}  // namespace orion::cli
