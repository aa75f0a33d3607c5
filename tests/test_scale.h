#pragma once
// $ORION_TEST_LARGE_MODELS=0 skips the tests that build GPT-2 124M-sized models. `make
// test-sanitize` sets it: under AddressSanitizer those few tests would take most of CI's time,
// and the code they run is the code the small-model tests run (docs/RELIABILITY.md).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

namespace orion::testing_util {

inline bool large_model_tests_off() {
  const char* v = std::getenv("ORION_TEST_LARGE_MODELS");
  return v != nullptr && std::string_view(v) == "0";
}

}  // namespace orion::testing_util

#define ORION_SKIP_LARGE_MODEL_TEST()                   \
  do {                                                  \
    if (::orion::testing_util::large_model_tests_off()) \
      GTEST_SKIP() << "ORION_TEST_LARGE_MODELS=0";      \
  } while (0)
