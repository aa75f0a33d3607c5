#include "train/data/token_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/random.h"
#include "core/temp_folder.h"

namespace orion::train {
namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

template <typename T>
void poke(std::string& bytes, std::size_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof v);
}

std::vector<std::int32_t> random_tokens(std::size_t n, std::uint64_t vocab, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::int32_t> t(n);
  for (auto& v : t) v = static_cast<std::int32_t>(rng.below(vocab));
  return t;
}

// The message of the error `fn` throws.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

class TokenFileTest : public ::testing::Test {
 protected:
  TempFolder dir_{"orion-token-file-test"};
  std::string path(const std::string& name) const { return dir_.path() + "/" + name; }

  // A valid small file (vocabulary 1000: 2-byte tokens): 40 training and 10 validation tokens.
  std::string valid_bytes() {
    write_token_file(path("ok.tok"), 1000, 999, random_tokens(40, 1000, 1), random_tokens(10, 1000, 2));
    return read_bytes(path("ok.tok"));
  }
  std::string open_error(const std::string& bytes) {
    write_bytes(path("bad.tok"), bytes);
    return error_of([&] { TokenFile::open(path("bad.tok")); });
  }
};

TEST_F(TokenFileTest, RoundTripsWithTwoByteTokens) {
  const auto train = random_tokens(1000, 50257, 3), val = random_tokens(77, 50257, 4);
  write_token_file(path("a.tok"), 50257, 50256, train, val);
  EXPECT_EQ(std::filesystem::file_size(path("a.tok")), 64u + 2u * (1000 + 77));
  const TokenFile f = TokenFile::open(path("a.tok"));
  EXPECT_EQ(f.header().width, 2u);
  EXPECT_EQ(f.vocab_size(), 50257u);
  EXPECT_EQ(f.header().eot_id, 50256u);
  EXPECT_EQ(f.tokens(Split::train), train);
  EXPECT_EQ(f.tokens(Split::val), val);
  EXPECT_EQ(f.at(Split::val, 5), val[5]);
}

TEST_F(TokenFileTest, RoundTripsWithFourByteTokensAndNoEndOfText) {
  // 65536 ids still fit in a u16; one more needs 4 bytes.
  EXPECT_EQ(token_width_for(65536), 2u);
  EXPECT_EQ(token_width_for(65537), 4u);
  auto train = random_tokens(500, 128256, 5);
  train[7] = 128255;  // the largest id, past what 16 bits hold
  const auto val = random_tokens(30, 128256, 6);
  write_token_file(path("b.tok"), 128256, std::nullopt, train, val);
  EXPECT_EQ(std::filesystem::file_size(path("b.tok")), 64u + 4u * (500 + 30));
  const TokenFile f = TokenFile::open(path("b.tok"));
  EXPECT_EQ(f.header().width, 4u);
  EXPECT_FALSE(f.header().eot_id.has_value());
  EXPECT_EQ(f.tokens(Split::train), train);
  EXPECT_EQ(f.tokens(Split::val), val);
  std::vector<std::int32_t> part(3);
  f.copy(Split::train, 6, part);
  EXPECT_EQ(part, (std::vector<std::int32_t>{train[6], train[7], train[8]}));
  EXPECT_NE(error_of([&] { f.copy(Split::val, 28, part); }).find("past the end of the val split"), std::string::npos);
}

TEST_F(TokenFileTest, HeaderFieldsAreAtTheDocumentedOffsets) {
  const std::string b = valid_bytes();
  EXPECT_EQ(b.substr(0, 8), "ORIONTOK");
  auto u32 = [&](std::size_t at) { std::uint32_t v; std::memcpy(&v, b.data() + at, 4); return v; };
  auto u64 = [&](std::size_t at) { std::uint64_t v; std::memcpy(&v, b.data() + at, 8); return v; };
  EXPECT_EQ(u32(8), 1u);
  EXPECT_EQ(u32(12), 2u);
  EXPECT_EQ(u64(16), 1000u);
  EXPECT_EQ(u64(24), 40u);
  EXPECT_EQ(u64(32), 10u);
  EXPECT_EQ(u64(40), 999u);
  const auto first = random_tokens(40, 1000, 1)[0];
  std::uint16_t t;
  std::memcpy(&t, b.data() + 64, 2);
  EXPECT_EQ(t, first);
}

TEST_F(TokenFileTest, TheCopyKeepsTheMappingAlive) {
  valid_bytes();
  std::optional<TokenFile> copy;
  {
    const TokenFile f = TokenFile::open(path("ok.tok"));
    copy.emplace(f);
  }
  std::filesystem::remove(path("ok.tok"));
  EXPECT_EQ(copy->tokens(Split::val), random_tokens(10, 1000, 2));
}

