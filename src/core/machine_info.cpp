#include "core/machine_info.h"

#include <sys/utsname.h>

#include <fstream>
#include <string_view>
#include <thread>

#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace orion {

namespace {

#if defined(__APPLE__)
std::string sysctl_string(const char* name) {
  std::size_t size = 0;
  if (sysctlbyname(name, nullptr, &size, nullptr, 0) != 0 || size == 0) return "";
  std::string value(size, '\0');
  if (sysctlbyname(name, value.data(), &size, nullptr, 0) != 0) return "";
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}
#else
// The first "model name" line of /proc/cpuinfo (x86; arm64 kernels write none), else "".
std::string proc_cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (cpuinfo && std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}
#endif

}  // namespace

MachineInfo machine_info() {
  MachineInfo m;
  utsname u{};
  if (uname(&u) == 0) {
    m.os = std::string(u.sysname) + " " + u.release;
    m.arch = u.machine;
  }
#if defined(__APPLE__)
  m.os_version = sysctl_string("kern.osproductversion");
  m.cpu = sysctl_string("machdep.cpu.brand_string");
#else
  m.cpu = proc_cpu_model();
#endif
  if (m.cpu.empty()) m.cpu = "unknown";
  m.cores = static_cast<int>(std::thread::hardware_concurrency());
  return m;
}

bool is_m1_or_m2(const std::string& cpu) {
  for (const std::string_view chip : {"Apple M1", "Apple M2"})
    if (cpu.starts_with(chip) && (cpu.size() == chip.size() || cpu[chip.size()] == ' ')) return true;
  return false;
}

}  // namespace orion
