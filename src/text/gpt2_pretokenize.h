#pragma once
// GPT-2's pre-tokenizer: the split of text into pieces that BPE then encodes one at a time,
// written by hand after the regular expression of OpenAI's encoder.py (also tiktoken's
// r50k_base and Hugging Face's GPT2Tokenizer):
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// The alternatives are tried in this order at each position, each greedy:
//   - the contractions (lower case only, as in the expression);
//   - an optional single space (U+0020 only) then a run of letters, of numbers, or of
//     "other" characters (neither letter, number nor white space);
//   - a run of white space. Followed by a non-space, the run gives up its last character to the
//     next piece ("\s+(?!\S)"), unless the run is that one character ("\s+"). So "a  b" splits
//     as "a", " ", " b" and "a\n\nb" as "a", "\n", "\n", "b"; at the end of the text the whole
//     run is one piece.
//
// Character classes come from utf8proc (Unicode 15 in utf8proc 2.8):
//   letter \p{L}: general categories Lu Ll Lt Lm Lo;
//   number \p{N}: Nd Nl No;
//   space  \s:    the Unicode White_Space property, exactly the 25 code points that the
//                 `regex` module used by encoder.py matches with \s (checked against
//                 regex 2026.5.9 over all code points): U+0009..U+000D, U+0020, U+0085,
//                 U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
//                 Not U+001C..U+001F: Python's str.isspace and the `re` module count them as
//                 space, but `regex` does not (nor does tiktoken's Rust regex), so they are
//                 "other" here. (GPT-2's TestPlans vectors contain only ' ' and '\n' of
//                 these, so they cannot tell the two sets apart.)
// Everything else, including combining marks (Mn, Mc, Me), is "other".
//
// Input is any byte string: a byte that does not start a valid UTF-8 sequence (including
// encoded surrogates, overlong forms and truncated sequences) counts as one "other" character
// of its own. The pieces always concatenate back to the input exactly.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace orion::text {

enum class CharClass : std::uint8_t { letter, number, space, other };

// The class of one code point, as above.
CharClass gpt2_char_class(char32_t code_point);

// Whether `code_point` is \s for GPT-2's expression (the White_Space list above).
bool is_gpt2_space(char32_t code_point);

// One character of `text` at byte `pos` (pos < text.size()): its length in bytes (1..4) and
// class; an invalid byte has length 1 and class other.
struct Utf8Char {
  std::uint32_t length;
  CharClass cls;
};
Utf8Char gpt2_char_at(std::string_view text, std::size_t pos);

// Iterates the pieces of `text` without allocating. The pieces are views into `text`.
class Gpt2Pretokenizer {
 public:
  explicit Gpt2Pretokenizer(std::string_view text) : text_(text) {}
  // Sets `piece` to the next piece and returns true, or returns false at the end.
  bool next(std::string_view& piece);

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

// All pieces of `text`, in order.
std::vector<std::string_view> gpt2_pretokenize(std::string_view text);

// The first position at or after `from` where `text` can be cut without changing its pieces,
// or text.size() if there is none: just after a '\n' that has a printable ASCII non-space
// character (0x21..0x7E) on each side. No piece crosses such a point (a lone newline before a
// non-space is a piece of its own, and no other alternative takes a newline), so a long text
// encodes in parts, with progress between them, to the tokens of the whole.
std::size_t gpt2_safe_cut(std::string_view text, std::size_t from);

}  // namespace orion::text
