#include "compile/mil/mil_lexer.h"

namespace orion::compile {

namespace {

bool hex_digit(char c) { return ir::Scanner::is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool ident_char(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || ir::Scanner::is_digit(c) || c == '@'; }

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
  if (peek() == '-' && peek(1) == '>') {
    bump();
    bump();
    return make(MilTok::arrow, start);
  }
  switch (lead("()[]{}<>,=;", kMilMaxString, ident_char, kMilMaxWord)) {
    case Lead::end: return make(MilTok::end, start);
    case Lead::punct: return make(MilTok::punct, start);
    case Lead::string: return make(MilTok::string, start);
    case Lead::word: return make(MilTok::identifier, start);
    case Lead::inf_nan: return make(MilTok::number, start);
    case Lead::number: return number(start);
    case Lead::other: break;
  }
  if (peek() == '-') fail(start.line, start.column, "expected a number or '->' at '-'");
  fail_unexpected(start);
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
