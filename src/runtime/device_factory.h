#pragma once
// The one place that turns a device's name and options into an AneDevice: the Neural Engine
// through the bridge ("ane", macOS) or the emulator ("ane-sim"). Every command and embedding
// program that runs kernels opens its device here, so a new option is added once.
#include <memory>
#include <string>
#include <string_view>

#include "compile/target.h"
#include "device/ane_device.h"

namespace orion::runtime {

enum class DeviceKind { cpu, ane_sim, ane };

// "cpu", "ane-sim" or "ane"; throws orion::Error for another name.
DeviceKind device_kind(std::string_view name);
std::string_view device_kind_name(DeviceKind kind);

struct DeviceOptions {
  DeviceKind kind = DeviceKind::ane_sim;
  int threads = 2;  // the emulator's threads
  // ane-sim only: the chip family emulated, the on-disk program cache (empty: none) and the
  // settings that exercise the runtime's bookkeeping (device/ane_sim.h).
  compile::AneTarget target;
  std::string program_cache_dir;
  bool faithful = false;
  int compile_budget = 119;
  bool reload_reads_weights = true;
};

// The emulator with `threads`, emulating `target`, without a program cache.
DeviceOptions ane_sim_options(int threads, const compile::AneTarget& target = {});

// The device; nullptr for cpu, which needs none. Throws orion::Error where there is no Neural
// Engine (ane off Apple silicon).
std::unique_ptr<device::AneDevice> open_device(const DeviceOptions& o);
// The emulator's program cache beside the package cache (runtime/package_cache.h).
std::string default_program_cache_dir();

}  // namespace orion::runtime
