#include "text/gpt2_pretokenize.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>

namespace orion::text {

namespace {

constexpr std::array<CharClass, 128> make_ascii_classes() {
  std::array<CharClass, 128> t{};
  for (int c = 0; c < 128; ++c) {
    CharClass k = CharClass::other;
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) k = CharClass::letter;
    else if (c >= '0' && c <= '9') k = CharClass::number;
    else if ((c >= '\t' && c <= '\r') || c == ' ') k = CharClass::space;
    t[static_cast<std::size_t>(c)] = k;
  }
  return t;
}

constexpr std::array<CharClass, 128> kAsciiClasses = make_ascii_classes();

inline Utf8Char char_at(std::string_view text, std::size_t pos) {
  const auto b = static_cast<unsigned char>(text[pos]);
  if (b < 0x80) return {1, kAsciiClasses[b]};
  utf8proc_int32_t cp = -1;
  const std::size_t avail = text.size() - pos < 4 ? text.size() - pos : 4;
  const utf8proc_ssize_t n =
      utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + pos),
                       static_cast<utf8proc_ssize_t>(avail), &cp);
  if (n <= 0 || cp < 0) return {1, CharClass::other};  // an invalid byte stands alone
  return {static_cast<std::uint32_t>(n), gpt2_char_class(static_cast<char32_t>(cp))};
}

// The end of the run of characters of class `cls` that starts at `pos`.
inline std::size_t run_end(std::string_view text, std::size_t pos, CharClass cls) {
  while (pos < text.size()) {
    const auto b = static_cast<unsigned char>(text[pos]);
    if (b < 0x80) {
      if (kAsciiClasses[b] != cls) break;
      ++pos;
      continue;
    }
    const Utf8Char c = char_at(text, pos);
    if (c.cls != cls) break;
    pos += c.length;
  }
  return pos;
}

// The length of a contraction ('s 't 're 've 'm 'll 'd) at `pos`, which holds an apostrophe,
// or 0.
inline std::size_t contraction_length(std::string_view text, std::size_t pos) {
  if (pos + 1 >= text.size()) return 0;
  const char c1 = text[pos + 1];
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (pos + 2 >= text.size()) return 0;
  const char c2 = text[pos + 2];
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

}  // namespace

bool is_gpt2_space(char32_t cp) {
  if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20;
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

CharClass gpt2_char_class(char32_t cp) {
  if (cp < 0x80) return kAsciiClasses[cp];
  if (is_gpt2_space(cp)) return CharClass::space;
  if (cp > 0x10FFFF) return CharClass::other;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return CharClass::letter;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return CharClass::number;
    default:
      return CharClass::other;
  }
}

Utf8Char gpt2_char_at(std::string_view text, std::size_t pos) { return char_at(text, pos); }

bool Gpt2Pretokenizer::next(std::string_view& piece) {
  const std::string_view text = text_;
  const std::size_t start = pos_;
  if (start >= text.size()) return false;
  std::size_t end;
  const char b0 = text[start];
  const std::size_t contraction = b0 == '\'' ? contraction_length(text, start) : 0;
  if (contraction > 0) {
    end = start + contraction;  // 's|'t|'re|'ve|'m|'ll|'d
  } else {
    const Utf8Char c0 = char_at(text, start);
    const Utf8Char c1 = b0 == ' ' && start + 1 < text.size() ? char_at(text, start + 1)
                                                             : Utf8Char{0, CharClass::space};
    if (b0 == ' ' && c1.cls != CharClass::space) {
      // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+" with the space.
      end = run_end(text, start + 1 + c1.length, c1.cls);
    } else if (c0.cls != CharClass::space) {
      // The same without the space.
      end = run_end(text, start + c0.length, c0.cls);
    } else {
      // "\s+(?!\S)|\s+": a run of white space; before a non-space it leaves its last character
      // to the next piece, unless that is its only one.
      std::size_t last = start;
      end = start + c0.length;
      while (end < text.size()) {
        const Utf8Char c = char_at(text, end);
        if (c.cls != CharClass::space) break;
        last = end;
        end += c.length;
      }
      if (end < text.size() && last > start) end = last;
    }
  }
  piece = text.substr(start, end - start);
  pos_ = end;
  return true;
}

std::vector<std::string_view> gpt2_pretokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  Gpt2Pretokenizer it(text);
  std::string_view piece;
  while (it.next(piece)) pieces.push_back(piece);
  return pieces;
}

std::size_t gpt2_safe_cut(std::string_view text, std::size_t from) {
  auto printable = [](char c) { return c > ' ' && c < 0x7f; };
  for (std::size_t p = std::max<std::size_t>(from, 2); p < text.size(); ++p) {
    p = text.find('\n', p - 1);
    if (p == std::string_view::npos) break;
    ++p;  // just after the newline
    if (p < text.size() && p >= 2 && printable(text[p - 2]) && printable(text[p])) return p;
  }
  return text.size();
}

}  // namespace orion::text