TEST_F(TokenFileTest, WriterRefusesTokensOutsideTheVocabulary) {
  const std::vector<std::int32_t> bad{1, 2, 1000};
  const std::string e = error_of([&] { write_token_file(path("w.tok"), 1000, std::nullopt, bad, {}); });
  EXPECT_NE(e.find("w.tok"), std::string::npos) << e;
  EXPECT_NE(e.find("train token 2: id 1000"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(path("w.tok")));
  const std::vector<std::int32_t> negative{-1};
  EXPECT_NE(error_of([&] { write_token_file(path("w.tok"), 1000, std::nullopt, {}, negative); }).find("val token 0: id -1"),
            std::string::npos);
}

TEST_F(TokenFileTest, ATruncatedHeaderNamesTheFileAndWhereItEnds) {
  const std::string e = open_error(valid_bytes().substr(0, 30));
  EXPECT_NE(e.find("bad.tok: at byte 30: the file ends inside the token file header"), std::string::npos) << e;
  EXPECT_NE(open_error("").find("bad.tok: at byte 0:"), std::string::npos);
}

TEST_F(TokenFileTest, BadMagicIsReportedAtByteZero) {
  std::string b = valid_bytes();
  b[3] = 'X';
  EXPECT_NE(open_error(b).find("bad.tok: at byte 0: not a token file"), std::string::npos) << open_error(b);
}

TEST_F(TokenFileTest, AnUnknownVersionIsReportedAtItsOffset) {
  std::string b = valid_bytes();
  poke<std::uint32_t>(b, 8, 7);
  const std::string e = open_error(b);
  EXPECT_NE(e.find("at byte 8: token file version 7 is not supported"), std::string::npos) << e;
}

TEST_F(TokenFileTest, AWidthThatContradictsTheVocabularyIsRefused) {
  std::string b = valid_bytes();
  poke<std::uint32_t>(b, 12, 3);
  EXPECT_NE(open_error(b).find("at byte 12: token width 3 is neither 2 nor 4"), std::string::npos) << open_error(b);
  poke<std::uint32_t>(b, 12, 4);
  EXPECT_NE(open_error(b).find("at byte 12: token width 4 does not match the vocabulary of 1000"), std::string::npos)
      << open_error(b);
  b = valid_bytes();
  poke<std::uint64_t>(b, 16, 0);
  EXPECT_NE(open_error(b).find("at byte 16: vocabulary size 0"), std::string::npos) << open_error(b);
}

TEST_F(TokenFileTest, CountsPastTheEndAreReportedAtTheirField) {
  std::string b = valid_bytes();
  poke<std::uint64_t>(b, 24, 41);  // 41 + 10 tokens need 102 bytes; there are 100
  EXPECT_NE(open_error(b).find("at byte 32: 10 validation tokens of 2 bytes do not fit"), std::string::npos)
      << open_error(b);
  poke<std::uint64_t>(b, 24, std::uint64_t{1} << 62);  // would overflow a byte count
  EXPECT_NE(open_error(b).find("at byte 24: 4611686018427387904 training tokens of 2 bytes do not fit"), std::string::npos)
      << open_error(b);
  b = valid_bytes();
  EXPECT_NE(open_error(b.substr(0, b.size() - 1)).find("at byte 32:"), std::string::npos);
  const std::string e = open_error(b + "xy");
  EXPECT_NE(e.find("at byte 164: 2 bytes follow the last token"), std::string::npos) << e;
}

TEST_F(TokenFileTest, ATokenOutsideTheVocabularyIsReportedWithItsByteOffset) {
  std::string b = valid_bytes();
  poke<std::uint16_t>(b, 64 + 2 * 43, 1000);  // validation token 3
  const std::string e = open_error(b);
  EXPECT_NE(e.find("bad.tok: at byte 150: token 1000 (validation token 3) is not below the vocabulary size 1000"),
            std::string::npos) << e;
  b = valid_bytes();
  poke<std::uint16_t>(b, 64 + 2 * 5, 65535);
  EXPECT_NE(open_error(b).find("at byte 74: token 65535 (training token 5)"), std::string::npos) << open_error(b);
}

TEST_F(TokenFileTest, AnEndOfTextIdOutsideTheVocabularyIsRefused) {
  std::string b = valid_bytes();
  poke<std::uint64_t>(b, 40, 1000);
  EXPECT_NE(open_error(b).find("at byte 40: end-of-text id 1000"), std::string::npos) << open_error(b);
}

TEST_F(TokenFileTest, AChangedTokenBreaksTheChecksum) {
  std::string b = valid_bytes();
  std::uint16_t t;
  std::memcpy(&t, b.data() + 70, 2);
  poke<std::uint16_t>(b, 70, static_cast<std::uint16_t>((t + 1) % 1000));
  EXPECT_NE(open_error(b).find("at byte 48: the checksum does not match"), std::string::npos) << open_error(b);
}

}  // namespace
}  // namespace orion::train
