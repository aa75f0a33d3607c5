// One retry of a failed framework call (device/ane_retry.h), with attempts played by hand.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "device/ane_retry.h"
#include "device/device_test_util.h"

namespace orion::device {
namespace {

using namespace std::chrono_literals;
using test_programs::error_of;

constexpr const char* kLoad = "-[_ANEInMemoryModel loadWithQoS:options:error:]";

// Attempts that give these results in turn (nullopt: worked), counting the calls.
struct Script {
  std::vector<std::optional<std::string>> results;
  int calls = 0;
  std::optional<std::string> operator()() { return results.at(static_cast<std::size_t>(calls++)); }
};

TEST(AneRetry, AFirstSuccessIsNotRepeated) {
  Script s{{std::nullopt}};
  EXPECT_EQ(retry_once(kLoad, "kernels/qkv", 1ms, std::ref(s)), std::nullopt);
  EXPECT_EQ(s.calls, 1);
}

TEST(AneRetry, ASecondSuccessWarnsWithTheFirstError) {
  Script s{{"ANEProgramLoadNewInstance failed", std::nullopt}};
  const auto start = std::chrono::steady_clock::now();
  const std::optional<std::string> warning = retry_once(kLoad, "kernels/qkv", 20ms, std::ref(s));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
  EXPECT_EQ(s.calls, 2);
  ASSERT_TRUE(warning);
  EXPECT_EQ(*warning, std::string("device ane: ") + kLoad +
                          " failed for kernels/qkv (ANEProgramLoadNewInstance failed); the retry after 20 ms worked");
}

TEST(AneRetry, TwoFailuresAreOneErrorWithBoth) {
  Script s{{"first reason", "second reason"}};
  const std::string m = error_of([&] { retry_once(kLoad, "kernels/qkv", 1ms, std::ref(s)); });
  EXPECT_EQ(s.calls, 2);
  EXPECT_EQ(m, std::string("device ane: ") + kLoad +
                   " failed twice for kernels/qkv: first: first reason; retried after 1 ms: second reason");
}

}  // namespace
}  // namespace orion::device
