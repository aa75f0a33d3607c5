// SentencePieceTokenizer and the trainer on a small generated corpus: round trips, streaming
// pieces, the special ids, saving, and the errors for bad files and bad training input. (The
// comparison with spm_encode/spm_decode on the KJV is in tests/cli, where the trainer runs as
// `orion tokenizer train`.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "text/sentencepiece_trainer.h"

namespace orion::text {
namespace {

class SentencePiece : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing_util::TempDir;
    std::ofstream f(dir_->file("corpus.txt"));
    for (int i = 0; i < 300; ++i)
      f << "The quick brown fox " << i << " jumps over the lazy dog, and the dog sleeps on.\n";
    SentencePieceTrainOptions o;
    o.inputs = {dir_->file("corpus.txt")};
    o.vocab_size = 350;
    o.byte_fallback = true;
    o.threads = 1;
    tok_ = new SentencePieceTokenizer(train_sentencepiece(o));
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete dir_;
  }
  static testing_util::TempDir* dir_;
  static SentencePieceTokenizer* tok_;
};

testing_util::TempDir* SentencePiece::dir_ = nullptr;
SentencePieceTokenizer* SentencePiece::tok_ = nullptr;

TEST_F(SentencePiece, RoundTripsWithByteFallbackAndStreamsPieces) {
  const SentencePieceTokenizer& t = *tok_;
  EXPECT_EQ(t.vocab_size(), 350);
  EXPECT_EQ(t.kind(), "sentencepiece");
  EXPECT_TRUE(t.byte_fallback());
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  for (const std::string s : {"The quick brown fox", "zebra ñandú 東京 🙂", "  two spaces", "digits 2024", ""}) {
    const std::vector<std::int32_t> ids = t.encode(s);
    EXPECT_EQ(t.decode(ids), s);
    std::string pieces;
    for (std::int32_t id : ids) pieces += t.piece(id);
    EXPECT_EQ(pieces, s.empty() ? "" : " " + std::string(s)) << "word mark before the first word";
  }
  EXPECT_EQ(t.piece(1), "");  // control tokens spell nothing
  EXPECT_EQ(t.encode("brown fox").size() < std::string("brown fox").size(), true) << "merges learned";
}

TEST_F(SentencePiece, SavesTheModelByteForByte) {
  testing_util::TempDir out;
  tok_->save(out.path() + "/sub");
  const SentencePieceTokenizer back = SentencePieceTokenizer::load(out.path() + "/sub/tokenizer.model");
  EXPECT_EQ(back.serialized(), tok_->serialized());
  EXPECT_EQ(back.encode("The lazy dog"), tok_->encode("The lazy dog"));
}

TEST_F(SentencePiece, ErrorsNameTheFile) {
  try {
    SentencePieceTokenizer::load(dir_->file("missing.model"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.model: cannot open"), std::string::npos) << e.what();
  }
  std::ofstream(dir_->file("junk.model")) << "\x0a\xff\xff junk";
  try {
    SentencePieceTokenizer::load(dir_->file("junk.model"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("junk.model: not a SentencePiece model"), std::string::npos) << e.what();
  }
  const std::int32_t outside[] = {350};
  EXPECT_THROW(tok_->decode(outside), Error);
  EXPECT_THROW(tok_->piece(-1), Error);
}

TEST_F(SentencePiece, TrainingErrorsAreClear) {
  SentencePieceTrainOptions o;
  o.inputs = {dir_->file("nothing.txt")};
  try {
    train_sentencepiece(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nothing.txt: no such file"), std::string::npos) << e.what();
  }
  o.inputs = {dir_->file("corpus.txt")};
  o.vocab_size = 100000;
  try {
    train_sentencepiece(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer training failed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace orion::text
