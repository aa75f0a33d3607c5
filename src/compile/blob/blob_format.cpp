#include "compile/blob/blob_format.h"

#include "core/error.h"

namespace orion::compile {

PackedBits pack_bits(std::span<const std::int32_t> values, int bits) {
  if (bits < 1 || bits > 7) throw Error("pack_bits: " + std::to_string(bits) + " bits is not a sub-byte width");
  const std::uint64_t total = static_cast<std::uint64_t>(values.size()) * static_cast<std::uint64_t>(bits);
  PackedBits out;
  out.bytes.assign(static_cast<std::size_t>((total + 7) / 8), std::byte{0});
  const std::uint32_t mask = (1u << bits) - 1;
  if (bits == 4) {  // 4-bit weights, the common case: two a byte, the first in the low nibble
    for (std::size_t i = 0; i < values.size(); ++i)
      out.bytes[i / 2] |= std::byte((static_cast<std::uint32_t>(values[i]) & mask) << (i % 2 ? 4 : 0));
    out.unused_bits = values.size() % 2 ? 4 : 0;
    return out;
  }
  std::uint64_t at = 0;  // bit position
  for (std::int32_t v : values) {
    const std::uint32_t u = static_cast<std::uint32_t>(v) & mask;
    for (int b = 0; b < bits; ++b, ++at)
      if ((u >> b) & 1u) out.bytes[static_cast<std::size_t>(at / 8)] |= std::byte(1u << (at % 8));
  }
  out.unused_bits = total % 8 == 0 ? 0 : static_cast<std::uint32_t>(8 - total % 8);
  return out;
}

std::vector<std::uint32_t> unpack_bits(std::span<const std::byte> bytes, int bits, std::size_t count) {
  if (bits < 1 || bits > 7) throw Error("unpack_bits: " + std::to_string(bits) + " bits is not a sub-byte width");
  const std::uint64_t total = static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(bits);
  if ((total + 7) / 8 > bytes.size())
    throw Error("unpack_bits: " + std::to_string(count) + " values of " + std::to_string(bits) +
                " bits need more than " + std::to_string(bytes.size()) + " bytes");
  std::vector<std::uint32_t> out(count, 0);
  if (bits == 4) {
    for (std::size_t i = 0; i < count; ++i) out[i] = (std::to_integer<std::uint32_t>(bytes[i / 2]) >> (i % 2 ? 4 : 0)) & 0xfu;
    return out;
  }
  std::uint64_t at = 0;
  for (std::uint32_t& v : out)
    for (int b = 0; b < bits; ++b, ++at)
      if ((std::to_integer<unsigned>(bytes[static_cast<std::size_t>(at / 8)]) >> (at % 8)) & 1u) v |= 1u << b;
  return out;
}

std::vector<std::int32_t> unpack_values(std::span<const std::byte> bytes, BlobDType t, std::size_t count) {
  if (!is_sub_byte(t)) throw Error("unpack_values: " + std::string(blob_dtype_name(t)) + " is not a sub-byte type");
  const int bits = blob_dtype_bits(t);
  const std::vector<std::uint32_t> u = unpack_bits(bytes, bits, count);
  std::vector<std::int32_t> out(count);
  const std::uint32_t sign = t == BlobDType::int4 ? 1u << (bits - 1) : 0u;
  for (std::size_t i = 0; i < count; ++i)
    out[i] = (u[i] & sign) != 0 ? static_cast<std::int32_t>(u[i]) - (std::int32_t{1} << bits) : static_cast<std::int32_t>(u[i]);
  return out;
}

}  // namespace orion::compile
