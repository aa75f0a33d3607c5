#pragma once
// Spellings shared by the MIL writer and reader: the two dialects' headers, dtype names, and
// float literals.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "compile/blob/blob_format.h"
#include "core/dtype.h"

namespace orion::compile {

// program(1.3) / main<ios18> with short scalars (M4, M5), or program(1.0) / main<ios16> with
// verbose scalars `tensor<int32, []>(1)` (M1 to M3).
enum class MilDialect : std::uint8_t { ios18, ios16 };

struct MilDialectText {
  std::string_view program;     // "program(1.3)"
  std::string_view build_info;  // the attribute block line, "[buildInfo = ...]"
  std::string_view opset;       // "ios18"
};
const MilDialectText& dialect_text(MilDialect d);

// The MIL spelling of an IR dtype: fp16 fp32 int32 int8 uint8 bool; nullopt for bf16, which
// MIL has no name for here.
std::optional<std::string_view> mil_dtype_name(DType t);
// The IR dtype of a MIL dtype name; nullopt for names the IR has no dtype for (int16, int64,
// uint16, uint32, uint64, fp64, string) or that are not dtypes.
std::optional<DType> ir_dtype_from_mil(std::string_view name);
// True for every dtype name MIL text may contain (including string, uint64 and the sub-byte
// types).
bool is_mil_dtype_name(std::string_view name);
// MIL's sub-byte types (int4, uint1, uint2, uint3, uint4, uint6), which only weight consts of
// constexpr ops have: the blob type of that name, or nullopt. MIL spells them as the blob
// format names them.
std::optional<BlobDType> mil_sub_byte_type(std::string_view name);

// C99 hex float with at least one fractional digit ("0x1.0p-3", "-0x1.8p+0", "0x0.0p+0"),
// inf, -inf, nan: exact, so an fp16 or fp32 value reads back to the same bits (NaN payloads
// are not kept).
std::string mil_float(double v);

}  // namespace orion::compile
