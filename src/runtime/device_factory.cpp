#include "runtime/device_factory.h"

#include <filesystem>

#include "core/error.h"
#include "device/ane_bridge_apple.h"
#include "device/ane_sim.h"
#include "runtime/package_cache.h"

namespace orion::runtime {

DeviceKind device_kind(std::string_view name) {
  if (name == "cpu") return DeviceKind::cpu;
  if (name == "ane-sim") return DeviceKind::ane_sim;
  if (name == "ane") return DeviceKind::ane;
  throw Error("unknown device '" + std::string(name) + "' (cpu, ane-sim or ane)");
}

std::string_view device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::ane_sim: return "ane-sim";
    case DeviceKind::ane: return "ane";
  }
  return "?";
}

DeviceOptions ane_sim_options(int threads, const compile::AneTarget& target) {
  DeviceOptions o;
  o.kind = DeviceKind::ane_sim;
  o.threads = threads;
  o.target = target;
  return o;
}

std::unique_ptr<device::AneDevice> open_device(const DeviceOptions& o) {
  switch (o.kind) {
    case DeviceKind::cpu: return nullptr;
    case DeviceKind::ane: return device::open_ane_device();
    case DeviceKind::ane_sim: break;
  }
  device::AneSimOptions so;
  so.threads = o.threads;
  so.target = o.target;
  so.program_cache_dir = o.program_cache_dir;
  so.faithful = o.faithful;
  so.compile_budget = o.compile_budget;
  so.reload_reads_weights = o.reload_reads_weights;
  return std::make_unique<device::AneSim>(so);
}

std::string default_program_cache_dir() {
  return (std::filesystem::path(PackageCache::default_root()).parent_path() / "programs").string();
}

}  // namespace orion::runtime
