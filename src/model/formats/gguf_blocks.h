#pragma once
// ggml's tensor types as GGUF files store them: each type's block (how many values, how many
// bytes), for checking a tensor's size against the file whatever its type, and the types Orion
// dequantises to f32 (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K), block by block as
// ggml's dequantize_row_* functions compute them (ggml-quants.c), so that a weight is the value
// llama.cpp multiplies by. The layouts are in docs/FORMATS.md ("GGUF").
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace orion::model {

// ggml_type's numbers (ggml.h; GGUF stores them as u32).
enum class GgmlType : std::uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q8_0 = 8,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  bf16 = 30,
};

struct GgmlTypeInfo {
  std::string_view name;  // ggml's spelling: "Q4_K"
  std::int64_t block_values = 1;  // values a block holds: a row's length is a multiple of it
  std::int64_t block_bytes = 4;
  bool dequantised = false;  // Orion reads it (dequantize_blocks)
};

// The type numbered `type` in ggml's enum, nullptr for a number ggml does not define (or whose
// support it removed).
const GgmlTypeInfo* ggml_type_info(std::uint32_t type);

// The `values` values (a multiple of the type's block) stored in `blocks` (exactly their
// blocks' bytes), as f32 into `out` (`values` long). The type must be one that is dequantised;
// the caller checks the sizes (gguf.h names the tensor when they are wrong).
void dequantize_blocks(GgmlType type, std::span<const std::byte> blocks, std::span<float> out);

}  // namespace orion::model
