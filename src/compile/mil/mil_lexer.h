#pragma once
// The tokens of MIL program text (docs/ane/FORMATS.md, "Grammar"). White space is free and there are no
// comments. Positions are 1-based lines and byte columns, for orion::Error::at_line.
#include <cstdint>
#include <string>
#include <string_view>

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

class MilLexer {
 public:
  MilLexer(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  // The next token; throws orion::Error at a character that starts no token, a malformed
  // number, an unterminated string or a bad escape.
  MilToken next();

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
  void bump();
  MilToken make(MilTok kind, Position start) const;
  MilToken word(Position start);
  MilToken number(Position start);
  MilToken string_literal(Position start);

  std::string_view text_;
  std::string_view file_;
  Position pos_;
};

// The value of a string token: quotes removed, escapes resolved.
std::string mil_unescape(std::string_view token_text);
// A string as MIL text: quoted, with '"', '\\', newline and tab escaped.
std::string mil_quote(std::string_view s);

}  // namespace orion::compile
