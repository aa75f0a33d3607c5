#include "compile/blob/weight_blob_writer.h"

#include <cstring>
#include <limits>

#include "core/atomic_file.h"
#include "core/error.h"

namespace orion::compile {

namespace {

template <class T> void put_le(std::vector<std::byte>& out, std::size_t at, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    out[at + i] = static_cast<std::byte>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xffu);
}

}  // namespace

WeightBlobWriter::WeightBlobWriter() : bytes_(kBlobHeaderSize, std::byte{0}) {
  put_le<std::uint32_t>(bytes_, kHeaderVersionAt, kBlobVersion);
}

std::uint64_t WeightBlobWriter::add(BlobDType dtype, std::span<const std::byte> data,
                                    std::uint32_t unused_bits) {
  const std::string what = "weight blob writer: " + std::string(blob_dtype_name(dtype)) + " blob";
  if (data.empty()) throw Error(what + " is empty (a zero-length blob is rejected by the ANE's reader)");
  const int bits = blob_dtype_bits(dtype);
  if (is_sub_byte(dtype)) {
    const std::uint64_t used = data.size() * 8 - unused_bits;
    if (unused_bits > 7 || used % static_cast<std::uint64_t>(bits) != 0)
      throw Error(what + ": " + std::to_string(unused_bits) + " unused bits do not leave whole " +
                  std::to_string(bits) + "-bit values in " + std::to_string(data.size()) + " bytes");
  } else {
    if (unused_bits != 0) throw Error(what + ": unused bits are only for sub-byte types");
    if (data.size() % static_cast<std::size_t>(bits / 8) != 0)
      throw Error(what + ": " + std::to_string(data.size()) + " bytes are not whole elements");
  }
  if (count_ == std::numeric_limits<std::uint32_t>::max()) throw Error(what + ": too many blobs");

  const std::uint64_t record = align_blob(bytes_.size());
  const std::uint64_t data_at = record + kBlobRecordSize;
  bytes_.resize(static_cast<std::size_t>(data_at), std::byte{0});  // zero gap and record
  put_le<std::uint32_t>(bytes_, record + kRecordSentinelAt, kBlobSentinel);
  put_le<std::uint32_t>(bytes_, record + kRecordDTypeAt, static_cast<std::uint32_t>(dtype));
  put_le<std::uint64_t>(bytes_, record + kRecordSizeAt, data.size());
  put_le<std::uint64_t>(bytes_, record + kRecordOffsetAt, data_at);
  put_le<std::uint64_t>(bytes_, record + kRecordUnusedBitsAt, unused_bits);
  bytes_.insert(bytes_.end(), data.begin(), data.end());
  put_le<std::uint32_t>(bytes_, kHeaderCountAt, ++count_);
  return record;
}

std::uint64_t WeightBlobWriter::add_fp16(std::span<const std::uint16_t> halves) {
  std::vector<std::byte> le(halves.size() * 2);
  for (std::size_t i = 0; i < halves.size(); ++i) put_le<std::uint16_t>(le, 2 * i, halves[i]);
  return add(BlobDType::fp16, le);
}

std::uint64_t WeightBlobWriter::add_fp32(std::span<const float> values) {
  std::vector<std::byte> le(values.size() * 4);
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &values[i], 4);
    put_le<std::uint32_t>(le, 4 * i, bits);
  }
  return add(BlobDType::fp32, le);
}

std::uint64_t WeightBlobWriter::add_packed(BlobDType dtype, std::span<const std::int32_t> values) {
  if (!is_sub_byte(dtype))
    throw Error("weight blob writer: " + std::string(blob_dtype_name(dtype)) + " is not a sub-byte type");
  const PackedBits packed = pack_bits(values, blob_dtype_bits(dtype));
  return add(dtype, packed.bytes, packed.unused_bits);
}

void WeightBlobWriter::write(const std::string& path) const { write_file_atomic(path, bytes_); }

}  // namespace orion::compile
