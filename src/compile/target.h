#pragma once
// What a kernel is compiled for: the chip class and the limits of the ANE that the passes, the
// validator, ane-sim and the runtime all size things by. The rules behind each number are in the
// catalogue (compile/ane/ane_rules.h).
#include <cstdint>

namespace orion::compile {

// What the kernel is compiled for.
struct AneTarget {
  // M1/M2-class chips: ios16 dialect, no cast, matmul inner dimensions a multiple of 32.
  bool m1_m2 = false;
  // Emit concat (named axis and interleave consts) instead of refusing it (ANE004).
  bool allow_concat = false;
  // "About 32 MB" of on-chip memory (ANE015).
  std::int64_t on_chip_bytes = 32'000'000;
  // BLOBFILE weight tensors per program (ANE037): 16 compiled on an M4 and 17 did not; one
  // slot more goes to elementwise ops on inline scalars. No report gives M1/M2 another count.
  std::int64_t max_weight_tensors = 16;
  // Baked weights as int8 dequantized in the kernel (compile/passes/quantize_weights.h): -1
  // off (fp16); 0 one scale per output channel; N > 0 one per N input channels.
  std::int64_t int8_block = -1;
};

// Constants of ANE012, ANE011 and ANE017, shared with the passes that satisfy them.
inline constexpr std::int64_t kMinSurfaceBytes = 49'152;
inline constexpr std::int64_t kMinLastAxisBytes = 64;
inline constexpr std::int64_t kMaxFp16ReductionLength = 4096;

}  // namespace orion::compile
