#pragma once
// What identifies the running orion's compiler in the package cache's keys: a hash of its own
// executable file. A package compiled by another build (one whose lowering differs: a fix to
// an expansion, a new pass) must not be found, and no hand-kept revision number can be trusted
// to move with every such change; the executable's bytes do.
#include <string>

namespace orion::runtime {

// Hex digest of the running executable's bytes, computed once per process; empty where the
// platform does not say where the executable is (the key then rests on the package version).
const std::string& executable_identity();

}  // namespace orion::runtime
