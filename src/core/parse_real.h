#pragma once
// std::from_chars for float and double wherever the standard library lacks it: libc++ before
// LLVM 20, which Apple's toolchain ships, declares only the integer overloads. Same contract as
// std::from_chars (no leading whitespace or '+', chars_format::hex without "0x", inf and nan
// accepted, result_out_of_range when the value does not fit), independent of the C locale.
#include <charconv>

namespace orion {

std::from_chars_result parse_real(const char* first, const char* last, double& value,
                                  std::chars_format fmt = std::chars_format::general);
std::from_chars_result parse_real(const char* first, const char* last, float& value,
                                  std::chars_format fmt = std::chars_format::general);

// The implementation parse_real falls back on (strtod in the C locale), compiled everywhere so
// that it is tested against std::from_chars where the library has both.
std::from_chars_result parse_real_strtod(const char* first, const char* last, double& value, std::chars_format fmt);
std::from_chars_result parse_real_strtod(const char* first, const char* last, float& value, std::chars_format fmt);

}  // namespace orion
