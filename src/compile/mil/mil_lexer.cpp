#include "compile/mil/mil_lexer.h"

namespace orion::compile {

namespace {

bool hex_digit(char c) { return ir::Scanner::is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || ir::Scanner::is_digit(c) || c == '@'; }

}  // namespace

bool MilToken::is_integer() const {
  if (kind != MilTok::number) return false;
  for (char c : text)
    if (!ir::Scanner::is_digit(c) && c != '-') return false;
  return true;
}

std::string mil_token_str(const MilToken& t) {
  if (t.kind == MilTok::end) return "end of input";
  return ir::Scanner::shown(t.text);
}

MilToken MilLexer::make(MilTok kind, Position start) const { return {kind, since(start), start.line, start.column}; }

MilToken MilLexer::next() {
  skip_white_space();
  const Position start = position();
  if (at_end()) return make(MilTok::end, start);
  const char c = peek();
  switch (c) {
    case '(': case ')': case '[': case ']': case '{': case '}': case '<': case '>': case ',':
    case '=': case ';':
      bump();
      return make(MilTok::punct, start);
    case '"':
      scan_string(start, kMilMaxString);
      return make(MilTok::string, start);
    case '-':
      if (peek(1) == '>') {
        bump();
        bump();
        return make(MilTok::arrow, start);
      }
      if (is_digit(peek(1))) return number(start);
      if (ident_start(peek(1))) {
        scan_negative_word(start, ident_char, kMilMaxWord);
        return make(MilTok::number, start);
      }
      fail(start.line, start.column, "expected a number or '->' at '-'");
    default:
      break;
  }
  if (is_digit(c)) return number(start);
  if (ident_start(c)) return word(start);
  fail(start.line, start.column, "unexpected character " + byte_str(c));
}

MilToken MilLexer::word(Position start) {
  scan_word(start, ident_char, kMilMaxWord);
  return make(MilTok::identifier, start);
}

MilToken MilLexer::number(Position start) {
  if (peek() == '-') bump();
  auto malformed = [&] {
    while (!at_end() && (ident_char(peek()) || peek() == '.' || peek() == '+' || peek() == '-') &&
           position().offset - start.offset <= kMilMaxWord)
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
      if (!is_digit(peek())) malformed();
      while (is_digit(peek())) bump();
    }
  } else {
    while (is_digit(peek())) bump();
    if (peek() == '.') {
      bump();
      while (is_digit(peek())) bump();
    }
    if (peek() == 'e' || peek() == 'E') {
      bump();
      if (peek() == '+' || peek() == '-') bump();
      if (!is_digit(peek())) malformed();
      while (is_digit(peek())) bump();
    }
  }
  if (ident_char(peek()) || peek() == '.') malformed();
  if (position().offset - start.offset > kMilMaxWord)
    fail(start.line, start.column, "number longer than " + std::to_string(kMilMaxWord) + " characters");
  return make(MilTok::number, start);
}

}  // namespace orion::compile
