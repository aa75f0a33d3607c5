#include "core/parse_real.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <system_error>

#include <locale.h>
#if defined(__APPLE__)
#include <xlocale.h>
#endif

namespace orion {
namespace {

// The characters a number can hold in any of from_chars' forms (digits, a point, a sign, an
// exponent, hex digits, inf, infinity, nan(...)): strtod decides where the number ends within
// them, on a copy of that span alone.
bool in_number(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '-' || c == '+' ||
         c == '(' || c == ')' || c == '_';
}

locale_t c_locale() {
  static const locale_t loc = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  return loc;
}

template <class T>
std::from_chars_result parse_strtod(const char* first, const char* last, T& value, std::chars_format fmt) {
  // strtod also skips whitespace and takes a '+' or a "0x" in any form, which from_chars does not.
  if (first == last || *first == '+' || !in_number(*first)) return {first, std::errc::invalid_argument};
  const char* end = first;
  while (end != last && in_number(*end)) ++end;
  const bool negative = *first == '-';
  const std::size_t sign = negative ? 1 : 0;
  std::string body(first + sign, end);
  // from_chars stops at the 'x' of a "0x" in every format; strtod would read on.
  if (body.size() > 1 && body[0] == '0' && (body[1] | 0x20) == 'x') body.resize(1);
  // from_chars reads hex digits without a "0x", and strtod needs it (but not before inf or nan).
  const bool special = !body.empty() && ((body[0] | 0x20) == 'i' || (body[0] | 0x20) == 'n');
  const std::string prefix = fmt == std::chars_format::hex && !special ? "0x" : "";
  const std::string text = (negative ? "-" : "") + prefix + body;
  errno = 0;
  char* stop = nullptr;
  T v;
  if constexpr (sizeof(T) == sizeof(float)) v = strtof_l(text.c_str(), &stop, c_locale());
  else v = strtod_l(text.c_str(), &stop, c_locale());
  const std::size_t used = static_cast<std::size_t>(stop - text.c_str());
  if (used <= sign + prefix.size()) return {first, std::errc::invalid_argument};
  const char* ptr = first + (used - prefix.size());
  if (errno == ERANGE && (std::isinf(v) || v == 0)) return {ptr, std::errc::result_out_of_range};
  value = v;
  return {ptr, std::errc()};
}

}  // namespace

std::from_chars_result parse_real_strtod(const char* first, const char* last, double& value, std::chars_format fmt) {
  return parse_strtod(first, last, value, fmt);
}

std::from_chars_result parse_real_strtod(const char* first, const char* last, float& value, std::chars_format fmt) {
  return parse_strtod(first, last, value, fmt);
}

#if defined(__cpp_lib_to_chars)
std::from_chars_result parse_real(const char* first, const char* last, double& value, std::chars_format fmt) {
  return std::from_chars(first, last, value, fmt);
}

std::from_chars_result parse_real(const char* first, const char* last, float& value, std::chars_format fmt) {
  return std::from_chars(first, last, value, fmt);
}
#else
std::from_chars_result parse_real(const char* first, const char* last, double& value, std::chars_format fmt) {
  return parse_strtod(first, last, value, fmt);
}

std::from_chars_result parse_real(const char* first, const char* last, float& value, std::chars_format fmt) {
  return parse_strtod(first, last, value, fmt);
}
#endif

}  // namespace orion
