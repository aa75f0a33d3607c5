#include "text/byte_unicode.h"

#include <utf8proc.h>

namespace orion::text {

namespace {

bool is_printable_byte(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<char32_t, 256> to_unicode{};
  std::array<std::int16_t, 0x144> to_byte{};  // every mapped code point is below U+0144
  std::array<std::uint8_t, 256> order{};
  std::array<std::array<char, 2>, 256> utf8{};
  std::array<std::uint8_t, 256> utf8_len{};

  Tables() {
    to_byte.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      to_unicode[static_cast<std::size_t>(b)] =
          is_printable_byte(b) ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
    }
    for (int b = 0; b < 256; ++b) {
      const char32_t cp = to_unicode[static_cast<std::size_t>(b)];
      to_byte[cp] = static_cast<std::int16_t>(b);
      std::string s;
      append_utf8(s, cp);
      utf8_len[static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(s.size());
      for (std::size_t i = 0; i < s.size(); ++i) utf8[static_cast<std::size_t>(b)][i] = s[i];
    }
    // Ordering the bytes by their code points: the printable ones keep their own values, which
    // are all below 256, and the others follow in increasing order.
    std::size_t k = 0;
    for (int b = 0; b < 256; ++b)
      if (is_printable_byte(b)) order[k++] = static_cast<std::uint8_t>(b);
    for (int b = 0; b < 256; ++b)
      if (!is_printable_byte(b)) order[k++] = static_cast<std::uint8_t>(b);
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_to_unicode(std::uint8_t byte) { return tables().to_unicode[byte]; }

int unicode_to_byte(char32_t code_point) {
  const Tables& t = tables();
  return code_point < t.to_byte.size() ? t.to_byte[code_point] : -1;
}

std::string_view byte_to_utf8(std::uint8_t byte) {
  const Tables& t = tables();
  return {t.utf8[byte].data(), t.utf8_len[byte]};
}

const std::array<std::uint8_t, 256>& gpt2_byte_order() { return tables().order; }

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string bytes_to_token_text(std::string_view bytes) {
  const Tables& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto b = static_cast<std::uint8_t>(c);
    out.append(t.utf8[b].data(), t.utf8_len[b]);
  }
  return out;
}

std::optional<std::string> token_text_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  std::size_t i = 0;
  while (i < text.size()) {
    utf8proc_int32_t cp = -1;
    const utf8proc_ssize_t n =
        utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    if (n <= 0 || cp < 0) return std::nullopt;
    const int b = unicode_to_byte(static_cast<char32_t>(cp));
    if (b < 0) return std::nullopt;
    out.push_back(static_cast<char>(b));
    i += static_cast<std::size_t>(n);
  }
  return out;
}

}  // namespace orion::text
