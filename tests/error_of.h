#pragma once
// The message of the orion::Error that `f` throws; a test failure when it throws nothing or
// something else. One helper for every layer's tests (ir_test_util.h and mil_test_util.h
// bring it into their namespaces).
#include <gtest/gtest.h>

#include <exception>
#include <string>
#include <utility>

#include "core/error.h"

namespace orion::testing {

template <class F> std::string error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const orion::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-orion exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

}  // namespace orion::testing
