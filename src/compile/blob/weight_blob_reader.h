#pragma once
// Reads a weights/weight.bin file (blob storage version 2, docs/ane/FORMATS.md). The file is
// untrusted: the constructor walks every blob and checks every field Apple's reader checks
// (version 2, the sentinel, a known type code) and the ones a bad file could use to read out
// of bounds (data offset = record + 64, sizes within the file, whole elements, unused bits,
// the header's count against the records found). Reserved fields and gaps are ignored, as
// Apple's reader ignores them (older writers left them uninitialised).
//
// Errors are orion::Error "FILE: at byte N: problem".
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compile/blob/blob_format.h"
#include "core/tensor.h"

namespace orion::compile {

struct BlobRecord {
  std::uint64_t record_offset = 0;  // what BLOBFILE(offset = ...) names
  BlobDType dtype = BlobDType::fp16;
  std::uint64_t data_offset = 0;    // record_offset + 64
  std::uint64_t size = 0;           // bytes, > 0
  std::uint32_t unused_bits = 0;    // sub-byte types only
  std::span<const std::byte> data;  // into the reader's storage

  // Elements held: size * 8 / bits for byte types, (size * 8 - unused_bits) / bits otherwise.
  std::uint64_t element_count() const;
};

class WeightBlobReader {
 public:
  // Maps the file at `path` (zero copy).
  static WeightBlobReader open(const std::string& path);
  // Copies `bytes` into aligned storage; `name` stands for the file in messages.
  static WeightBlobReader from_bytes(std::span<const std::byte> bytes, std::string name);

  const std::string& name() const { return name_; }
  std::uint32_t count() const { return static_cast<std::uint32_t>(records_.size()); }
  const std::vector<BlobRecord>& records() const { return records_; }

  // The blob whose record starts at `record_offset`; throws orion::Error when none does.
  const BlobRecord& at(std::uint64_t record_offset) const;
  // The blob at `record_offset` as a tensor of `dtype` and `shape` sharing the reader's storage
  // (it keeps it alive). f16 needs an fp16 blob, f32 fp32, bf16 bf16, i32 int32, i8 int8,
  // u8 uint8; the blob's size must be the tensor's byte size. Throws orion::Error otherwise.
  Tensor tensor(std::uint64_t record_offset, DType dtype, const Shape& shape) const;

 private:
  WeightBlobReader(std::string name, std::span<const std::byte> bytes, std::shared_ptr<const void> owner);
  void walk();

  std::string name_;
  std::span<const std::byte> bytes_;
  std::shared_ptr<const void> owner_;  // keeps bytes_ alive (a MappedFile or a Buffer)
  std::vector<BlobRecord> records_;    // in file order, so sorted by record_offset
};

}  // namespace orion::compile
