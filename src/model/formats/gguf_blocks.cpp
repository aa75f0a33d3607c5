#include "model/formats/gguf_blocks.h"

#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/half.h"

namespace orion::model {

namespace {

// Every type of ggml's enum with its block (ggml.c's type_traits): the dequantised ones, and the
// others so that a file holding them is still checked tensor by tensor, and refused by name only
// when one of them is read.
constexpr GgmlTypeInfo kTypes[] = {
    {"F32", 1, 4, true},        {"F16", 1, 2, true},       {"Q4_0", 32, 18, true},   {"Q4_1", 32, 20, true},
    {},                         {},                        {"Q5_0", 32, 22, false},  {"Q5_1", 32, 24, false},
    {"Q8_0", 32, 34, true},     {"Q8_1", 32, 36, false},   {"Q2_K", 256, 84, false}, {"Q3_K", 256, 110, false},
    {"Q4_K", 256, 144, true},   {"Q5_K", 256, 176, true},  {"Q6_K", 256, 210, true}, {"Q8_K", 256, 292, false},
    {"IQ2_XXS", 256, 66, false}, {"IQ2_XS", 256, 74, false}, {"IQ3_XXS", 256, 98, false}, {"IQ1_S", 256, 50, false},
    {"IQ4_NL", 32, 18, false},  {"IQ3_S", 256, 110, false}, {"IQ2_S", 256, 82, false}, {"IQ4_XS", 256, 136, false},
    {"I8", 1, 1, false},        {"I16", 1, 2, false},      {"I32", 1, 4, false},     {"I64", 1, 8, false},
    {"F64", 1, 8, false},       {"IQ1_M", 256, 56, false}, {"BF16", 1, 2, true},     {},
    {},                         {},                        {"TQ1_0", 256, 54, false}, {"TQ2_0", 256, 66, false},
    {},                         {},                        {},                       {"MXFP4", 32, 17, false},
};

constexpr std::int64_t kSuper = 256;  // QK_K: the K-quants' super-block

float f16_at(const std::byte* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return half_to_float(h);
}

std::uint8_t u8(const std::byte* p, std::size_t i) { return static_cast<std::uint8_t>(p[i]); }

// Q4_0: f16 d, 16 bytes of nibbles; value (q - 8) * d, the low nibbles giving values 0..15 and
// the high nibbles 16..31.
void q4_0_block(const std::byte* b, float* y) {
  const float d = f16_at(b);
  const std::byte* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((u8(qs, j) & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((u8(qs, j) >> 4) - 8) * d;
  }
}

// Q4_1: f16 d and m, 16 bytes of nibbles; value q * d + m.
void q4_1_block(const std::byte* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  const std::byte* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(u8(qs, j) & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(u8(qs, j) >> 4) * d + m;
  }
}

// Q8_0: f16 d, 32 int8; value q * d.
void q8_0_block(const std::byte* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<std::int8_t>(u8(b + 2, j))) * d;
}

// The K-quants' 6-bit scale and min of sub-block j (0..7) from their 12 packed bytes: the first
// four sub-blocks in the low 6 bits of bytes 0-3 (scales) and 4-7 (mins), the last four in the
// nibbles of bytes 8-11 with their top 2 bits in the spare top bits of bytes 0-7 (ggml's
// get_scale_min_k4).
void scale_min_k4(int j, const std::byte* q, std::uint8_t& sc, std::uint8_t& m) {
  if (j < 4) {
    sc = u8(q, j) & 63;
    m = u8(q, j + 4) & 63;
  } else {
    sc = static_cast<std::uint8_t>((u8(q, j + 4) & 0xF) | ((u8(q, j - 4) >> 6) << 4));
    m = static_cast<std::uint8_t>((u8(q, j + 4) >> 4) | ((u8(q, j) >> 6) << 4));
  }
}

// Q4_K: f16 d, f16 dmin, 12 bytes of scales and mins, 128 bytes of nibbles. Each 64 values are
// two sub-blocks of 32 over the same 32 bytes, low nibbles first; value d*sc * q - dmin*m.
void q4_k_block(const std::byte* b, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const std::byte* scales = b + 4;
  const std::byte* q = b + 16;
  for (int j = 0, is = 0; j < kSuper; j += 64, is += 2, q += 32) {
    std::uint8_t sc, m;
    scale_min_k4(is, scales, sc, m);
    const float d1 = d * sc, m1 = dmin * m;
    scale_min_k4(is + 1, scales, sc, m);
    const float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(u8(q, l) & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(u8(q, l) >> 4) - m2;
  }
}

// Q5_K: Q4_K's layout with 32 bytes of fifth bits (qh) before the nibbles: bit 2k of qh[l] is
// the fifth bit of value l of the k-th 64's low sub-block, bit 2k+1 of its high one.
void q5_k_block(const std::byte* b, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const std::byte* scales = b + 4;
  const std::byte* qh = b + 16;
  const std::byte* ql = b + 48;
  unsigned u1 = 1, u2 = 2;
  for (int j = 0, is = 0; j < kSuper; j += 64, is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
    std::uint8_t sc, m;
    scale_min_k4(is, scales, sc, m);
    const float d1 = d * sc, m1 = dmin * m;
    scale_min_k4(is + 1, scales, sc, m);
    const float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((u8(ql, l) & 0xF) + (u8(qh, l) & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((u8(ql, l) >> 4) + (u8(qh, l) & u2 ? 16 : 0)) - m2;
  }
}

// Q6_K: 128 bytes of low nibbles (ql), 64 of 2-bit high parts (qh), 16 int8 scales, f16 d. Each
// 128 values take 64 bytes of ql and 32 of qh: value l (0..31) of its four quarters from the low
// nibbles of ql[l], ql[l+32], the high nibbles of the same, and bit pairs 0-1, 2-3, 4-5, 6-7 of
// qh[l]; value d * scale * (q - 32), a scale per 16 values.
void q6_k_block(const std::byte* b, float* y) {
  const std::byte* ql = b;
  const std::byte* qh = b + 128;
  const std::byte* sc = b + 192;
  const float d = f16_at(b + 208);
  for (int n = 0; n < kSuper; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((u8(ql, l) & 0xF) | (((u8(qh, l) >> 0) & 3) << 4)) - 32;
      const int q2 = ((u8(ql, l + 32) & 0xF) | (((u8(qh, l) >> 2) & 3) << 4)) - 32;
      const int q3 = ((u8(ql, l) >> 4) | (((u8(qh, l) >> 4) & 3) << 4)) - 32;
      const int q4 = ((u8(ql, l + 32) >> 4) | (((u8(qh, l) >> 6) & 3) << 4)) - 32;
      auto scale = [&](int k) { return static_cast<float>(static_cast<std::int8_t>(u8(sc, static_cast<std::size_t>(k)))); };
      y[l + 0] = d * scale(is + 0) * static_cast<float>(q1);
      y[l + 32] = d * scale(is + 2) * static_cast<float>(q2);
      y[l + 64] = d * scale(is + 4) * static_cast<float>(q3);
      y[l + 96] = d * scale(is + 6) * static_cast<float>(q4);
    }
  }
}

// 16-bit values through the bulk conversions, from an aligned copy when the data is not
// 2-aligned (an alignment of 1 is allowed by the format).
template <class Convert>
void widen16(std::span<const std::byte> in, std::span<float> out, Convert convert) {
  const std::size_t n = out.size();
  if (reinterpret_cast<std::uintptr_t>(in.data()) % alignof(std::uint16_t) == 0) {
    convert(std::span(reinterpret_cast<const std::uint16_t*>(in.data()), n), out);
    return;
  }
  std::vector<std::uint16_t> copy(n);
  std::memcpy(copy.data(), in.data(), n * 2);
  convert(std::span<const std::uint16_t>(copy), out);
}

}  // namespace

const GgmlTypeInfo* ggml_type_info(std::uint32_t type) {
  if (type >= std::size(kTypes) || kTypes[type].name.empty()) return nullptr;
  return &kTypes[type];
}

void dequantize_blocks(GgmlType type, std::span<const std::byte> blocks, std::span<float> out) {
  const GgmlTypeInfo* info = ggml_type_info(static_cast<std::uint32_t>(type));
  if (!info || !info->dequantised) throw Error("dequantize_blocks: a type Orion does not dequantise");
  const auto n = static_cast<std::int64_t>(out.size());
  if (n % info->block_values != 0 ||
      static_cast<std::int64_t>(blocks.size()) != n / info->block_values * info->block_bytes)
    throw Error("dequantize_blocks: " + std::string(info->name) + " blocks of " + std::to_string(blocks.size()) +
                " bytes for " + std::to_string(n) + " values");
  switch (type) {
    case GgmlType::f32: std::memcpy(out.data(), blocks.data(), blocks.size()); return;
    case GgmlType::f16: widen16(blocks, out, [](auto in, auto o) { halves_to_floats(in, o); }); return;
    case GgmlType::bf16: widen16(blocks, out, [](auto in, auto o) { bf16s_to_floats(in, o); }); return;
    default: break;
  }
  void (*block)(const std::byte*, float*) = nullptr;
  switch (type) {
    case GgmlType::q4_0: block = q4_0_block; break;
    case GgmlType::q4_1: block = q4_1_block; break;
    case GgmlType::q8_0: block = q8_0_block; break;
    case GgmlType::q4_k: block = q4_k_block; break;
    case GgmlType::q5_k: block = q5_k_block; break;
    case GgmlType::q6_k: block = q6_k_block; break;
    default: throw Error("dequantize_blocks: no block reader for " + std::string(info->name));
  }
  const std::int64_t count = n / info->block_values;
  for (std::int64_t i = 0; i < count; ++i)
    block(blocks.data() + i * info->block_bytes, out.data() + i * info->block_values);
}

}  // namespace orion::model
