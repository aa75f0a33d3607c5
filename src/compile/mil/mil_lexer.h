#pragma once
// The tokens of MIL program text (docs/ane/FORMATS.md, "Grammar"). White space is free and there are no
// comments. Positions are 1-based lines and byte columns, for orion::Error::at_line. The
// character level is the scanner's (ir/scanner.h), which the IR lexer shares.
#include <cstdint>
#include <string>
#include <string_view>

#include "ir/scanner.h"

namespace orion::compile {

enum class MilTok : std::uint8_t {
  end,
  identifier,  // [A-Za-z_][A-Za-z0-9_@]*
  number,      // -?(0x hex float | decimal with optional fraction and exponent), and -inf, -nan
  string,      // "...", text includes the quotes, escapes \" \\ \n \t unresolved
  punct,       // ( ) [ ] { } < > , = ;
  arrow,       // ->
};

struct MilToken {
  MilTok kind = MilTok::end;
  std::string_view text;
  std::int64_t line = 1;
  std::int64_t column = 1;

  bool is(char c) const { return kind == MilTok::punct && text.size() == 1 && text[0] == c; }
  bool is_word(std::string_view w) const { return kind == MilTok::identifier && text == w; }
  // A number written as a plain decimal integer (no '.', exponent or hex).
  bool is_integer() const;
};

// How messages name a token: 'text' (shortened) or "end of input".
std::string mil_token_str(const MilToken& t);

inline constexpr std::size_t kMilMaxWord = 4096;
inline constexpr std::size_t kMilMaxString = std::size_t{1} << 20;

class MilLexer : public ir::Scanner {
 public:
  MilLexer(std::string_view text, std::string_view file) : Scanner(text, file) {}

  // The next token; throws orion::Error at a character that starts no token, a malformed
  // number, an unterminated string or a bad escape.
  MilToken next();

 private:
  MilToken make(MilTok kind, Position start) const;
  MilToken number(Position start);
};

// The value of a string token: quotes removed, escapes resolved.
inline std::string mil_unescape(std::string_view token_text) { return ir::unescape_string(token_text); }
// A string as MIL text: quoted, with '"', '\\', newline and tab escaped.
inline std::string mil_quote(std::string_view s) { return ir::quote_string(s); }

}  // namespace orion::compile
