#pragma once
// Reading a package program's "session" block (model/decoder_ane_package.h writes it): the
// names of its tokens, positions, mask and logits, its capacity, and the positions input of a
// window. Shared by the sessions that drive decoder packages (package_session, package_batch).
#include <cstdint>
#include <string>

#include "compile/ane/ane_package.h"
#include "core/tensor.h"

namespace orion::runtime {

// The value the block names under `key` ("tokens", "logits"...); throws orion::Error naming
// the program when it has none.
std::string session_name(const compile::PackageProgram& p, const char* key);
// The block's integer under `key` ("capacity", "sequences"); throws orion::Error naming the
// program when it has none.
std::int64_t session_int(const compile::PackageProgram& p, const char* key);
// i32 [n]: first, first + 1, ...
Tensor positions_from(std::int64_t first, std::int64_t n);

}  // namespace orion::runtime
