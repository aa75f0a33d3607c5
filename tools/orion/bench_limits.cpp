// The fraction of a limit each benchmark run reached, and whether the limits are a real
// machine's at all (bench_commands.h).
#include <string>

#include "bench_commands.h"
#include "core/emulation.h"
#include "core/error.h"

namespace orion::cli {

std::vector<double> fractions_of_limit(const std::vector<double>& achieved, const std::vector<double>& probes) {
  if (probes.size() != achieved.size() + 1)
    throw Error("bench: " + std::to_string(probes.size()) + " probes of the limit around " + std::to_string(achieved.size()) +
                " runs (one before the first and one after each)");
  std::vector<double> fractions;
  for (std::size_t i = 0; i < achieved.size(); ++i) fractions.push_back(achieved[i] / (0.5 * (probes[i] + probes[i + 1])));
  return fractions;
}

std::string emulation_notice() {
  const std::string emulator = emulator_name();
  if (emulator.empty()) return "";
  return "  EMULATED (" + emulator + "): every figure below is the emulator's, meaningless for any hardware\n";
}

}  // namespace orion::cli
