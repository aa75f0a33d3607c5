#include "device/ane_retry.h"

#include <thread>

#include "core/error.h"

namespace orion::device {

std::optional<std::string> retry_once(const std::string& call, const std::string& program,
                                      std::chrono::milliseconds pause,
                                      const std::function<std::optional<std::string>()>& attempt) {
  const std::optional<std::string> first = attempt();
  if (!first) return std::nullopt;
  std::this_thread::sleep_for(pause);
  const std::string again = " after " + std::to_string(pause.count()) + " ms";
  if (const std::optional<std::string> second = attempt())
    throw Error("device ane: " + call + " failed twice for " + program + ": first: " + *first + "; retried" + again +
                ": " + *second);
  return "device ane: " + call + " failed for " + program + " (" + *first + "); the retry" + again + " worked";
}

}  // namespace orion::device
