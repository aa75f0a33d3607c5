#include "ir/lexer.h"

#include "core/error.h"

namespace orion::ir {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A byte as messages show it: 'c' when printable, else 0xNN.
std::string byte_str(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return std::string("'") + c + "'";
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
}

}  // namespace

bool is_identifier_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_identifier_char(char c) { return is_identifier_start(c) || is_digit(c) || c == '.'; }

std::string token_str(const Token& token) {
  if (token.kind == TokenKind::end) return "end of input";
  constexpr std::size_t kShown = 40;
  std::string out = "'";
  out += token.text.substr(0, kShown);
  if (token.text.size() > kShown) out += "...";
  out += '\'';
  return out;
}

void Lexer::fail(std::int64_t line, std::int64_t column, std::string_view message) const {
  throw Error::at_line(file_, line, column, message);
}

void Lexer::bump() {
  if (text_[pos_.offset] == '\n') {
    ++pos_.line;
    pos_.column = 1;
  } else {
    ++pos_.column;
  }
  ++pos_.offset;
}

void Lexer::skip_space() {
  while (!at_end()) {
    const char c = peek();
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      bump();
    } else if (c == '#') {
      while (!at_end() && peek() != '\n') bump();
    } else {
      break;
    }
  }
}

Token Lexer::make(TokenKind kind, Position start) const {
  Token t;
  t.kind = kind;
  t.text = text_.substr(start.offset, pos_.offset - start.offset);
  t.line = start.line;
  t.column = start.column;
  return t;
}

Token Lexer::next() {
  skip_space();
  const Position start = pos_;
  if (at_end()) return make(TokenKind::end, start);
  const char c = peek();
  switch (c) {
    case '=': case '(': case ')': case '{': case '}': case '[': case ']': case ',': case ':':
      bump();
      return make(TokenKind::punct, start);
    case '"':
      return string_literal(start);
    case '%':
      bump();
      if (!is_identifier_start(peek()))
        fail(start.line, start.column,
             "expected a value name after '%' (a letter or '_' must follow it), found " +
                 (at_end() ? std::string("end of input") : byte_str(peek())));
      word(pos_);
      return make(TokenKind::value, start);
    case '-':
      if (is_digit(peek(1))) return number(start);
      if (is_identifier_start(peek(1))) {
        bump();
        Token w = word(pos_);
        if (w.text == "inf" || w.text == "nan") return make(TokenKind::identifier, start);
        fail(start.line, start.column, "expected a number, 'inf' or 'nan' after '-', found " + token_str(w));
      }
      fail(start.line, start.column, "expected a number after '-'");
    default:
      break;
  }
  if (is_digit(c)) return number(start);
  if (is_identifier_start(c)) return word(start);
  fail(start.line, start.column, "unexpected character " + byte_str(c));
}

Token Lexer::word(Position start) {
  while (!at_end() && is_identifier_char(peek())) bump();
  if (pos_.offset - start.offset > kMaxWordLength)
    fail(start.line, start.column,
         "identifier longer than " + std::to_string(kMaxWordLength) + " characters");
  return make(TokenKind::identifier, start);
}

Token Lexer::number(Position start) {
  if (peek() == '-') bump();
  while (is_digit(peek())) bump();
  if (peek() == '.' && is_digit(peek(1))) {
    bump();
    while (is_digit(peek())) bump();
  }
  if ((peek() == 'e' || peek() == 'E') &&
      (is_digit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && is_digit(peek(2))))) {
    bump();
    if (peek() == '+' || peek() == '-') bump();
    while (is_digit(peek())) bump();
  }
  if (is_identifier_char(peek())) {
    while (!at_end() && is_identifier_char(peek()) && pos_.offset - start.offset <= kMaxWordLength) bump();
    fail(start.line, start.column, "malformed number " + token_str(make(TokenKind::number, start)));
  }
  if (pos_.offset - start.offset > kMaxWordLength)
    fail(start.line, start.column, "number longer than " + std::to_string(kMaxWordLength) + " characters");
  return make(TokenKind::number, start);
}

Token Lexer::string_literal(Position start) {
  bump();  // the opening quote
  while (true) {
    if (at_end() || peek() == '\n')
      fail(start.line, start.column, "unterminated string (a string must end with '\"' on the line it starts)");
    const char c = peek();
    if (c == '"') break;
    if (c == '\\') {
      const char e = peek(1);
      if (e != '"' && e != '\\' && e != 'n' && e != 't')
        fail(pos_.line, pos_.column,
             "unknown escape in a string: '\\' must be followed by '\"', '\\', 'n' or 't'");
      bump();
    }
    bump();
    if (pos_.offset - start.offset > kMaxStringLength)
      fail(start.line, start.column, "string longer than " + std::to_string(kMaxStringLength) + " bytes");
  }
  bump();  // the closing quote
  return make(TokenKind::string, start);
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
