#include "text/gpt2_pretokenize.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/random.h"

namespace orion::text {
namespace {

std::vector<std::string> pieces_of(std::string_view text) {
  std::vector<std::string> out;
  for (const std::string_view p : gpt2_pretokenize(text)) out.emplace_back(p);
  return out;
}

struct Case {
  std::string text;
  std::vector<std::string> pieces;
};

// Expected pieces computed with OpenAI's expression and Python's `regex` module
// (regex.findall(pat, text)).
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      // contractions (lower case only)
      {"I'm can't we'll they're I've he'd it's",
       {"I", "'m", " can", "'t", " we", "'ll", " they", "'re", " I", "'ve", " he", "'d", " it",
        "'s"}},
      {"'S 'LL 'Re", {"'", "S", " '", "LL", " '", "Re"}},
      {"''s", {"''", "s"}},
      {"l'amour", {"l", "'", "amour"}},
      // words and spaces
      {"hello world", {"hello", " world"}},
      {"a  b", {"a", " ", " b"}},
      {"a   ", {"a", "   "}},
      {"foo   bar\n", {"foo", "  ", " bar", "\n"}},
      {"  ", {"  "}},
      {" ", {" "}},
      {"", {}},
      // newlines: a run before a non-space keeps all but its last character
      {"a\n\nb", {"a", "\n", "\n", "b"}},
      {"a\n\n", {"a", "\n\n"}},
      {"\n\n\nx", {"\n\n", "\n", "x"}},
      {"a \n b", {"a", " \n", " b"}},
      // tabs: only U+0020 attaches to the next word
      {"\tfoo", {"\t", "foo"}},
      {"a \tb", {"a", " ", "\t", "b"}},
      {"a\t b", {"a", "\t", " b"}},
      // numbers
      {"123 4567 3.14", {"123", " 4567", " 3", ".", "14"}},
      {"x\xc2\xb2 \xc2\xbd", {"x", "\xc2\xb2", " \xc2\xbd"}},        // x² ½ (No)
      {"\xe2\x85\xab chapters", {"\xe2\x85\xab", " chapters"}},      // Ⅻ (Nl)
      {"abc123def", {"abc", "123", "def"}},
      // punctuation and other characters
      {" !!! ?", {" !!!", " ?"}},
      {"a_b-c", {"a", "_", "b", "-", "c"}},
      {"e\xcc\x81t", {"e", "\xcc\x81", "t"}},  // a combining mark is "other"
      // non-Latin letters
      {"\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xd0\xbc\xd0\xb8\xd1\x80 "
       "\xe4\xbd\xa0\xe5\xa5\xbd",
       {"\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82", " \xd0\xbc\xd0\xb8\xd1\x80",
        " \xe4\xbd\xa0\xe5\xa5\xbd"}},  // Привет мир 你好
      {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88",
       {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88"}},
      // White_Space beyond ASCII, and U+001C..U+001F, which are not \s for `regex`
      {"a\xe3\x80\x80" "b", {"a", "\xe3\x80\x80", "b"}},  // U+3000
      {"a\xc2\xa0" "b", {"a", "\xc2\xa0", "b"}},          // U+00A0
      {"a\xc2\x85" "b", {"a", "\xc2\x85", "b"}},          // U+0085
      {"a\x1c" "b", {"a", "\x1c", "b"}},
      {"a \x1c", {"a", " \x1c"}},
      {"x\x1f\x1e y", {"x", "\x1f\x1e", " y"}},
      // invalid UTF-8: each byte an "other" character
      {"a\xff\xfe" "b", {"a", "\xff\xfe", "b"}},
      {" \xff!", {" \xff!"}},
      {"ab\xe2\x82", {"ab", "\xe2\x82"}},        // truncated sequence
      {"\xc3\xa9\xc3", {"\xc3\xa9", "\xc3"}},     // é then a lone lead byte
      {"a\xed\xa0\x80" "b", {"a", "\xed\xa0\x80", "b"}},  // an encoded surrogate
  };
  return c;
}

TEST(Gpt2Pretokenize, MatchesTheRegularExpression) {
  for (const Case& c : cases()) EXPECT_EQ(pieces_of(c.text), c.pieces) << "text: " << c.text;
}

TEST(Gpt2Pretokenize, CharacterClasses) {
  EXPECT_EQ(gpt2_char_class(U'a'), CharClass::letter);
  EXPECT_EQ(gpt2_char_class(U'\u01C5'), CharClass::letter);   // ǅ Lt
  EXPECT_EQ(gpt2_char_class(U'\u02B0'), CharClass::letter);   // ʰ Lm
  EXPECT_EQ(gpt2_char_class(U'\u4E2D'), CharClass::letter);   // 中 Lo
  EXPECT_EQ(gpt2_char_class(U'7'), CharClass::number);
  EXPECT_EQ(gpt2_char_class(U'\u0663'), CharClass::number);   // ٣ Nd
  EXPECT_EQ(gpt2_char_class(U'\u216B'), CharClass::number);   // Ⅻ Nl
  EXPECT_EQ(gpt2_char_class(U'\u00BD'), CharClass::number);   // ½ No
  EXPECT_EQ(gpt2_char_class(U'\u0301'), CharClass::other);    // combining acute
  EXPECT_EQ(gpt2_char_class(U'\U0001F600'), CharClass::other);
  EXPECT_EQ(gpt2_char_class(U'\uFEFF'), CharClass::other);    // not White_Space
  EXPECT_EQ(gpt2_char_class(U'\u200B'), CharClass::other);    // zero width space: Cf
  EXPECT_EQ(gpt2_char_class(U'\u180E'), CharClass::other);
  const std::vector<char32_t> spaces = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0,
                                        0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
                                        0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
                                        0x2028, 0x2029, 0x202F, 0x205F, 0x3000};
  int count = 0;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (is_gpt2_space(cp)) {
      ++count;
      EXPECT_EQ(gpt2_char_class(cp), CharClass::space) << std::hex << static_cast<std::uint32_t>(cp);
    }
  }
  EXPECT_EQ(count, 25);
  for (const char32_t cp : spaces) EXPECT_TRUE(is_gpt2_space(cp)) << std::hex << static_cast<std::uint32_t>(cp);
  for (char32_t cp = 0x1C; cp <= 0x1F; ++cp) {
    EXPECT_FALSE(is_gpt2_space(cp));
    EXPECT_EQ(gpt2_char_class(cp), CharClass::other);
  }
}

