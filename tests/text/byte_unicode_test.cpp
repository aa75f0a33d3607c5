#include "text/byte_unicode.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace orion::text {
namespace {

TEST(ByteUnicode, IsABijectionOnto256CodePoints) {
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const char32_t cp = byte_to_unicode(static_cast<std::uint8_t>(b));
    EXPECT_TRUE(seen.insert(cp).second) << "byte " << b << " maps to a code point already used";
    EXPECT_EQ(unicode_to_byte(cp), b);
  }
  EXPECT_EQ(seen.size(), 256u);
  // The 188 printable bytes map to themselves, the other 68 to U+0100..U+0143 in order.
  int identity = 0;
  char32_t next_shifted = 0x100;
  for (int b = 0; b < 256; ++b) {
    const char32_t cp = byte_to_unicode(static_cast<std::uint8_t>(b));
    if (cp == static_cast<char32_t>(b)) {
      ++identity;
    } else {
      EXPECT_EQ(cp, next_shifted) << "byte " << b;
      ++next_shifted;
    }
  }
  EXPECT_EQ(identity, 188);
  EXPECT_EQ(next_shifted, char32_t{0x144});
}

TEST(ByteUnicode, KnownAnchors) {
  EXPECT_EQ(byte_to_unicode(' '), U'\u0120');  // 'Ġ'
  EXPECT_EQ(byte_to_unicode('\n'), U'\u010A');  // 'Ċ'
  EXPECT_EQ(byte_to_unicode('\t'), U'\u0109');  // 'ĉ'
  EXPECT_EQ(byte_to_unicode(0x00), U'\u0100');
  EXPECT_EQ(byte_to_unicode(0x7F), U'\u0121');
  EXPECT_EQ(byte_to_unicode(0xA0), U'\u0142');
  EXPECT_EQ(byte_to_unicode(0xAD), U'\u0143');
  EXPECT_EQ(byte_to_unicode('!'), U'!');
  EXPECT_EQ(byte_to_unicode('~'), U'~');
  EXPECT_EQ(byte_to_unicode(0xA1), U'\u00A1');
  EXPECT_EQ(byte_to_unicode(0xFF), U'\u00FF');
  EXPECT_EQ(byte_to_utf8(' '), "\xC4\xA0");
  EXPECT_EQ(byte_to_utf8('A'), "A");
  EXPECT_EQ(byte_to_utf8(0xE9), "\xC3\xA9");  // 'é' stands for itself
  EXPECT_EQ(unicode_to_byte(U'\u0144'), -1);
  EXPECT_EQ(unicode_to_byte(U' '), -1);
  EXPECT_EQ(unicode_to_byte(U'\u20AC'), -1);
}

TEST(ByteUnicode, Gpt2OrderIsTheOrderOfCodePoints) {
  const auto& order = gpt2_byte_order();
  std::set<int> bytes(order.begin(), order.end());
  EXPECT_EQ(bytes.size(), 256u);
  for (std::size_t i = 1; i < order.size(); ++i)
    EXPECT_LT(byte_to_unicode(order[i - 1]), byte_to_unicode(order[i])) << "position " << i;
  EXPECT_EQ(order[0], '!');     // GPT-2's id 0
  EXPECT_EQ(order[187], 0xFF);  // the last printable byte
  EXPECT_EQ(order[188], 0x00);  // 'Ā'
  EXPECT_EQ(order[188 + 32], ' ');  // id 220 is 'Ġ'
}

TEST(ByteUnicode, TokenTextRoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::string text = bytes_to_token_text(all);
  EXPECT_EQ(text.size(), 94u + 2 * 162u);  // printable ASCII is one byte, all others two
  const auto back = token_text_to_bytes(text);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, all);
  EXPECT_EQ(bytes_to_token_text(" the"), "\xC4\xA0the");
  EXPECT_EQ(token_text_to_bytes("\xC4\xA0the"), std::optional<std::string>(" the"));
}

TEST(ByteUnicode, TokenTextOutsideTheMapIsRejected) {
  EXPECT_FALSE(token_text_to_bytes("a b").has_value());          // a raw space is not mapped
  EXPECT_FALSE(token_text_to_bytes("\xE2\x82\xAC").has_value());  // U+20AC
  EXPECT_FALSE(token_text_to_bytes("\xC4").has_value());          // truncated UTF-8
  EXPECT_FALSE(token_text_to_bytes("\xFF").has_value());          // invalid UTF-8
  EXPECT_EQ(token_text_to_bytes(""), std::optional<std::string>(""));
}

TEST(ByteUnicode, AppendUtf8) {
  std::string s;
  append_utf8(s, U'A');
  append_utf8(s, U'\u00E9');
  append_utf8(s, U'\u20AC');
  append_utf8(s, U'\U0001F600');
  EXPECT_EQ(s, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
}

}  // namespace
}  // namespace orion::text
