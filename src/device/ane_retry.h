#pragma once
// A framework call that fails once and works when repeated: maderix/ANE's bridge retries a
// failed load once after 100 ms, and a server on the same private runtime (jundot/omlx) reports
// loads and compiles that fail only sometimes. Plain C++, tested everywhere.
#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace orion::device {

inline constexpr std::chrono::milliseconds kAneRetryPause{100};

// Runs `attempt`, which returns nullopt on success or the failure's text (the framework's
// NSError). When it fails, waits `pause` and runs it once more. Returns nullopt when the first
// attempt worked, and a warning naming `call`, `program` and the first failure when the second
// did; throws orion::Error naming the call, the program and both failures when both failed.
std::optional<std::string> retry_once(const std::string& call, const std::string& program,
                                      std::chrono::milliseconds pause,
                                      const std::function<std::optional<std::string>()>& attempt);

}  // namespace orion::device
