#include "compile/blob/weight_blob_writer.h"

#include <cstring>
#include <limits>

#include "core/atomic_file.h"
#include "core/error.h"

namespace orion::compile {

namespace {

template <class T> void put_le(std::span<std::byte> out, std::size_t at, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    out[at + i] = static_cast<std::byte>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xffu);
}

// Refuses what Apple's reader would: an empty blob, a size that is not whole elements, unused
// bits that do not fit the type.
void check_blob(BlobDType dtype, std::uint64_t size, std::uint32_t unused_bits) {
  const std::string what = "weight blob writer: " + std::string(blob_dtype_name(dtype)) + " blob";
  if (size == 0) throw Error(what + " is empty (a zero-length blob is rejected by the ANE's reader)");
  const int bits = blob_dtype_bits(dtype);
  if (is_sub_byte(dtype)) {
    const std::uint64_t used = size * 8 - unused_bits;
    if (unused_bits > 7 || used % static_cast<std::uint64_t>(bits) != 0)
      throw Error(what + ": " + std::to_string(unused_bits) + " unused bits do not leave whole " +
                  std::to_string(bits) + "-bit values in " + std::to_string(size) + " bytes");
  } else {
    if (unused_bits != 0) throw Error(what + ": unused bits are only for sub-byte types");
    if (size % static_cast<std::uint64_t>(bits / 8) != 0)
      throw Error(what + ": " + std::to_string(size) + " bytes are not whole elements");
  }
}

// The zeros from `end` (the file so far) to the blob's record, and the record, for data of
// `size` bytes; `record` is where the record goes.
std::vector<std::byte> gap_and_record(std::uint64_t end, std::uint64_t record, BlobDType dtype, std::uint64_t size,
                                      std::uint32_t unused_bits) {
  std::vector<std::byte> out(static_cast<std::size_t>(record + kBlobRecordSize - end), std::byte{0});
  const std::span<std::byte> r = std::span(out).subspan(static_cast<std::size_t>(record - end));
  put_le<std::uint32_t>(r, kRecordSentinelAt, kBlobSentinel);
  put_le<std::uint32_t>(r, kRecordDTypeAt, static_cast<std::uint32_t>(dtype));
  put_le<std::uint64_t>(r, kRecordSizeAt, size);
  put_le<std::uint64_t>(r, kRecordOffsetAt, record + kBlobRecordSize);
  put_le<std::uint64_t>(r, kRecordUnusedBitsAt, unused_bits);
  return out;
}

std::vector<std::byte> header(std::uint32_t count) {
  std::vector<std::byte> h(kBlobHeaderSize, std::byte{0});
  put_le<std::uint32_t>(h, kHeaderVersionAt, kBlobVersion);
  put_le<std::uint32_t>(h, kHeaderCountAt, count);
  return h;
}

}  // namespace

WeightBlobWriter::WeightBlobWriter() : bytes_(header(0)) {}

std::uint64_t WeightBlobWriter::add(BlobDType dtype, std::span<const std::byte> data,
                                    std::uint32_t unused_bits) {
  check_blob(dtype, data.size(), unused_bits);
  if (count_ == std::numeric_limits<std::uint32_t>::max())
    throw Error("weight blob writer: " + std::string(blob_dtype_name(dtype)) + " blob: too many blobs");
  const std::uint64_t record = align_blob(bytes_.size());
  const std::vector<std::byte> head = gap_and_record(bytes_.size(), record, dtype, data.size(), unused_bits);
  bytes_.insert(bytes_.end(), head.begin(), head.end());
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
  const std::int32_t lo = sub_byte_min(dtype), hi = sub_byte_max(dtype);
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] < lo || values[i] > hi)
      throw Error("weight blob writer: " + std::string(blob_dtype_name(dtype)) + " blob: value " + std::to_string(values[i]) +
                  " at element " + std::to_string(i) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  const PackedBits packed = pack_bits(values, blob_dtype_bits(dtype));
  return add(dtype, packed.bytes, packed.unused_bits);
}

void WeightBlobWriter::write(const std::string& path) const { write_file_atomic(path, bytes_); }

WeightBlobStream::WeightBlobStream(std::string path, std::uint32_t count) : file_(std::move(path)), count_(count) {
  file_.write(header(count));
}

std::uint64_t WeightBlobStream::begin(BlobDType dtype, std::uint64_t bytes) {
  if (left_ != 0)
    throw Error::in_file(file_.path(), "blob " + std::to_string(begun_) + " begun before the last one's " +
                                           std::to_string(left_) + " bytes were written");
  if (begun_ == count_) throw Error::in_file(file_.path(), "more than the " + std::to_string(count_) + " blobs declared");
  check_blob(dtype, bytes, 0);
  const std::uint64_t record = align_blob(at_);
  file_.write(gap_and_record(at_, record, dtype, bytes, 0));
  at_ = record + kBlobRecordSize + bytes;
  left_ = bytes;
  ++begun_;
  return record;
}

void WeightBlobStream::write(std::span<const std::byte> data) {
  if (data.size() > left_)
    throw Error::in_file(file_.path(), "blob " + std::to_string(begun_ - 1) + " given " + std::to_string(data.size()) +
                                           " bytes where " + std::to_string(left_) + " were left");
  file_.write(data);
  left_ -= data.size();
}

void WeightBlobStream::commit() {
  if (left_ != 0 || begun_ != count_)
    throw Error::in_file(file_.path(), "incomplete: " + std::to_string(begun_) + " of " + std::to_string(count_) +
                                           " blobs begun, " + std::to_string(left_) + " bytes of the last missing");
  file_.commit();
}

}  // namespace orion::compile
