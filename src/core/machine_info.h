#pragma once
// What a report says about the machine it ran on (`orion doctor`'s report, meant to be attached
// to an issue): the OS and its version, the processor's name and the core count. The chip's
// name is what tells one Neural Engine from another (M1 and M2 follow stricter rules, ANE024),
// so it is read from the OS rather than guessed from the feature flags.
#include <string>

namespace orion {

struct MachineInfo {
  std::string os;          // uname's system and release: "Darwin 24.1.0", "Linux 6.1.0-18-amd64"
  std::string os_version;  // macOS's product version ("15.1", sysctl kern.osproductversion); else empty
  std::string arch;        // uname's machine: "arm64", "x86_64"
  std::string cpu;         // "Apple M4 Pro" (sysctl machdep.cpu.brand_string), /proc/cpuinfo's model name; "unknown"
  int cores = 0;           // hardware threads
};

// Read from the OS each call; fields the OS does not say are "unknown" (cpu) or empty.
MachineInfo machine_info();

// Whether `cpu` names an M1 or M2 chip ("Apple M1", "Apple M2 Max"): the chips whose programs
// need the M1/M2 rules (compile::AneTarget::m1_m2).
bool is_m1_or_m2(const std::string& cpu);

}  // namespace orion
