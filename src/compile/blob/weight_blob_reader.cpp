#include "compile/blob/weight_blob_reader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/mapped_file.h"

namespace orion::compile {

namespace {

template <class T> T get_le(std::span<const std::byte> b, std::uint64_t at) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    v |= static_cast<std::uint64_t>(std::to_integer<unsigned>(b[static_cast<std::size_t>(at) + i])) << (8 * i);
  return static_cast<T>(v);
}

std::string num(std::uint64_t v) { return std::to_string(v); }

[[noreturn]] void fail_at(const std::string& file, std::uint64_t at, const std::string& message) {
  throw Error::at_offset(file, at, message);
}

// The blob type a tensor of `dtype` is stored as, or nullopt for bool (no blob type).
std::optional<BlobDType> blob_type_of(DType dtype) {
  switch (dtype) {
    case DType::f16: return BlobDType::fp16;
    case DType::f32: return BlobDType::fp32;
    case DType::bf16: return BlobDType::bf16;
    case DType::i32: return BlobDType::int32;
    case DType::i8: return BlobDType::int8;
    case DType::u8: return BlobDType::uint8;
    case DType::boolean: case DType::u32: break;
  }
  return std::nullopt;
}

}  // namespace

std::uint64_t BlobRecord::element_count() const {
  return (size * 8 - unused_bits) / static_cast<std::uint64_t>(blob_dtype_bits(dtype));
}

WeightBlobReader::WeightBlobReader(std::string name, std::span<const std::byte> bytes,
                                   std::shared_ptr<const void> owner)
    : name_(std::move(name)), bytes_(bytes), owner_(std::move(owner)) {
  walk();
}

WeightBlobReader WeightBlobReader::open(const std::string& path) {
  auto file = MappedFile::open(path);
  const auto bytes = file->bytes();
  return WeightBlobReader(path, bytes, std::move(file));
}

WeightBlobReader WeightBlobReader::from_bytes(std::span<const std::byte> bytes, std::string name) {
  // Aligned storage, so that tensors viewing the data are aligned like the mapped file's.
  auto buffer = Buffer::allocate(bytes.size());
  if (!bytes.empty()) std::memcpy(buffer->data(), bytes.data(), bytes.size());
  const std::span<const std::byte> view(buffer->data(), bytes.size());
  return WeightBlobReader(std::move(name), view, std::move(buffer));
}

void WeightBlobReader::warn(std::uint64_t at, const std::string& what) const {
  std::string w = Error::at_offset(name_, at, what).what();
  if (std::find(warnings_.begin(), warnings_.end(), w) == warnings_.end()) warnings_.push_back(std::move(w));
}

bool WeightBlobReader::within(std::uint64_t offset, std::uint64_t bytes) const {
  return offset <= bytes_.size() && bytes <= bytes_.size() - offset;
}

BlobRecord WeightBlobReader::read_record(std::uint64_t pos) const {
  const std::uint64_t size = bytes_.size();
  if (pos > size || size - pos < kBlobRecordSize)
    fail_at(name_, pos, "truncated metadata record: " + num(pos > size ? 0 : size - pos) + " bytes left, a record has 64");
  const auto sentinel = get_le<std::uint32_t>(bytes_, pos + kRecordSentinelAt);
  if (sentinel != kBlobSentinel) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08X", sentinel);
    fail_at(name_, pos, "metadata record has sentinel " + std::string(hex) + ", expected 0xDEADBEEF");
  }
  const auto code = get_le<std::uint32_t>(bytes_, pos + kRecordDTypeAt);
  const std::optional<BlobDType> dtype = blob_dtype_from_code(code);
  if (!dtype) fail_at(name_, pos + kRecordDTypeAt, "unknown blob data type code " + num(code) + " (known: 1 to 17)");
  const auto data_size = get_le<std::uint64_t>(bytes_, pos + kRecordSizeAt);
  auto data_offset = get_le<std::uint64_t>(bytes_, pos + kRecordOffsetAt);
  const auto unused = get_le<std::uint64_t>(bytes_, pos + kRecordUnusedBitsAt);
  if (data_offset == 0) {
    warn(pos + kRecordOffsetAt, "the record gives no data offset: its data is taken to follow it, at " +
                                    num(pos + kBlobRecordSize) + " (files written so ran on the ANE)");
    data_offset = pos + kBlobRecordSize;
  } else if (data_offset != pos + kBlobRecordSize) {
    warn(pos + kRecordOffsetAt, "data offset " + num(data_offset) + ", where writers put " + num(pos + kBlobRecordSize) +
                                    " (the record's offset + 64); the record's value is used");
  }
  const int bits = blob_dtype_bits(*dtype);
  const std::string type(blob_dtype_name(*dtype));
  if (is_sub_byte(*dtype)) {
    if (data_size != 0 && (unused > 7 || (data_size * 8 - unused) % static_cast<std::uint64_t>(bits) != 0))
      fail_at(name_, pos + kRecordUnusedBitsAt, num(unused) + " unused bits do not leave whole " + type + " values in " +
                                                    num(data_size) + " bytes");
  } else if (unused != 0) {
    fail_at(name_, pos + kRecordUnusedBitsAt, num(unused) + " unused bits given for " + type + ", which is not a sub-byte type");
  }
  BlobRecord r;
  r.record_offset = pos;
  r.dtype = *dtype;
  r.data_offset = data_offset;
  r.size = data_size;
  r.unused_bits = static_cast<std::uint32_t>(unused);
  return r;
}

