#pragma once
// A model run on a device (ane-sim or ane): its compiled package (the one given, or the package
// cache's, compiled into it on first use), the device, the process's compile budget, the
// package runner and a session; the decoders and window scorer generation and perplexity drive.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/temp_folder.h"
#include "device/ane_device.h"
#include "engine/model_package.h"
#include "model/lora/lora_adapter.h"
#include "model/model_folder.h"
#include "engine/decoder.h"
#include "engine/perplexity.h"
#include "runtime/compile_budget.h"
#include "runtime/device_factory.h"
#include "runtime/package_batch.h"
#include "runtime/package_session.h"

namespace orion::engine {

struct DeviceRunOptions {
  runtime::DeviceKind device = runtime::DeviceKind::ane_sim;  // or ane: the Neural Engine (macOS)
  std::string package;  // use this package; empty: the package cache
  AnePackageOptions pkg;
  bool ane_prefill = false;  // the prompt on the device, decoding on the CPU
  int threads = 0;
  bool no_cache = false;  // compile into a temporary folder instead of the cache
  // A LoRA adapter, written into the kernels' inputs (pkg.lora is set from it): another adapter
  // of the same rank and targets uses the same package and kernels.
  std::shared_ptr<const model::LoraAdapter> lora;
  // Compiles the device takes per process (ANE030; runtime/compile_budget.h): tests lower it.
  int device_budget = 119;
};

class DeviceRun {
 public:
  // Finds or compiles the package; `say` gets one line about it (hit or miss, time). Throws
  // orion::Error for a model it cannot compile.
  DeviceRun(const model::ModelFolder& md, const DeviceRunOptions& o, const std::function<void(const std::string&)>& say);
  ~DeviceRun();

  std::unique_ptr<Decoder> decoder();
  // With a decode_batch program (pkg.batch > 1): a decoder over a free slot of the batch; the
  // slots decode together through engine::decode_batch. Throws orion::Error when every slot is
  // taken or the package has no batch program.
  std::unique_ptr<Decoder> batch_decoder();
  std::int64_t batch_slots() const;  // 0 without a decode_batch program
  // Logits of every position of a window from position 0: the first part (up to half the
  // window, at most the package's prefill window) by the prefill program, the rest one token
  // at a time by the mode's decoder, so that perplexity exercises both.
  WindowLogitsFn window_logits();
  std::int64_t max_window() const;

  // Runs on `adapter` from now on (one of the package's rank and targets): its matrices are
  // written into the kernels before their next run; nothing is compiled.
  void set_adapter(const model::LoraAdapter& adapter);

  device::AneDevice& device() { return *device_; }
  runtime::PackageRunner& runner() { return *runner_; }
  // "ane-sim: N compiles, M program-cache hits, ... kernel runs ..." for --profile and summaries.
  std::string profile() const;
  // One line per step of the package, in run order: compile and load, runs, time per run.
  std::string profile_table() const;

 private:
  const model::CausalLm& model_;
  std::string source_;  // the model's folder
  DeviceRunOptions o_;
  std::optional<TempFolder> temp_;
  std::string dir_;
  std::unique_ptr<device::AneDevice> device_;
  int emulator_cache_hits() const;  // the emulator's program-cache hits; 0 on the ane device
  // Before the runner, which counts its unloads in it when it goes.
  runtime::CompileBudget budget_;  // the process's compiles, refused before the device's budget
  std::unique_ptr<runtime::PackageRunner> runner_;
  std::unique_ptr<runtime::PackageSession> session_;
  std::unique_ptr<runtime::PackageBatch> batch_;
  std::shared_ptr<std::vector<bool>> slots_taken_;  // which slots have a decoder; shared with them
};

}  // namespace orion::engine
