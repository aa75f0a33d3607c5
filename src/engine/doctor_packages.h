#pragma once
// The models `orion doctor` runs the kernels of: a GPT-2 and a Llama (grouped-query attention,
// RMSNorm, SwiGLU, rotary embeddings) of one layer, width 64, seeded, compiled into packages
// with a 32-token window and 32 cache slots. Between them they have every kind of kernel a
// decoder's package has (a prefill block, the head, a decode step over the resident cache),
// and they run in a fraction of a second on ane-sim.
#include <cstdint>
#include <string>
#include <vector>

namespace orion::engine {

struct DoctorPackage {
  std::string model;   // "gpt2", "llama"
  std::string folder;  // the package
};

// Writes dir/gpt2 and dir/llama for M1/M2 chips (ios16 and their rules) when `m1_m2`, else for
// every other ANE (ios18).
std::vector<DoctorPackage> write_doctor_packages(const std::string& dir, bool m1_m2, std::uint64_t seed = 0);

}  // namespace orion::engine