void WeightBlobReader::walk() {
  const std::uint64_t size = bytes_.size();
  if (size < kBlobHeaderSize)
    fail_at(name_, 0, "the file has " + num(size) + " bytes, fewer than the 64-byte header of a weight blob file");
  const auto version = get_le<std::uint32_t>(bytes_, kHeaderVersionAt);
  if (version != kBlobVersion)
    fail_at(name_, kHeaderVersionAt, "blob storage version " + num(version) + ", expected 2");
  const auto count = get_le<std::uint32_t>(bytes_, kHeaderCountAt);

  std::uint64_t pos = kBlobHeaderSize;
  bool stopped = false;
  while (pos < size) {
    // Past the first record the walk goes where the previous record's size points. A size
    // larger than the data (files that ran on the ANE) points into data or past the end: the
    // walk stops, and the program's offsets find the blobs, each read at its type's size.
    if (!records_.empty() && (size - pos < kBlobRecordSize ||
                              get_le<std::uint32_t>(bytes_, pos + kRecordSentinelAt) != kBlobSentinel)) {
      stopped = true;
      const BlobRecord& prev = records_.back();
      warn(prev.record_offset + kRecordSizeAt,
           "no blob record starts at " + num(pos) + ", where the record's size of " + num(prev.size) +
               " bytes ends: the blobs after it are found by the program's offsets");
      break;
    }
    BlobRecord r = read_record(pos);
    if (r.size == 0) {  // no size: where the next record starts is the program's to say
      stopped = true;
      warn(pos + kRecordSizeAt, "the record gives no size: the blobs after it are found by the program's offsets");
      break;
    }
    if (!within(r.data_offset, r.size)) {
      stopped = true;
      warn(pos + kRecordSizeAt, "blob of " + num(r.size) + " bytes at " + num(r.data_offset) +
                                    " runs past the end of the file (" + num(size) +
                                    " bytes): a program reads from it the bytes its type needs, if the file holds them");
      break;
    }
    const int bits = blob_dtype_bits(r.dtype);
    if (!is_sub_byte(r.dtype) && r.size % static_cast<std::uint64_t>(bits / 8) != 0)
      fail_at(name_, pos + kRecordSizeAt,
              num(r.size) + " bytes are not a whole number of " + std::string(blob_dtype_name(r.dtype)) + " values");
    r.data = bytes_.subspan(static_cast<std::size_t>(r.data_offset), static_cast<std::size_t>(r.size));
    records_.push_back(r);
    if (r.data_offset != pos + kBlobRecordSize) {  // data elsewhere: where the next record is is not known
      stopped = true;
      warn(pos + kRecordOffsetAt, "the walk stops at a record whose data is not after it: the blobs after it are found "
                                  "by the program's offsets");
      break;
    }
    pos = align_blob(r.data_offset + r.size);  // no overflow: data_offset + size <= file size; always past pos
  }
  if (!stopped && records_.size() != count)
    warn(kHeaderCountAt, "the header counts " + num(count) + " blobs, the file holds " + num(records_.size()) +
                             " (files written so ran on the ANE)");
}

const BlobRecord& WeightBlobReader::at(std::uint64_t record_offset) const {
  const auto it = std::lower_bound(records_.begin(), records_.end(), record_offset,
                                   [](const BlobRecord& r, std::uint64_t off) { return r.record_offset < off; });
  if (it == records_.end() || it->record_offset != record_offset) {
    std::string hint;
    const bool is_data = std::any_of(records_.begin(), records_.end(),
                                     [&](const BlobRecord& r) { return r.data_offset == record_offset; });
    if (is_data) hint = " (that is where a blob's data starts: BLOBFILE names its record, 64 bytes before)";
    throw Error::at_offset(name_, record_offset, "no blob record starts here" + hint);
  }
  return *it;
}

