#pragma once
// What a kernel is compiled for: the chip class and the limits of the ANE that the passes, the
// validator, ane-sim and the runtime all size things by. The rules behind each number are in the
// catalogue (compile/ane/ane_rules.h).
#include <cstdint>
#include <optional>
#include <string_view>

namespace orion::compile {

// How a kernel holds its baked conv weights, dequantized in the kernel by MIL's constexpr ops
// (compile/passes/quantize_weights.h; docs/ane/FORMATS.md, "Weights in 8 and 4 bits"): fp16;
// int8 with fp16 scales; int4 with fp16 scales, or uint4 with scales and offsets
// (constexpr_blockwise_shift_scale); lut4, 4-bit codes into 16-entry fp16 tables
// (constexpr_lut_to_dense).
enum class WeightForm : std::uint8_t { fp16, int8, int4, uint4, lut4 };

constexpr std::string_view weight_form_name(WeightForm f) {
  switch (f) {
    case WeightForm::fp16: return "fp16";
    case WeightForm::int8: return "int8";
    case WeightForm::int4: return "int4";
    case WeightForm::uint4: return "uint4";
    case WeightForm::lut4: return "lut4";
  }
  return "?";
}

constexpr std::optional<WeightForm> weight_form_from_name(std::string_view name) {
  for (WeightForm f : {WeightForm::fp16, WeightForm::int8, WeightForm::int4, WeightForm::uint4, WeightForm::lut4})
    if (weight_form_name(f) == name) return f;
  return std::nullopt;
}

// The block a form takes when none is given: one int8 scale per output channel; int4 scales per
// 64 input channels (MLX's default group, the 4-bit folders Orion reads; coremltools' per-block
// default is 32, which costs twice the scales: docs/ane/FORMATS.md, "Weights in 4 bits"); a LUT
// per 8 output channels (the group Anemll's LUT4 models use, within the 8 or 16 Apple's guide
// recommends: ANE044).
constexpr std::int64_t default_weight_block(WeightForm f) {
  switch (f) {
    case WeightForm::int4: case WeightForm::uint4: return 64;
    case WeightForm::lut4: return 8;
    case WeightForm::fp16: case WeightForm::int8: return 0;
  }
  return 0;
}

// The BLOBFILE tensors one weight matrix takes in the form (ANE037's slots): the data, and its
// scales, offsets or tables.
constexpr int weight_form_tensors(WeightForm f) {
  switch (f) {
    case WeightForm::fp16: return 1;
    case WeightForm::uint4: return 3;
    case WeightForm::int8: case WeightForm::int4: case WeightForm::lut4: return 2;
  }
  return 1;
}

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
  // How baked conv weights are held. weight_block: for int8, int4 and uint4 the input channels
  // per scale (0: one scale per output channel); for lut4 the output channels per table (0: one
  // table per weight).
  WeightForm weights = WeightForm::fp16;
  std::int64_t weight_block = 0;
};

// Constants of ANE012, ANE011 and ANE017, shared with the passes that satisfy them.
inline constexpr std::int64_t kMinSurfaceBytes = 49'152;
inline constexpr std::int64_t kMinLastAxisBytes = 64;
inline constexpr std::int64_t kMaxFp16ReductionLength = 4096;

}  // namespace orion::compile
