#pragma once
// Writes a weights/weight.bin file (blob storage version 2, docs/ane/FORMATS.md): blobs are
// added one by one, each returning the offset of its metadata record, which is what a MIL
// program names in `BLOBFILE(path = ..., offset = uint64(N))` (the record, not the data).
//
//   WeightBlobWriter w;
//   std::uint64_t at = w.add_fp16(halves);   // 64 for the first blob
//   w.write(folder + "/weights/weight.bin");
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "compile/blob/blob_format.h"
#include "core/atomic_file.h"

namespace orion::compile {

class WeightBlobWriter {
 public:
  WeightBlobWriter();  // no blobs yet: a valid header alone

  // Appends a blob of raw bytes; `unused_bits` is the number of unused high bits in the last
  // byte of a sub-byte type (0 otherwise). Throws orion::Error for an empty blob (Apple's
  // reader rejects zero-length blobs), a size that is not a whole number of elements, or an
  // unused-bits value that does not fit the type. Returns the record's offset.
  std::uint64_t add(BlobDType dtype, std::span<const std::byte> data, std::uint32_t unused_bits = 0);
  // fp16 values as their IEEE binary16 bit patterns (kept exactly, NaN payloads included).
  std::uint64_t add_fp16(std::span<const std::uint16_t> halves);
  std::uint64_t add_fp32(std::span<const float> values);
  // Sub-byte values (uint1..uint6, int4), packed from the lowest bit up. Throws orion::Error for
  // a value outside the type's range (as Apple's writer refuses it), naming the element.
  std::uint64_t add_packed(BlobDType dtype, std::span<const std::int32_t> values);

  std::size_t count() const { return count_; }
  // The whole file: header, records, data; it ends at the last data byte.
  const std::vector<std::byte>& bytes() const { return bytes_; }
  // Writes bytes() to `path` atomically (the folder must exist).
  void write(const std::string& path) const;

 private:
  std::vector<std::byte> bytes_;
  std::uint32_t count_ = 0;
};

// The same file written as it is made, for weights too large to hold twice in memory (a model's
// weights as kernel inputs): the blob count is declared up front (the header comes first), and
// each blob's data is written in pieces as the caller converts it.
//
//   WeightBlobStream s(path, 2);
//   std::uint64_t at = s.begin(BlobDType::fp16, n * 2);   // then write() n * 2 bytes
//   ...
//   s.commit();
class WeightBlobStream {
 public:
  WeightBlobStream(std::string path, std::uint32_t count);
  // Starts the next blob, of `bytes` bytes of `dtype`, once the last one is complete; returns
  // its record's offset. Throws orion::Error as WeightBlobWriter::add does, and for a blob
  // past the declared count.
  std::uint64_t begin(BlobDType dtype, std::uint64_t bytes);
  void write(std::span<const std::byte> data);  // the current blob's data, in order
  // Every blob declared and complete: the file replaces `path`; else an orion::Error.
  void commit();

 private:
  AtomicFileWriter file_;
  std::uint32_t count_, begun_ = 0;
  std::uint64_t at_ = kBlobHeaderSize;  // the file's size so far
  std::uint64_t left_ = 0;              // of the current blob's data
};

}  // namespace orion::compile
