#pragma once
// The pass tests' helpers (ir/transform_test_util.h), under the compile tests' namespace.
#include "ir/transform_test_util.h"

namespace orion::compile::testing {

using ir::testing::parse;
using ir::testing::run_pass;
using ir::testing::expect_text;
using ir::testing::random_bindings;
using ir::testing::run;
using ir::testing::max_rel_error;

}  // namespace orion::compile::testing
