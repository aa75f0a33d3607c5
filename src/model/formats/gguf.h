#pragma once
// GGUF, llama.cpp's single-file model format (version 3; ggml's docs/gguf.md): a header, typed
// metadata key/values, tensor infos, and the tensors' data at aligned offsets, little-endian.
// Read memory-mapped, every count, length, offset and size of the untrusted file checked
// before it is used: a malformed file is an orion::Error naming the file, the key or tensor and
// what is wrong, never a crash or an allocation the file's size does not bound. The layout is
// in docs/FORMATS.md ("GGUF").
//
// Tensors keep ggml's order of dimensions: dims[0] is the innermost (a row's length), so a
// [out, in] matrix of PyTorch is stored as dims {in, out}; shape() gives the row-major order.
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"
#include "model/formats/gguf_blocks.h"

namespace orion::model {

// The file's first four bytes.
inline constexpr std::string_view kGgufMagic = "GGUF";
// The default of general.alignment.
inline constexpr std::uint32_t kGgufDefaultAlignment = 32;

// gguf_metadata_value_type.
enum class GgufType : std::uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8, array = 9,
  u64 = 10, i64 = 11, f64 = 12,
};
std::string_view gguf_type_name(GgufType type);

// One metadata value: a scalar is an array of one in the vector of its kind. Integers of every
// width and booleans are in `ints` (u64 values above 2^63 - 1 are refused when read), floats in
// `reals`, strings in `strings`.
struct GgufValue {
  GgufType type = GgufType::u8;     // array for an array
  GgufType element = GgufType::u8;  // an array's elements' type; the scalar's own type otherwise
  std::vector<std::int64_t> ints;
  std::vector<double> reals;
  std::vector<std::string> strings;

  bool is_array() const { return type == GgufType::array; }
  std::size_t size() const;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<std::int64_t> dims;  // ggml's order: dims[0] is a row's length
  std::uint32_t type = 0;          // GgmlType's number; ggml_type_info(type) is never null here
  std::uint64_t offset = 0;        // absolute in the file
  std::uint64_t bytes = 0;

  // Row-major: dims reversed.
  Shape shape() const;
  std::int64_t numel() const;
  const GgmlTypeInfo& type_info() const { return *ggml_type_info(type); }
};

class GgufFile {
 public:
  // Maps and reads the whole header. Throws orion::Error naming the file (and the key or
  // tensor, and the byte offset where there is one) for: a file too short for what it says, a
  // bad magic, a version other than 2 or 3, a key or tensor name repeated, an unknown value
  // type or a nested array, a string or count running past the end, general.alignment that is
  // not a power of two, a tensor with more than 4 dimensions, a negative dimension or a size
  // past 2^62 bytes, an unknown ggml type, a row length not a multiple of its type's block, an
  // offset not a multiple of the alignment, and data past the end of the file or overlapping
  // another tensor's.
  static GgufFile open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  std::uint32_t version() const { return version_; }
  std::uint32_t alignment() const { return alignment_; }
  std::uint64_t data_begin() const { return data_begin_; }
  // In the file's order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  // nullptr when absent.
  const GgufValue* find(std::string_view key) const;
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Typed reads of one key, nullopt when it is absent. Throws orion::Error naming the file and
  // the key when the value has another type (an integer of any width counts as an integer, an
  // integer or float as a real) or does not fit.
  std::optional<std::int64_t> integer(std::string_view key) const;
  std::optional<double> real(std::string_view key) const;
  std::optional<bool> boolean(std::string_view key) const;
  std::optional<std::string> string(std::string_view key) const;
  // Arrays: of strings; of integers; of reals (floats, or integers).
  std::optional<std::vector<std::string>> strings(std::string_view key) const;
  std::optional<std::vector<std::int64_t>> integers(std::string_view key) const;
  std::optional<std::vector<double>> reals(std::string_view key) const;

  // The tensor's stored bytes.
  std::span<const std::byte> tensor_bytes(const GgufTensorInfo& t) const;
  // The tensor as f32 of shape(), dequantised. Throws orion::Error naming the file and the
  // tensor when its type is one Orion does not read (the message lists those it does).
  Tensor dequantized(const GgufTensorInfo& t) const;

  const std::shared_ptr<const MappedFile>& mapping() const { return file_; }

 private:
  GgufFile() = default;

  std::shared_ptr<const MappedFile> file_;
  std::uint32_t version_ = 3;
  std::uint32_t alignment_ = kGgufDefaultAlignment;
  std::uint64_t data_begin_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, std::size_t, std::less<>> key_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, std::size_t, std::less<>> tensor_index_;
};

// The header as JSON, in the form of tests/reference/read_gguf.mjs (npm @huggingface/gguf's
// reading): {"version", "metadata": {key: {"type", "subType" (arrays), "value"}}, "tensors":
// [{"name", "dims", "type", "offset" (from the data section)}], "data_offset"}; `orion inspect
// --json` prints it.
nlohmann::json gguf_header_json(const GgufFile& g);

// True when `path` is a regular file that starts with GGUF's magic: how the commands that take
// a model folder tell a GGUF file from one.
bool is_gguf_file(const std::string& path);

}  // namespace orion::model
