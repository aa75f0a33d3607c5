#pragma once
// PackageRunner: runs the programs of a compiled ANE package (compile/ane_package.h) step by
// step: host segments on the CPU executor (in f32, as a host computes), kernels on an ANE
// device, over one table of values named as the manifest names them. Tensors cross to a kernel
// packed into [1, C, 1, S_pad] fp16 surfaces in the kernel's binding order, and come back
// unpacked to token-major f32.
//
// Kernels are compiled and loaded when a program first needs them (a package's decode kernels
// cost nothing to a job that only runs prefill), and unloaded when the runner goes (ANE031).
// Every compile counts against the device's budget; the runner compiles each kernel once, and
// with a CompileBudget it refuses, before compiling, a kernel that would go over it (the
// hardware would fail silently, ANE030): the error names the step and the counts.
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "compile/ane_package.h"
#include "core/tensor.h"
#include "device/ane_device.h"
#include "device/ane_packing.h"
#include "runtime/compile_budget.h"
#include "runtime/kernel_call.h"

namespace orion::runtime {

struct StepStats {
  int runs = 0;
  double compile_ms = 0;  // kernels: compile and load, once
  double run_ms = 0;      // kernels: the device's evaluation; host steps: the CPU executor
  double pack_ms = 0;     // kernels: packing inputs and unpacking outputs
  std::int64_t packed_bytes = 0;  // kernels: fp16 bytes packed into input surfaces, all runs
};

struct RunnerStats {
  int compiles = 0, evaluations = 0, host_runs = 0;
  double compile_ms = 0, device_ms = 0, host_ms = 0, pack_ms = 0;
  std::int64_t packed_bytes = 0;  // fp16 bytes packed into kernels' input surfaces (KernelCallTiming)
  std::map<std::string, StepStats, std::less<>> steps;  // by step name
};

class PackageRunner {
 public:
  // Reads the manifest and the host weights; compiles nothing yet. `device` must outlive the
  // runner. `threads` is the host executor's.
  PackageRunner(std::string package_dir, device::AneDevice& device, int threads = 1, CompileBudget* budget = nullptr);
  ~PackageRunner();
  PackageRunner(const PackageRunner&) = delete;
  PackageRunner& operator=(const PackageRunner&) = delete;

  const compile::PackageManifest& manifest() const { return manifest_; }
  const std::string& dir() const { return dir_; }

  // Runs `program` on `inputs` (by the model's names, with the declared shapes; float inputs
  // of any float dtype) and returns its outputs by the model's names.
  Values run(std::string_view program, const Values& inputs);

  const RunnerStats& stats() const { return stats_; }

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
  struct Kernel;
  struct Host;
  Kernel& kernel(const compile::PackageStep& step);
  Host& host(const compile::PackageStep& step);
  void run_kernel(const compile::PackageStep& step, Values& table);
  void run_host(const compile::PackageStep& step, Values& table);

  std::string dir_;
  device::AneDevice& device_;
  int threads_;
  CompileBudget* budget_;
  compile::PackageManifest manifest_;
  Values host_weights_;
  std::map<std::string, std::unique_ptr<Kernel>, std::less<>> kernels_;
  std::map<std::string, std::unique_ptr<Host>, std::less<>> hosts_;
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> resident_;  // program -> values
  RunnerStats stats_;
};

}  // namespace orion::runtime
