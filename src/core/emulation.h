#pragma once
// Whether this process runs under a CPU emulator (qemu-user running an arm64 build on x86, as
// the arm64 CI step does), so that benchmarks can say their figures describe the emulator and
// not the hardware.
#include <string>

namespace orion {

// The emulator's name ("qemu-aarch64"), or "" when the process seems to run natively (and on
// systems without /proc, where nothing is checked).
std::string emulator_name();

}  // namespace orion
