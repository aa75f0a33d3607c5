#pragma once
// Scanner: the character level under both lexers of Orion's text forms, the IR's (ir/lexer.h)
// and MIL's (compile/mil/mil_lexer.h): a position in the text (byte offset, 1-based line and
// byte column), errors at a position (orion::Error::at_line), and the spelling the two forms
// share: white space, words, string literals with the escapes \" \\ \n \t, and how messages
// show a byte or a token. Each lexer keeps its own tokens, numbers and messages.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace orion::ir {

class Scanner {
 public:
  Scanner(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  struct Position {
    std::size_t offset = 0;
    std::int64_t line = 1;
    std::int64_t column = 1;
  };
  Position position() const { return pos_; }
  void seek(Position p) { pos_ = p; }

  std::string_view file() const { return file_; }
  [[noreturn]] void fail(std::int64_t line, std::int64_t column, std::string_view message) const;

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  // A byte as messages show it: 'c' when printable, else byte 0xNN.
  static std::string byte_str(char c);
  // A token's text as messages show it: 'text', shortened when long.
  static std::string shown(std::string_view token_text);

 protected:
  bool at_end() const { return pos_.offset >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_.offset + ahead < text_.size() ? text_[pos_.offset + ahead] : '\0';
  }
  void bump();  // one byte forward, counting lines
  void skip_white_space();  // spaces, tabs, carriage returns and newlines
  // What starts here, for the tokens both forms spell alike, scanned past but for a number:
  // the end of the text; one of the one-byte marks `puncts`; a string literal (at most
  // `max_string` bytes); a word (a letter or '_', then what `is_word_char` takes, at most
  // `max_word` of them); -inf or -nan; a number (a digit, or '-' and a digit), which the lexer
  // scans; or something else (nothing scanned), a lexer's own token or an error.
  enum class Lead : std::uint8_t { end, punct, string, word, inf_nan, number, other };
  Lead lead(std::string_view puncts, std::size_t max_string, bool (*is_word_char)(char), std::size_t max_word);
  // Fails at `start`, naming the byte there.
  [[noreturn]] void fail_unexpected(Position start) const;
  // The text from `start` to here.
  std::string_view since(Position start) const { return text_.substr(start.offset, pos_.offset - start.offset); }
  // Past the bytes `is_char` takes; fails at `start` once the word is longer than `max_length`.
  void scan_word(Position start, bool (*is_char)(char), std::size_t max_length);
  // Past a string literal, from its opening quote to its closing one, which must be on the same
  // line; fails at an unknown escape, and at `start` when it is longer than `max_length` bytes.
  void scan_string(Position start, std::size_t max_length);

 private:
  std::string_view text_;
  std::string_view file_;
  Position pos_;
};

// The value of a string token: quotes removed and escapes (\" \\ \n \t) resolved.
std::string unescape_string(std::string_view token_text);
// A string as a string token: in quotes, with '"', '\\', newline and tab escaped; every other
// byte as it is.
std::string quote_string(std::string_view s);

}  // namespace orion::ir
