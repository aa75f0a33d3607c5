#include "ir/lexer.h"

namespace orion::ir {

bool is_identifier_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_identifier_char(char c) { return is_identifier_start(c) || Scanner::is_digit(c) || c == '.'; }

std::string token_str(const Token& token) {
  if (token.kind == TokenKind::end) return "end of input";
  return Scanner::shown(token.text);
}

void Lexer::skip_space() {
  while (true) {
    skip_white_space();
    if (peek() != '#') break;
    while (!at_end() && peek() != '\n') bump();
  }
}

Token Lexer::make(TokenKind kind, Position start) const {
  Token t;
  t.kind = kind;
  t.text = since(start);
  t.line = start.line;
  t.column = start.column;
  return t;
}

Token Lexer::next() {
  skip_space();
  const Position start = position();
  switch (lead("=(){}[],:", kMaxStringLength, is_identifier_char, kMaxWordLength)) {
    case Lead::end: return make(TokenKind::end, start);
    case Lead::punct: return make(TokenKind::punct, start);
    case Lead::string: return make(TokenKind::string, start);
    case Lead::word: case Lead::inf_nan: return make(TokenKind::identifier, start);
    case Lead::number: return number(start);
    case Lead::other: break;
  }
  if (peek() == '%') {
    bump();
    if (!is_identifier_start(peek()))
      fail(start.line, start.column,
           "expected a value name after '%' (a letter or '_' must follow it), found " +
               (at_end() ? std::string("end of input") : byte_str(peek())));
    scan_word(position(), is_identifier_char, kMaxWordLength);
    return make(TokenKind::value, start);
  }
  if (peek() == '-') fail(start.line, start.column, "expected a number after '-'");
  fail_unexpected(start);
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
    while (!at_end() && is_identifier_char(peek()) && position().offset - start.offset <= kMaxWordLength) bump();
    fail(start.line, start.column, "malformed number " + token_str(make(TokenKind::number, start)));
  }
  if (position().offset - start.offset > kMaxWordLength)
    fail(start.line, start.column, "number longer than " + std::to_string(kMaxWordLength) + " characters");
  return make(TokenKind::number, start);
}

}  // namespace orion::ir
