#include "compile/mil/mil_lexer.h"

#include "core/error.h"

namespace orion::compile {

namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }
bool hex_digit(char c) { return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || digit(c) || c == '@'; }

std::string byte_str(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return std::string("'") + c + "'";
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
}

}  // namespace

bool MilToken::is_integer() const {
  if (kind != MilTok::number) return false;
  for (char c : text)
    if (!digit(c) && c != '-') return false;
  return true;
}

std::string mil_token_str(const MilToken& t) {
  if (t.kind == MilTok::end) return "end of input";
  constexpr std::size_t kShown = 40;
  std::string out = "'";
  out += t.text.substr(0, kShown);
  if (t.text.size() > kShown) out += "...";
  return out + "'";
}

void MilLexer::fail(std::int64_t line, std::int64_t column, std::string_view message) const {
  throw Error::at_line(file_, line, column, message);
}

void MilLexer::bump() {
  if (text_[pos_.offset] == '\n') {
    ++pos_.line;
    pos_.column = 1;
  } else {
    ++pos_.column;
  }
  ++pos_.offset;
}

MilToken MilLexer::make(MilTok kind, Position start) const {
  return {kind, text_.substr(start.offset, pos_.offset - start.offset), start.line, start.column};
}

MilToken MilLexer::next() {
  while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\r' || peek() == '\n')) bump();
  const Position start = pos_;
  if (at_end()) return make(MilTok::end, start);
  const char c = peek();
  switch (c) {
    case '(': case ')': case '[': case ']': case '{': case '}': case '<': case '>': case ',':
    case '=': case ';':
      bump();
      return make(MilTok::punct, start);
    case '"':
      return string_literal(start);
    case '-':
      if (peek(1) == '>') {
        bump();
        bump();
        return make(MilTok::arrow, start);
      }
      if (digit(peek(1))) return number(start);
      if (ident_start(peek(1))) {
        bump();
        const MilToken w = word(pos_);
        if (w.text == "inf" || w.text == "nan") return make(MilTok::number, start);
        fail(start.line, start.column, "expected a number, 'inf' or 'nan' after '-', found " + mil_token_str(w));
      }
      fail(start.line, start.column, "expected a number or '->' at '-'");
    default:
      break;
  }
  if (digit(c)) return number(start);
  if (ident_start(c)) return word(start);
  fail(start.line, start.column, "unexpected character " + byte_str(c));
}

MilToken MilLexer::word(Position start) {
  while (!at_end() && ident_char(peek())) {
    bump();
    if (pos_.offset - start.offset > kMilMaxWord)
      fail(start.line, start.column, "identifier longer than " + std::to_string(kMilMaxWord) + " characters");
  }
  return make(MilTok::identifier, start);
}

MilToken MilLexer::number(Position start) {
  if (peek() == '-') bump();
  auto malformed = [&] {
    while (!at_end() && (ident_char(peek()) || peek() == '.' || peek() == '+' || peek() == '-') &&
           pos_.offset - start.offset <= kMilMaxWord)
      bump();
    fail(start.line, start.column, "malformed number " + mil_token_str(make(MilTok::number, start)));
  };
  if (peek() == '0' && (peek(1) == 'x' || peek(1) == 'X')) {
    // C99 hex float: 0x HEX [. HEX*] [p [+-] DIGITS]
    bump();
    bump();
    if (!hex_digit(peek())) malformed();
    while (hex_digit(peek())) bump();
    if (peek() == '.') {
      bump();
      while (hex_digit(peek())) bump();
    }
    if (peek() == 'p' || peek() == 'P') {
      bump();
      if (peek() == '+' || peek() == '-') bump();
      if (!digit(peek())) malformed();
      while (digit(peek())) bump();
    }
  } else {
    while (digit(peek())) bump();
    if (peek() == '.') {
      bump();
      while (digit(peek())) bump();
    }
    if (peek() == 'e' || peek() == 'E') {
      bump();
      if (peek() == '+' || peek() == '-') bump();
      if (!digit(peek())) malformed();
      while (digit(peek())) bump();
    }
  }
  if (ident_char(peek()) || peek() == '.') malformed();
  if (pos_.offset - start.offset > kMilMaxWord)
    fail(start.line, start.column, "number longer than " + std::to_string(kMilMaxWord) + " characters");
  return make(MilTok::number, start);
}

MilToken MilLexer::string_literal(Position start) {
  bump();
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
    if (pos_.offset - start.offset > kMilMaxString)
      fail(start.line, start.column, "string longer than " + std::to_string(kMilMaxString) + " bytes");
  }
  bump();
  return make(MilTok::string, start);
}

std::string mil_unescape(std::string_view t) {
  std::string out;
  if (t.size() < 2) return out;
  const std::string_view body = t.substr(1, t.size() - 2);
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

std::string mil_quote(std::string_view s) {
  std::string out = "\"";
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

}  // namespace orion::compile
