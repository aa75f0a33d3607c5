#pragma once
// The tokens of the IR text form (the grammar is in parser.h). The lexer checks the spelling
// of each token (identifiers, numbers, strings and their escapes) and reports a bad one at its
// line and column; what the tokens mean is the parser's business.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

class Lexer {
 public:
  Lexer(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  // The next token, skipping white space and comments; throws orion::Error at a character
  // that starts no token, a malformed number, an unterminated string or a bad escape.
  Token next();

  struct Position {
    std::size_t offset = 0;
    std::int64_t line = 1;
    std::int64_t column = 1;
  };
  Position position() const { return pos_; }
  void seek(Position p) { pos_ = p; }

  std::string_view file() const { return file_; }
  [[noreturn]] void fail(std::int64_t line, std::int64_t column, std::string_view message) const;

 private:
  bool at_end() const { return pos_.offset >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_.offset + ahead < text_.size() ? text_[pos_.offset + ahead] : '\0';
  }
  void bump();  // one byte forward, counting lines
  void skip_space();
  Token word(Position start);
  Token number(Position start);
  Token string_literal(Position start);
  Token make(TokenKind kind, Position start) const;

  std::string_view text_;
  std::string_view file_;
  Position pos_;
};

// The value of a string token: quotes removed and escapes (\" \\ \n \t) resolved.
std::string unescape_string(std::string_view token_text);
// A string as a string token: in quotes, with '"', '\\', newline and tab escaped; every other
// byte as it is.
std::string quote_string(std::string_view s);

bool is_identifier_start(char c);
bool is_identifier_char(char c);

}  // namespace orion::ir
