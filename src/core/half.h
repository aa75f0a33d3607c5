#pragma once
// IEEE binary16 (fp16) and bfloat16 conversion. Round-to-nearest-even, exact for subnormals,
// infinities and NaN (NaN stays NaN, its sign kept). The bulk routines use F16C where the CPU
// has it, chosen at run time, and on arm64 the Advanced SIMD conversions every core has; the
// scalar ones are the portable reference, and every path gives its bits.
#include <cstdint>
#include <span>

namespace orion {

std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);
std::uint16_t float_to_bf16(float f);
float bf16_to_float(std::uint16_t b);

// Bulk conversions; `out` must have the same size as `in`.
void floats_to_halves(std::span<const float> in, std::span<std::uint16_t> out);
void halves_to_floats(std::span<const std::uint16_t> in, std::span<float> out);
void floats_to_bf16s(std::span<const float> in, std::span<std::uint16_t> out);
void bf16s_to_floats(std::span<const std::uint16_t> in, std::span<float> out);

// Round every value in place to the nearest fp16 (bf16) value, keeping it as a float: what the
// ANE does to each tensor it stores. Values beyond 65504 become +-inf, as on the device.
void round_to_half(std::span<float> values);
void round_to_bf16(std::span<float> values);

// True when the bulk routines use the F16C instructions on this machine.
bool half_uses_f16c();

}  // namespace orion
