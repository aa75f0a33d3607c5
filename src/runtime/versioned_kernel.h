#pragma once
// VersionedKernel: one kernel whose program stays the same while its weights change (a
// training step's new weights: the same MIL, new weight file contents), kept runnable within
// the process's compile budget. Each new version is installed the cheapest safe way:
//   reload     where the device was probed to pick up weights rewritten in place (no compile);
//   compile    while the budget has room (a new program, or a device that keeps stale weights);
//   restart    otherwise, through the supervisor (checkpoint, exec with --resume); without a
//              supervisor, an orion::Error naming the budget, never a silent over-budget compile.
// It knows nothing of what the kernel computes.
#include <string>

#include "device/ane_device.h"
#include "runtime/compile_budget.h"
#include "runtime/reload_probe.h"
#include "runtime/supervisor.h"

namespace orion::runtime {

enum class InstallPath { compiled, reloaded };

struct VersionedKernelStats {
  int compiles = 0, reloads = 0;
};

class VersionedKernel {
 public:
  // `work_folder` holds the files the device compiled (created, and owned by the kernel: a
  // reload rewrites them). `supervisor` may be null. All references must outlive the kernel.
  VersionedKernel(device::AneDevice& device, CompileBudget& budget, ReloadSupport& reload, std::string work_folder,
                  Supervisor* supervisor = nullptr);
  ~VersionedKernel();
  VersionedKernel(const VersionedKernel&) = delete;
  VersionedKernel& operator=(const VersionedKernel&) = delete;

  // Makes the kernel folder `version` (model.mil and the weight files it names) the loaded
  // program. `version` is only read.
  InstallPath install(const std::string& version);

  // Whether install() will reload rather than compile, for a version of the same program (the
  // same MIL text and weight files): what a caller plans its compile budget with. May run the
  // reload probe, which costs a compile.
  bool will_reload();

  // Unloads the program (a program left loaded at an exec may leak device resources, ANE031);
  // the next install loads it again.
  void release();

  // The loaded program; throws orion::Error before the first install.
  device::AneProgramId program() const;
  const VersionedKernelStats& stats() const { return stats_; }

 private:
  void compile(const std::string& version);
  void unload();
  void load();

  device::AneDevice& device_;
  CompileBudget& budget_;
  ReloadSupport& reload_;
  std::string work_;
  Supervisor* supervisor_;
  device::AneProgramId id_ = -1;
  bool loaded_ = false;
  VersionedKernelStats stats_;
};

}  // namespace orion::runtime
