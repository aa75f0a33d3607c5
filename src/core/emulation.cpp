#include "core/emulation.h"

#include <fstream>

namespace orion {

namespace {

std::string detect_emulator() {
  // qemu-user started by hand keeps its own name as the process's; started through binfmt_misc
  // it takes the program's, but then /proc/cpuinfo still describes the host's x86 CPU, which
  // no arm64 kernel writes.
  std::ifstream status("/proc/self/status");
  std::string line;
  if (status && std::getline(status, line)) {
    const std::string prefix = "Name:\t";
    if (line.rfind(prefix, 0) == 0 && line.compare(prefix.size(), 5, "qemu-") == 0) return line.substr(prefix.size());
  }
#if defined(__aarch64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  while (cpuinfo && std::getline(cpuinfo, line))
    if (line.rfind("vendor_id", 0) == 0) return "an emulator of arm64 on an x86 host";
#endif
  return "";
}

}  // namespace

std::string emulator_name() {
  static const std::string name = detect_emulator();
  return name;
}

}  // namespace orion