TEST(Gpt2Pretokenize, InvalidUtf8BytesAreSingleCharacters) {
  const std::vector<std::string> invalid = {
      "\x80", "\xbf", "\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xed\xa0\x80", "\xed\xbf\xbf",
      "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf8\x88\x80\x80\x80", "\xfe", "\xff",
      "\xe2\x82", "\xf0\x9f\x98"};
  for (const std::string& s : invalid) {
    const Utf8Char c = gpt2_char_at(s, 0);
    EXPECT_EQ(c.length, 1u) << "first byte " << static_cast<int>(static_cast<unsigned char>(s[0]));
    EXPECT_EQ(c.cls, CharClass::other);
  }
  EXPECT_EQ(gpt2_char_at("\xf0\x9f\x98\x80", 0).length, 4u);
  EXPECT_EQ(gpt2_char_at("\xe2\x82\xac", 0).length, 3u);
  EXPECT_EQ(gpt2_char_at("\xc3\xa9", 0).length, 2u);
  EXPECT_EQ(gpt2_char_at("\xc3\xa9", 0).cls, CharClass::letter);
}

TEST(Gpt2Pretokenize, PiecesConcatenateToAnyByteString) {
  Rng rng(1234);
  const std::vector<std::string> fragments = {" ",  "  ",  "\n", "\t",   "'s",  "'",
                                              "a",  "Zz",  "7",  "!",    "\xc3\xa9",
                                              "\xe3\x80\x80",  "\xf0\x9f\x98\x80", "\xc2\x85"};
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s;
    const auto n = rng.below(40);
    for (std::uint64_t i = 0; i < n; ++i) {
      if (rng.below(2) == 0)
        s.push_back(static_cast<char>(rng.below(256)));
      else
        s += fragments[rng.below(fragments.size())];
    }
    std::string joined;
    for (const std::string_view p : gpt2_pretokenize(s)) {
      ASSERT_FALSE(p.empty()) << "empty piece in iteration " << iter;
      joined += p;
    }
    ASSERT_EQ(joined, s) << "iteration " << iter;
  }
}

TEST(Gpt2Pretokenize, LongRunsAreOnePiece) {
  const std::string letters(100000, 'x');
  EXPECT_EQ(pieces_of(letters).size(), 1u);
  const std::string spaces(100000, ' ');
  EXPECT_EQ(pieces_of(spaces).size(), 1u);
  EXPECT_EQ(pieces_of(spaces + "x"), (std::vector<std::string>{std::string(99999, ' '), " x"}));
}

// Cutting at every safe point and pre-tokenizing the parts gives the pieces of the whole.
void expect_cuts_keep_pieces(std::string_view text) {
  const std::vector<std::string> whole = pieces_of(text);
  std::size_t cuts = 0;
  for (std::size_t at = gpt2_safe_cut(text, 0); at < text.size(); at = gpt2_safe_cut(text, at + 1)) {
    ++cuts;
    std::vector<std::string> parts = pieces_of(text.substr(0, at));
    for (std::string& p : pieces_of(text.substr(at))) parts.push_back(std::move(p));
    ASSERT_EQ(parts, whole) << "cut at byte " << at;
  }
  EXPECT_GT(cuts, 0u);
}

TEST(Gpt2SafeCut, CutsOnlyBetweenANewlineAndPrintableNeighbours) {
  const std::string text = "a \nb\n\nc\n d\xc2\xa0\ne\n\xc3\xa9x.\nY";
  // Not after " \n" (the space run would take the newline), not in "\n\n", not before " ", not
  // after U+00A0 or before U+00E9; only ".\nY".
  EXPECT_EQ(gpt2_safe_cut(text, 0), text.size() - 1);
  EXPECT_EQ(gpt2_safe_cut(text, text.size() - 1), text.size() - 1);
  EXPECT_EQ(gpt2_safe_cut(text, text.size()), text.size());
  EXPECT_EQ(gpt2_safe_cut("x\ny", 0), 2u);
  EXPECT_EQ(gpt2_safe_cut("x\ny", 3), 3u);
  EXPECT_EQ(gpt2_safe_cut("", 0), 0u);
  expect_cuts_keep_pieces(text);
}

TEST(Gpt2SafeCut, PartsPreTokenizeLikeTheWholeOnRealText) {
  for (const char* file : {"/README.md", "/docs/ARCHITECTURE.md", "/src/text/gpt2_pretokenize.cpp"}) {
    std::ifstream in(std::string(ORION_SOURCE_DIR) + file, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    ASSERT_GT(s.str().size(), 1000u) << file;
    expect_cuts_keep_pieces(s.str());
  }
}

}  // namespace
}  // namespace orion::text
