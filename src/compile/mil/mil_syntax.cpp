#include "compile/mil/mil_syntax.h"

#include <charconv>
#include <cmath>

namespace orion::compile {

const MilDialectText& dialect_text(MilDialect d) {
  // The strings of programs seen running on the hardware (docs/ane/FORMATS.md, "Two dialects").
  static const MilDialectText kIos18{
      "program(1.3)",
      "[buildInfo = dict<string, string>({{\"coremlc-component-MIL\", \"3510.2.1\"}, "
      "{\"coremlc-version\", \"3505.4.1\"}, {\"coremltools-component-milinternal\", \"\"}, "
      "{\"coremltools-version\", \"9.0\"}})]",
      "ios18"};
  static const MilDialectText kIos16{
      "program(1.0)",
      "[buildInfo = dict<tensor<string, []>, tensor<string, []>>({{\"coremlc-version\", \"3505.4.1\"}})]",
      "ios16"};
  return d == MilDialect::ios18 ? kIos18 : kIos16;
}

std::optional<std::string_view> mil_dtype_name(DType t) {
  switch (t) {
    case DType::f16: return "fp16";
    case DType::f32: return "fp32";
    case DType::i32: return "int32";
    case DType::i8: return "int8";
    case DType::u8: return "uint8";
    case DType::boolean: return "bool";
    case DType::bf16: case DType::u32: break;
  }
  return std::nullopt;
}

std::optional<DType> ir_dtype_from_mil(std::string_view name) {
  for (DType t : kAllDTypes)
    if (mil_dtype_name(t) == name) return t;
  return std::nullopt;
}

bool is_mil_dtype_name(std::string_view name) {
  for (std::string_view n : {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                             "uint64", "fp16", "fp32", "fp64", "string"})
    if (n == name) return true;
  return mil_sub_byte_type(name).has_value();
}

std::optional<BlobDType> mil_sub_byte_type(std::string_view name) {
  for (BlobDType t : {BlobDType::int4, BlobDType::uint1, BlobDType::uint2, BlobDType::uint3, BlobDType::uint4,
                      BlobDType::uint6})
    if (blob_dtype_name(t) == name) return t;
  return std::nullopt;
}

std::string mil_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::hex);
  std::string digits(buf, r.ptr);  // "1.8p+0", "1p-3", "0p+0"
  const auto p = digits.find('p');
  if (digits.find('.') == std::string::npos) digits.insert(p, ".0");
  return (std::signbit(v) ? "-0x" : "0x") + digits;
}

}  // namespace orion::compile
