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

// A model with a zero-length unigram piece, the input fuzz/sentencepiece_fuzz.cpp found: the
// library's trie builder throws from inside the load instead of returning its Status.
TEST_F(SentencePiece, AZeroLengthPieceIsAnErrorNotACrash) {
  const std::string hex =
      "0a0e0a053c756e6b3e150000000018020a0c0a033c733e150009000018030a0d0a043c2f73c2150000000018030a090a"
      "02746815000004c20a0d0a06e29681416e6415000008c20a0d0a06e29681476f641500000cc20a0d0a06e29681616e64"
      "15000010c20a0d0a06e2968162656715000014c20a0a0a03e2968115000018c20a080a01651500001cc20a080a017415"
      "000020c20a080a016815000024c20a080a016e15000028c20a080a01611500002cc20a080a016415000030c20a080a01"
      "7215000034c20a080a016915000038c20a080a016f1500003cc20a080a012e15000040c20a080a016715000044c20a08"
      "0a017715000048c20a080a01411500004cc20a080a014715000050c20a080a014915000054c20a080a016215000058c2"
      "0a080a01001563005cc20a080a016615000060c20a080a016d15000064746578742e7478741802204080010190018080"
      "04c80101d00101980200c00200c80201d00202d802ffffffffffffffffff011a100a086964656e746974791200180120"
      "00";
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  try {
    (void)SentencePieceTokenizer::from_serialized(bytes, "fuzz/tokenizer.model");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fuzz/tokenizer.model: not a SentencePiece model: "), std::string::npos) << e.what();
  }
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
