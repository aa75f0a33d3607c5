#pragma once
// What the host CPU can do, detected once at first use. Kernels choose their code path from
// this at run time so that one binary runs everywhere and uses what the machine has.
#include <string>

namespace orion {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avxvnni = false;  // VEX-encoded VNNI (vpdpbusd on 256-bit registers)
  // AArch64: Advanced SIMD (every arm64 core), its int8 dot products (SDOT, FEAT_DotProd) and
  // fp16 arithmetic (FEAT_FP16), read from the OS (Linux's auxiliary vector, macOS's sysctl).
  bool neon = false;
  bool dotprod = false;
  bool fp16 = false;
};

// Each architecture's flags are false on the others. Each flag also means the OS saves the
// registers it needs.
const CpuFeatures& cpu_features();

// The names of the features present, space-separated ("avx2 fma f16c avx512f"); "none" when
// there are none.
std::string cpu_features_summary();

}  // namespace orion
