#pragma once
// Reading a package program's "session" block (model/decoder_ane_package.h writes it): the
// names of its tokens, positions, mask and logits, its capacity, the positions input of a
// window, and a prefill run. Shared by the sessions that drive decoder packages
// (package_session, package_batch).
#include <cstdint>
#include <string>

#include <span>
#include <string_view>

#include "compile/ane/ane_package.h"
#include "core/tensor.h"
#include "core/tensor_map.h"
#include "runtime/package_runner.h"

namespace orion::runtime {

// The value the block names under `key` ("tokens", "logits"...); throws orion::Error naming
// the program when it has none.
std::string session_name(const compile::PackageProgram& p, const char* key);
// The block's integer under `key` ("capacity", "sequences"); throws orion::Error naming the
// program when it has none.
std::int64_t session_int(const compile::PackageProgram& p, const char* key);
// The block's sliding window ("window"), 0 when none of its layers slides; with one the program
// also takes the sliding layers' mask under the block's "mask_local" name.
std::int64_t session_window(const compile::PackageProgram& p);
// For "mask_local": -inf over those of the first `count` cache slots of a mask's `row` (slot j
// holds position j) that lie `window` or more positions before the row's query at `query`.
void hide_before_window(float* row, std::int64_t count, std::int64_t query, std::int64_t window);
// i32 [n]: first, first + 1, ...
Tensor positions_from(std::int64_t first, std::int64_t n);
// Runs `runner`'s prefill program on `tokens` from position 0, zero-padded to its window
// (checked: 1 to the window's length, else orion::Error saying to recompile with a larger --seq);
// `then`, when not empty, is prepared (its kernels queued to compile) behind prefill's.
TensorMap run_prefill(PackageRunner& runner, std::span<const std::int32_t> tokens, std::string_view then = {});

}  // namespace orion::runtime
