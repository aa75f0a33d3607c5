#pragma once
// The layout of a weights/weight.bin file ("blob storage", version 2), as in
// docs/ane/FORMATS.md, "weights/weight.bin": a 64-byte header, then per blob a 64-byte metadata record and its
// data, every record and data block starting at a multiple of 64. Shared by the writer and the
// reader so that both agree on every constant.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace orion::compile {

inline constexpr std::uint64_t kBlobAlignment = 64;
inline constexpr std::uint64_t kBlobHeaderSize = 64;
inline constexpr std::uint64_t kBlobRecordSize = 64;
inline constexpr std::uint32_t kBlobVersion = 2;
inline constexpr std::uint32_t kBlobSentinel = 0xDEADBEEF;

// Byte offsets of the fields (little-endian).
inline constexpr std::size_t kHeaderCountAt = 0;      // uint32
inline constexpr std::size_t kHeaderVersionAt = 4;    // uint32
inline constexpr std::size_t kRecordSentinelAt = 0;   // uint32
inline constexpr std::size_t kRecordDTypeAt = 4;      // uint32
inline constexpr std::size_t kRecordSizeAt = 8;       // uint64
inline constexpr std::size_t kRecordOffsetAt = 16;    // uint64: absolute offset of the data
inline constexpr std::size_t kRecordUnusedBitsAt = 24;  // uint64

// The data type codes of a metadata record.
enum class BlobDType : std::uint32_t {
  fp16 = 1, fp32 = 2, uint8 = 3, int8 = 4, bf16 = 5, int16 = 6, uint16 = 7, int4 = 8,
  uint1 = 9, uint2 = 10, uint4 = 11, uint3 = 12, uint6 = 13, int32 = 14, uint32 = 15,
  fp8e4m3 = 16, fp8e5m2 = 17,
};

inline constexpr std::uint32_t kMaxBlobDTypeCode = 17;

// The type with code `code`, or nullopt for a code Apple's reader does not know.
constexpr std::optional<BlobDType> blob_dtype_from_code(std::uint32_t code) {
  if (code < 1 || code > kMaxBlobDTypeCode) return std::nullopt;
  return static_cast<BlobDType>(code);
}

// Bits per element: 1, 2, 3, 4 or 6 for the sub-byte types, else a multiple of 8.
constexpr int blob_dtype_bits(BlobDType t) {
  switch (t) {
    case BlobDType::uint1: return 1;
    case BlobDType::uint2: return 2;
    case BlobDType::uint3: return 3;
    case BlobDType::int4: case BlobDType::uint4: return 4;
    case BlobDType::uint6: return 6;
    case BlobDType::uint8: case BlobDType::int8: case BlobDType::fp8e4m3: case BlobDType::fp8e5m2:
      return 8;
    case BlobDType::fp16: case BlobDType::bf16: case BlobDType::int16: case BlobDType::uint16:
      return 16;
    case BlobDType::fp32: case BlobDType::int32: case BlobDType::uint32: return 32;
  }
  return 0;
}

constexpr bool is_sub_byte(BlobDType t) { return blob_dtype_bits(t) < 8; }

// The values a sub-byte type holds: int4 is two's complement [-8, 7], the uintN types [0, 2^N).
constexpr std::int32_t sub_byte_min(BlobDType t) { return t == BlobDType::int4 ? -8 : 0; }
constexpr std::int32_t sub_byte_max(BlobDType t) {
  return t == BlobDType::int4 ? 7 : (std::int32_t{1} << blob_dtype_bits(t)) - 1;
}

constexpr std::string_view blob_dtype_name(BlobDType t) {
  switch (t) {
    case BlobDType::fp16: return "fp16";
    case BlobDType::fp32: return "fp32";
    case BlobDType::uint8: return "uint8";
    case BlobDType::int8: return "int8";
    case BlobDType::bf16: return "bf16";
    case BlobDType::int16: return "int16";
    case BlobDType::uint16: return "uint16";
    case BlobDType::int4: return "int4";
    case BlobDType::uint1: return "uint1";
    case BlobDType::uint2: return "uint2";
    case BlobDType::uint4: return "uint4";
    case BlobDType::uint3: return "uint3";
    case BlobDType::uint6: return "uint6";
    case BlobDType::int32: return "int32";
    case BlobDType::uint32: return "uint32";
    case BlobDType::fp8e4m3: return "fp8e4m3";
    case BlobDType::fp8e5m2: return "fp8e5m2";
  }
  return "?";
}

constexpr std::uint64_t align_blob(std::uint64_t offset) {
  return (offset + kBlobAlignment - 1) / kBlobAlignment * kBlobAlignment;
}

// Sub-byte values packed from the lowest bit up, crossing byte boundaries, as Apple's writer
// does (5 x uint4 values 1..5 -> bytes 21 43 05). Each value keeps its low `bits` bits, so
// negative int4 values are stored in two's complement.
struct PackedBits {
  std::vector<std::byte> bytes;  // ceil(n * bits / 8)
  std::uint32_t unused_bits = 0;  // in the last byte: 8 - (n * bits mod 8), or 0
};
PackedBits pack_bits(std::span<const std::int32_t> values, int bits);
// The inverse: `count` values of `bits` bits each, zero-extended.
std::vector<std::uint32_t> unpack_bits(std::span<const std::byte> bytes, int bits, std::size_t count);
// `count` values of sub-byte type `t`: int4 sign-extended (as Apple's reader reads it), the
// unsigned types zero-extended.
std::vector<std::int32_t> unpack_values(std::span<const std::byte> bytes, BlobDType t, std::size_t count);

}  // namespace orion::compile
