#pragma once
// PackageRunner: runs the programs of a compiled ANE package (compile/ane/ane_package.h) step by
// step through the segment runner (runtime/segment_runner.h), the package being its source of
// kernels: host segments on the CPU executor (in f32, as a host computes), kernels on an ANE
// device, over one table of values named as the manifest names them. Tensors cross to a kernel
// packed into [1, C, 1, S_pad] fp16 surfaces in the kernel's binding order, and come back
// unpacked to token-major f32.
//
// Kernels are compiled and loaded when a program first needs them (a package's decode kernels
// cost nothing to a job that only runs prefill), and unloaded when the runner goes (ANE031).
// The compiles run on the runner's compile thread, in the program's step order, so that kernel
// k+1 compiles while kernel k and the host steps run (on the hardware the compiler is another
// process and the ANE evaluates by itself: the overlap is real parallelism there). A caller
// that knows what runs next asks for it early (prepare: decode's kernels while prefill runs).
// A compile that failed, or that the budget refused, is rethrown where its kernel is first
// used, never skipped: the step that needed it fails.
//
// Steps that share a kernel folder (weights as inputs: the layers of one shape) share its
// compiled program; each step has surfaces of its own, its weights written into them from the
// package's device_weights.bin before its first run and kept there.
//
// Every compile counts against the device's budget; the runner compiles each kernel once, and
// with a CompileBudget it refuses, before compiling, a kernel that would go over it (the
// hardware would fail silently, ANE030): the error names the step and the counts.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "compile/ane/ane_package.h"
#include "core/serial_queue.h"
#include "core/tensor.h"
#include "device/ane_device.h"
#include "device/ane_packing.h"
#include "runtime/compile_budget.h"
#include "runtime/kernel_call.h"

namespace orion::runtime {

struct StepStats {
  int runs = 0;
  double compile_ms = 0;       // kernels: compile and load, once (on the compile thread)
  double compile_wait_ms = 0;  // kernels: what of it a run waited for; the rest overlapped
  double run_ms = 0;      // kernels: the device's evaluation; host steps: the CPU executor
  double pack_ms = 0;     // kernels: packing inputs and unpacking outputs
  std::int64_t packed_bytes = 0;  // kernels: fp16 bytes packed into input surfaces, all runs
};

struct RunnerStats {
  int compiles = 0, evaluations = 0, host_runs = 0;
  double compile_ms = 0, compile_wait_ms = 0, device_ms = 0, host_ms = 0, pack_ms = 0;
  std::int64_t packed_bytes = 0;  // fp16 bytes packed into kernels' input surfaces (KernelCallTiming)
  std::int64_t weight_bytes = 0;  // fp16 bytes of runtime weights written into kernels (set_weights)
  std::map<std::string, StepStats, std::less<>> steps;  // by step name
};

class PackageRunner {
 public:
  // Reads the manifest and the host weights; compiles nothing yet. `device` must outlive the
  // runner. `threads` is the host executor's. `background_compile` false compiles each kernel on
  // the calling thread when a run reaches it (to measure what the overlap saves).
  PackageRunner(std::string package_dir, device::AneDevice& device, int threads = 1, CompileBudget* budget = nullptr,
                bool background_compile = true);
  ~PackageRunner();
  PackageRunner(const PackageRunner&) = delete;
  PackageRunner& operator=(const PackageRunner&) = delete;

  const compile::PackageManifest& manifest() const { return manifest_; }
  const std::string& dir() const { return dir_; }

  // Starts compiling and loading the kernels of `program` that are not yet, in step order, on
  // the compile thread, and returns at once. run() starts its own program's. Compiling on use
  // (no background compile), it does nothing.
  void prepare(std::string_view program);

  // Runs `program` on `inputs` (by the model's names, with the declared shapes; float inputs
  // of any float dtype) and returns its outputs by the model's names.
  TensorMap run(std::string_view program, const TensorMap& inputs);

  // The values of the package's runtime weights (manifest runtime_weights, e.g. a LoRA
  // adapter's matrices), by param name: each kernel that takes one has them written into its
  // weight surfaces before its next run, and host steps read them. Compiles nothing: a package
  // runs with one adapter, then another, on the same kernels. Throws orion::Error naming a
  // weight that is missing or of another shape.
  void set_weights(const TensorMap& weights);

  // Counts the compiles that finished, including those no run has used yet.
  const RunnerStats& stats() const;

  // A surface of a kernel of a program and the shape of the tensor in it.
  struct SurfaceRef {
    device::AneSurface* surface = nullptr;
    device::SurfaceColumns shape;
  };
  // Whether every step of `program` that reads its input `input` (the model's name) is a
  // kernel: then the input can stay resident in their surfaces. From the manifest; compiles nothing.
  bool kernels_only_read(std::string_view program, std::string_view input) const;
  // Keeps `input` of `program` resident in the input surfaces of the kernels that read it
  // (compiling them if need be; kernels_only_read must hold) and returns those surfaces, which
  // the caller writes: run() then neither wants the input nor packs it.
  std::vector<SurfaceRef> keep_resident(std::string_view program, std::string_view input);
  // The output surface of the kernel that computes `output` of `program` as its last run left
  // it; surface nullptr when a host step computes it or the kernel has not run.
  struct OutputRef {
    const device::AneSurface* surface = nullptr;
    device::SurfaceColumns shape;
  };
  OutputRef output_surface(std::string_view program, std::string_view output) const;

 private:
  struct Kernel;     // a compiled kernel folder
  struct StepState;  // a kernel step's surfaces, I/O under its own names and weights
  struct Program;    // a program's steps, run by a SegmentRunner with the package as their source
  void enqueue(const compile::PackageStep& step);
  void compile_kernel(const compile::PackageStep& step, Kernel& k);
  void count_compile(const std::string& folder, Kernel& k) const;
  Kernel& kernel(const compile::PackageStep& step);
  StepState& step_state(const compile::PackageStep& step);
  Program& program(const compile::PackageProgram& p);

  std::string dir_;
  device::AneDevice& device_;
  int threads_;
  CompileBudget* budget_;
  compile::PackageManifest manifest_;
  TensorMap host_weights_;
  TensorMap runtime_weights_;  // set_weights'
  // What kernels' weight inputs are written from: device_weights.bin's (fp16 views of the
  // mapped file) and the runtime weights set.
  TensorMap kernel_weights_;
  int weights_version_ = 0;     // 0: none set yet
  // By kernel folder; inserted by the caller's thread only.
  std::map<std::string, std::unique_ptr<Kernel>, std::less<>> kernels_;
  std::map<std::string, std::unique_ptr<StepState>, std::less<>> step_states_;  // by step name
  std::map<std::string, std::unique_ptr<Program>, std::less<>> programs_;  // made when first run
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> resident_;  // program -> values
  mutable RunnerStats stats_;
  std::atomic<bool> closing_{false};      // the destructor: pending compiles are skipped
  std::unique_ptr<SerialQueue> compiler_;  // null: compiles on the caller's thread; last, so it goes first
};

}  // namespace orion::runtime
