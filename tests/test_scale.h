#pragma once
// $ORION_TEST_SCALE chooses how big the tests' models, data and runs are: `full` (the default,
// `make test`) or `small` (`make test-sanitize` and `make test-arm64`, where AddressSanitizer or
// qemu make every instruction ten to fifty times dearer). At `small` a test shrinks what adds
// time without adding code paths (steps of a training run, records of a data set, the seconds of a
// load test) and still runs every path it runs at `full`; the tests that exist to check a size
// (the GPT-2 124M-sized ones) are skipped. docs/RELIABILITY.md lists what each test shrinks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string_view>

namespace orion::testing_util {

inline bool small_scale() {
  static const bool small = [] {
    const char* v = std::getenv("ORION_TEST_SCALE");
    const std::string_view s = v == nullptr ? "full" : v;
    if (s != "full" && s != "small" && !s.empty()) {
      std::cerr << "ORION_TEST_SCALE is '" << s << "': expected 'full' or 'small'\n";
      std::abort();
    }
    return s == "small";
  }();
  return small;
}

// `full` at the full scale, `small` at the small one.
template <class T>
T at_scale(T full, T small) {
  return small_scale() ? small : full;
}

}  // namespace orion::testing_util

// Skips a test that exists to check a size (a GPT-2 124M-sized model) at the small scale.
#define ORION_SKIP_LARGE_MODEL_TEST()                                \
  do {                                                               \
    if (::orion::testing_util::small_scale())                        \
      GTEST_SKIP() << "a 124M-sized model, at ORION_TEST_SCALE=small"; \
  } while (0)