BlobRecord WeightBlobReader::record_for(std::uint64_t record_offset, BlobDType want, std::string_view want_name,
                                        std::uint64_t want_bytes, const std::string& tensor_type) const {
  const auto it = std::lower_bound(records_.begin(), records_.end(), record_offset,
                                   [](const BlobRecord& r, std::uint64_t off) { return r.record_offset < off; });
  BlobRecord r;
  if (it != records_.end() && it->record_offset == record_offset) {
    r = *it;
  } else {
    // Past a record without a size, or a file whose records do not follow each other: the
    // record is read where the program says it is, as the hardware reads it.
    const bool is_data = std::any_of(records_.begin(), records_.end(),
                                     [&](const BlobRecord& x) { return x.data_offset == record_offset; });
    if (is_data || record_offset < kBlobHeaderSize)
      throw Error::at_offset(name_, record_offset,
                             std::string("no blob record starts here") +
                                 (is_data ? " (that is where a blob's data starts: BLOBFILE names its record, 64 bytes before)" : ""));
    r = read_record(record_offset);
  }
  if (want != r.dtype)
    warn(record_offset + kRecordDTypeAt, "blob type code " + std::string(blob_dtype_name(r.dtype)) + " read as " +
                                             std::string(want_name) + ", the program's type (files written so ran on the ANE)");
  // The device reads the bytes the program's type and shape give, wherever the size field
  // points: a size of 0, or one larger than that, ran; a smaller one cannot hold the tensor.
  if (r.size == 0)
    warn(record_offset + kRecordSizeAt, "the record gives no size: the program's " + num(want_bytes) + " bytes are used");
  else if (r.size < want_bytes)
    throw Error::at_offset(name_, record_offset,
                           "blob of " + num(r.size) + " bytes does not hold " + tensor_type + " (" + num(want_bytes) + " bytes)");
  else if (r.size > want_bytes)
    warn(record_offset + kRecordSizeAt, "the record gives " + num(r.size) + " bytes, the program's " + tensor_type +
                                            " needs " + num(want_bytes) +
                                            ": those are read, the rest ignored (files written so ran on the ANE)");
  if (!within(r.data_offset, want_bytes))
    throw Error::at_offset(name_, record_offset + kRecordSizeAt,
                           tensor_type + " (" + num(want_bytes) + " bytes) at " + num(r.data_offset) +
                               " runs past the end of the file (" + num(bytes_.size()) + " bytes)");
  return r;
}

Tensor WeightBlobReader::tensor(std::uint64_t record_offset, DType dtype, const Shape& shape) const {
  const std::uint64_t numel = static_cast<std::uint64_t>(shape_numel(shape));
  const std::uint64_t want_bytes = numel * dtype_size(dtype);
  const std::optional<BlobDType> want = blob_type_of(dtype);
  if (!want) throw Error::at_offset(name_, record_offset, "no blob type holds " + std::string(dtype_name(dtype)));
  const std::string tensor_type = std::string(dtype_name(dtype)) + shape_str(shape);
  const BlobRecord r = record_for(record_offset, *want, dtype_name(dtype), want_bytes, tensor_type);
  auto buffer = Buffer::borrow(const_cast<std::byte*>(bytes_.data()), bytes_.size(), owner_);
  return Tensor::view_of(dtype, shape, std::move(buffer), static_cast<std::size_t>(r.data_offset));
}

Tensor WeightBlobReader::sub_byte_tensor(std::uint64_t record_offset, BlobDType type, const Shape& shape) const {
  if (!is_sub_byte(type))
    throw Error::at_offset(name_, record_offset, std::string(blob_dtype_name(type)) + " is not a sub-byte type");
  const auto numel = static_cast<std::uint64_t>(shape_numel(shape));
  const std::uint64_t want_bytes = (numel * static_cast<std::uint64_t>(blob_dtype_bits(type)) + 7) / 8;
  const std::string tensor_type = std::string(blob_dtype_name(type)) + shape_str(shape);
  const BlobRecord r = record_for(record_offset, type, blob_dtype_name(type), want_bytes, tensor_type);
  const std::vector<std::int32_t> v = unpack_values(
      bytes_.subspan(static_cast<std::size_t>(r.data_offset), static_cast<std::size_t>(want_bytes)), type,
      static_cast<std::size_t>(numel));
  const bool is_signed = sub_byte_min(type) < 0;
  Tensor out(is_signed ? DType::i8 : DType::u8, shape);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (is_signed) out.data<std::int8_t>()[i] = static_cast<std::int8_t>(v[i]);
    else out.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(v[i]);
  }
  return out;
}

}  // namespace orion::compile
