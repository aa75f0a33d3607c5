#pragma once
// Reads a weights/weight.bin file (blob storage version 2, docs/ane/FORMATS.md). The file is
// untrusted, and the reader accepts what the hardware was seen to accept: it checks what
// coremltools' MILBlob reader checks (the format version, each record's sentinel) and what
// keeps every read in bounds (the bytes a program reads within the file, whole elements, unused
// bits), and it tolerates, with a warning, the fields that files which ran on the ANE got wrong:
// a header count that does not match the blobs, a record without a data offset (its data
// follows it), a record without a size or with a size larger than its data (the program's type
// and shape give the bytes read, as the device reads them), a type code other than the one the
// program reads (the program's type is what is used). Reserved fields and gaps are ignored.
//
// Errors are orion::Error "FILE: at byte N: problem"; warnings() lists the tolerated oddities
// in the same form.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compile/blob/blob_format.h"
#include "core/tensor.h"

namespace orion::compile {

struct BlobRecord {
  std::uint64_t record_offset = 0;  // what BLOBFILE(offset = ...) names
  BlobDType dtype = BlobDType::fp16;
  std::uint64_t data_offset = 0;    // record_offset + 64 unless the record says otherwise
  std::uint64_t size = 0;           // the size field: 0 when left out; may be more than a program reads
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
  // The blobs found walking the file from its header, each within the file: all of them, unless
  // a record stops the walk (no size, a size that runs past the end of the file or to where no
  // record starts, data elsewhere); a program's BLOBFILE offsets still find the ones after it.
  const std::vector<BlobRecord>& records() const { return records_; }
  // Tolerated oddities, "FILE: at byte N: ...", each once.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // The blob whose record starts at `record_offset`; throws orion::Error when none does.
  const BlobRecord& at(std::uint64_t record_offset) const;
  // The blob at `record_offset` as a tensor of `dtype` and `shape` sharing the reader's storage
  // (it keeps it alive): the tensor's bytes from the record's data offset. The record there
  // must have the sentinel, the tensor's bytes must lie within the file, and its size, when it
  // gives one, must be at least the tensor's byte size: a larger size is a warning, as is a type
  // code that is not the dtype's (f16: fp16, f32: fp32, bf16, i32: int32, i8: int8, u8: uint8).
  Tensor tensor(std::uint64_t record_offset, DType dtype, const Shape& shape) const;
  // The blob at `record_offset` as values of a sub-byte type (int4, uint1..uint6) packed from the
  // lowest bit up, unpacked one per byte into a tensor of `shape`: i8 for int4 (sign-extended),
  // u8 for the unsigned types; a copy. The checks and tolerances are tensor()'s, for the
  // ceil(n * bits / 8) bytes the values take.
  Tensor sub_byte_tensor(std::uint64_t record_offset, BlobDType type, const Shape& shape) const;

 private:
  WeightBlobReader(std::string name, std::span<const std::byte> bytes, std::shared_ptr<const void> owner);
  void walk();
  // The fields of the record at `pos`, its data left empty: how many bytes are read is the
  // walk's or the program's to say. Throws for a record no reader can use (no sentinel, an
  // unknown type code, unused bits that do not fit the type).
  BlobRecord read_record(std::uint64_t pos) const;
  // The record at `record_offset` checked for a read of `want_bytes` bytes of type `want`
  // (`want_name` and `tensor_type` for messages): tensor()'s checks and warnings.
  BlobRecord record_for(std::uint64_t record_offset, BlobDType want, std::string_view want_name, std::uint64_t want_bytes,
                        const std::string& tensor_type) const;
  // Whether `bytes` bytes from `offset` lie within the file.
  bool within(std::uint64_t offset, std::uint64_t bytes) const;
  void warn(std::uint64_t at, const std::string& what) const;

  std::string name_;
  std::span<const std::byte> bytes_;
  std::shared_ptr<const void> owner_;  // keeps bytes_ alive (a MappedFile or a Buffer)
  std::vector<BlobRecord> records_;    // in file order, so sorted by record_offset
  mutable std::vector<std::string> warnings_;
};

}  // namespace orion::compile
