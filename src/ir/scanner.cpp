#include "ir/scanner.h"

#include "core/error.h"

namespace orion::ir {

void Scanner::fail(std::int64_t line, std::int64_t column, std::string_view message) const {
  throw Error::at_line(file_, line, column, message);
}

std::string Scanner::byte_str(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return std::string("'") + c + "'";
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
}

std::string Scanner::shown(std::string_view token_text) {
  constexpr std::size_t kShown = 40;
  std::string out = "'";
  out += token_text.substr(0, kShown);
  if (token_text.size() > kShown) out += "...";
  return out + "'";
}

void Scanner::bump() {
  if (text_[pos_.offset] == '\n') {
    ++pos_.line;
    pos_.column = 1;
  } else {
    ++pos_.column;
  }
  ++pos_.offset;
}

void Scanner::skip_white_space() {
  while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\r' || peek() == '\n')) bump();
}

Scanner::Lead Scanner::lead(std::string_view puncts, std::size_t max_string, bool (*is_word_char)(char),
                           std::size_t max_word) {
  const auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  const Position start = pos_;
  if (at_end()) return Lead::end;
  const char c = peek();
  if (puncts.find(c) != std::string_view::npos) {
    bump();
    return Lead::punct;
  }
  if (c == '"') {
    scan_string(start, max_string);
    return Lead::string;
  }
  if (is_digit(c) || (c == '-' && is_digit(peek(1)))) return Lead::number;
  if (letter(c)) {
    scan_word(start, is_word_char, max_word);
    return Lead::word;
  }
  if (c == '-' && letter(peek(1))) {
    bump();
    const Position word = pos_;
    scan_word(word, is_word_char, max_word);
    const std::string_view w = since(word);
    if (w != "inf" && w != "nan")
      fail(start.line, start.column, "expected a number, 'inf' or 'nan' after '-', found " + shown(w));
    return Lead::inf_nan;
  }
  return Lead::other;
}

void Scanner::fail_unexpected(Position start) const {
  fail(start.line, start.column, "unexpected character " + byte_str(text_[start.offset]));
}

void Scanner::scan_word(Position start, bool (*is_char)(char), std::size_t max_length) {
  while (!at_end() && is_char(peek())) {
    bump();
    if (pos_.offset - start.offset > max_length)
      fail(start.line, start.column, "identifier longer than " + std::to_string(max_length) + " characters");
  }
}

void Scanner::scan_string(Position start, std::size_t max_length) {
  bump();  // the opening quote
  while (true) {
    if (at_end() || peek() == '\n')
      fail(start.line, start.column, "unterminated string (a string must end with '\"' on the line it starts)");
    const char c = peek();
    if (c == '"') break;
    if (c == '\\') {
      const char e = peek(1);
      if (e != '"' && e != '\\' && e != 'n' && e != 't')
        fail(pos_.line, pos_.column, "unknown escape in a string: '\\' must be followed by '\"', '\\', 'n' or 't'");
      bump();
    }
    bump();
    if (pos_.offset - start.offset > max_length)
      fail(start.line, start.column, "string longer than " + std::to_string(max_length) + " bytes");
  }
  bump();  // the closing quote
}

std::string unescape_string(std::string_view token_text) {
  std::string out;
  if (token_text.size() < 2) return out;
  const std::string_view body = token_text.substr(1, token_text.size() - 2);
  out.reserve(body.size());
  for (std::size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == '\\' && i + 1 < body.size()) {
      const char e = body[++i];
      c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
    }
    out += c;
  }
  return out;
}

std::string quote_string(std::string_view s) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

}  // namespace orion::ir
