#pragma once
// Element types shared by tensors, the IR and every file format Orion reads or writes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace orion {

// u32 is a storage type only: the packed words of quantized weights (MLX's 4-bit folders) as
// files hold them. No IR op takes it, so it is not in kAllDTypes and IR text cannot spell it.
enum class DType : std::uint8_t { f32, f16, bf16, i32, i8, u8, boolean, u32 };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::i32,
                                       DType::i8,  DType::u8,  DType::boolean};

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: case DType::u32: return 4;
    case DType::f16: case DType::bf16: return 2;
    case DType::i8: case DType::u8: case DType::boolean: return 1;
  }
  return 0;
}

constexpr bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
constexpr bool is_integer(DType t) { return t == DType::i32 || t == DType::i8 || t == DType::u8; }

// The spelling used in IR text and messages: f32 f16 bf16 i32 i8 u8 bool.
constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::i8: return "i8";
    case DType::u8: return "u8";
    case DType::boolean: return "bool";
    case DType::u32: return "u32";
  }
  return "?";
}

constexpr std::optional<DType> dtype_from_name(std::string_view s) {
  for (DType t : kAllDTypes)
    if (dtype_name(t) == s) return t;
  return std::nullopt;
}

}  // namespace orion
