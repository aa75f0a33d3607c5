#pragma once
// Hugging Face's safetensors format: reading (memory-mapped, zero-copy where aligned, every
// field of the untrusted header checked) and writing (atomically, byte-identical to what
// Hugging Face's `safetensors` library writes for the same tensors and metadata).
//
// The format: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON (an object that maps
// each tensor name to {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, plus an
// optional "__metadata__" object of string to string), then the data region. Offsets are in
// bytes relative to the start of the data region (byte 8 + N of the file); data is
// little-endian and row-major.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "core/tensor.h"

namespace orion::model {

// The header length above which a file is refused, as in Hugging Face's reader.
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// The safetensors spelling of a dtype: F32 U32 F16 BF16 I32 I8 U8 BOOL.
std::string_view safetensors_dtype_name(DType dtype);
// The DType for a safetensors spelling; nullopt for an unknown or unsupported one.
std::optional<DType> safetensors_dtype_from_name(std::string_view name);

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::uint64_t begin = 0;  // absolute byte offsets of the data in the file
  std::uint64_t end = 0;
};

class SafetensorsFile {
 public:
  // Maps the file and validates the whole header: the header length, the JSON, every entry's
  // fields, dtype, shape and data range (inside the data region, size = numel * dtype size, no
  // two tensors overlapping). Throws orion::Error naming the file, the tensor and (where there
  // is one) the byte offset of the problem. Gaps between tensors and unused bytes after the
  // last one are accepted (Hugging Face's reader refuses them; no writer we know leaves them).
  // Fields other than dtype, shape and data_offsets in a tensor entry are refused.
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  // Sorted by name (byte order).
  std::span<const SafetensorsEntry> entries() const { return entries_; }
  // nullptr when there is no tensor of that name.
  const SafetensorsEntry* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Absolute file offset of the data region (8 + header length).
  std::uint64_t data_begin() const { return data_begin_; }
  const std::shared_ptr<const MappedFile>& mapping() const { return file_; }

  // The tensor as a read-only zero-copy view into the mapping (the Tensor keeps the mapping
  // alive; clone() it to write) when its data offset is a multiple of its element size, else
  // an aligned copy. Throws orion::Error naming the file and the tensor for an unknown name.
  Tensor tensor(std::string_view name) const;
  // The tensor converted to `dtype` (a copy), or the same as tensor() when it already has it.
  Tensor tensor_as(std::string_view name, DType dtype) const;

 private:
  SafetensorsFile() = default;
  const SafetensorsEntry& get(std::string_view name) const;

  std::shared_ptr<const MappedFile> file_;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
  std::uint64_t data_begin_ = 0;
};

// Writes `tensors` and `metadata` to `path` atomically (a temporary file renamed over it, so a
// reader or a crash sees the old file or the new one, never a torn one; on any error the old
// file is untouched). The layout is the one Hugging Face's writer produces: "__metadata__"
// first (left out when empty), then the tensors ordered by descending element size (F32, U32, I32,
// BF16, F16, I8, U8, BOOL) and then by name, their data contiguous in that order with no gaps;
// the header is padded with spaces to a multiple of 8 bytes. The data region thus starts at a
// multiple of 8 and every tensor's data at a multiple of its element size, so the reader's
// views are all zero-copy. Non-contiguous tensors are written as their contiguous copy.
// Throws orion::Error naming the file (and the tensor) for an undefined tensor, an empty name,
// a name with a control character, invalid UTF-8, the reserved name "__metadata__", a
// duplicate name, or a header over kSafetensorsMaxHeaderBytes.
void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace orion::model
