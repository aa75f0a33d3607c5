#include "runtime/versioned_kernel.h"

#include <filesystem>

#include "core/error.h"
#include "runtime/weight_reload.h"

namespace orion::runtime {

namespace fs = std::filesystem;

VersionedKernel::VersionedKernel(device::AneDevice& device, CompileBudget& budget, ReloadSupport& reload,
                                 std::string work_folder, Supervisor* supervisor)
    : device_(device), budget_(budget), reload_(reload), work_(std::move(work_folder)), supervisor_(supervisor) {}

VersionedKernel::~VersionedKernel() {
  if (!loaded_) return;
  try {
    unload();
  } catch (...) {
    // A destructor cannot report; the device's own count still shows the leak.
  }
}

device::AneProgramId VersionedKernel::program() const {
  if (id_ < 0 || !loaded_) throw Error("versioned kernel " + work_ + ": no version installed");
  return id_;
}

void VersionedKernel::release() {
  if (loaded_) unload();
}

void VersionedKernel::unload() {
  device_.unload(id_);
  loaded_ = false;
  budget_.note_unload();
}

void VersionedKernel::load() {
  budget_.note_load(work_);
  try {
    device_.load(id_);
  } catch (...) {
    budget_.note_unload();
    throw;
  }
  loaded_ = true;
}

bool VersionedKernel::will_reload() {
  budget_.sync(device_.compiles());
  // The probe is asked for only when a reload is possible at all (a first version or a new
  // program needs a compile whatever the device can do) and when it fits in the budget: a
  // process with one compile left spends it on the version, and the next process probes.
  const bool may_probe = reload_.probed() || budget_.allows_compile();
  return id_ >= 0 && may_probe && reload_.supported();
}

InstallPath VersionedKernel::install(const std::string& version) {
  if (will_reload() && reload_mismatch(work_, version).empty()) {
    if (loaded_) unload();
    rewrite_weights_in_place(work_, version);
    load();
    ++stats_.reloads;
    return InstallPath::reloaded;
  }
  compile(version);
  return InstallPath::compiled;
}

void VersionedKernel::compile(const std::string& version) {
  // Decided before the compile: past the budget the device would "succeed" with garbage.
  if (!budget_.allows_compile() && supervisor_) {
    if (loaded_) unload();  // a program left loaded at exec may leak device resources (ANE031)
    supervisor_->restart("compiling " + version + " would be compile " + std::to_string(budget_.compiles() + 1) +
                         " of this process, over the runtime's limit of " + std::to_string(budget_.limit()));
  }
  budget_.charge_compile(version);  // throws when over the limit and nobody can restart
  if (loaded_) unload();
  std::error_code ec;
  fs::remove_all(work_, ec);
  if (ec) throw Error("versioned kernel: cannot clear " + work_ + ": " + ec.message());
  if (fs::path(work_).has_parent_path()) fs::create_directories(fs::path(work_).parent_path());
  fs::copy(version, work_, fs::copy_options::recursive, ec);
  if (ec) throw Error("versioned kernel: cannot copy " + version + " to " + work_ + ": " + ec.message());
  id_ = device_.compile(work_);
  ++stats_.compiles;
  load();
}

}  // namespace orion::runtime
