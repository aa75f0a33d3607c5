#pragma once
// The tokens of the IR text form (the grammar is in parser.h). The lexer checks the spelling
// of each token (identifiers, numbers, strings and their escapes) and reports a bad one at its
// line and column; what the tokens mean is the parser's business. The character level is the
// scanner's (ir/scanner.h), which the MIL lexer shares.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ir/scanner.h"

namespace orion::ir {

enum class TokenKind : std::uint8_t {
  end,         // end of the text
  identifier,  // [A-Za-z_][A-Za-z0-9_.]*, and the words -inf and -nan
  value,       // %name: text includes the '%'
  number,      // -?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?
  string,      // "...": text includes the quotes, escapes unresolved
  punct,       // one of = ( ) { } [ ] , :
};

struct Token {
  TokenKind kind = TokenKind::end;
  std::string_view text;  // as written in the source
  std::int64_t line = 1;    // 1-based
  std::int64_t column = 1;  // 1-based, counting bytes

  bool is_punct(char c) const { return kind == TokenKind::punct && text.size() == 1 && text[0] == c; }
  bool is_word(std::string_view w) const { return kind == TokenKind::identifier && text == w; }
  // A number without '.' or exponent.
  bool is_integer() const {
    return kind == TokenKind::number && text.find_first_of(".eE") == std::string_view::npos;
  }
};

// How messages name a token: 'text' (shortened when long) or "end of input".
std::string token_str(const Token& token);

// Longest identifier or number token, and longest string literal, in bytes.
inline constexpr std::size_t kMaxWordLength = 4096;
inline constexpr std::size_t kMaxStringLength = std::size_t{1} << 20;

class Lexer : public Scanner {
 public:
  Lexer(std::string_view text, std::string_view file) : Scanner(text, file) {}

  // The next token, skipping white space and comments; throws orion::Error at a character
  // that starts no token, a malformed number, an unterminated string or a bad escape.
  Token next();

 private:
  void skip_space();
  Token number(Position start);
  Token make(TokenKind kind, Position start) const;
};

// unescape_string and quote_string (ir/scanner.h) are the string tokens' both ways.

bool is_identifier_start(char c);
bool is_identifier_char(char c);

}  // namespace orion::ir
