// model::ModelFolder: a folder's model and tokenizer found by their file names, the checks
// between them, and the names themselves, which the writers (tokenizers, init) share.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "model/formats/safetensors.h"
#include "model/gpt2/gpt2_model.h"
#include "model/model_folder.h"
#include "text/bpe_tokenizer.h"
#include "text/tokenizer_files.h"

namespace orion::model {
namespace {

namespace fs = std::filesystem;

class ModelFolderTest : public ::testing::Test {
 protected:
  // A small GPT-2 whose vocabulary is the byte-level tokenizer's 257 tokens (or `vocab`).
  void write_gpt2(std::int64_t vocab = 257) {
    Gpt2Config c;
    c.n_embd = 32; c.n_layer = 1; c.n_head = 2; c.n_positions = 16; c.vocab_size = vocab; c.eos_token_id = vocab - 1;
    const TensorMap w = gpt2_init_weights(c, 5);
    std::vector<std::pair<std::string, Tensor>> tensors(w.begin(), w.end());
    write_safetensors(dir_.file(kWeightsFile), tensors, {});
    std::ofstream(dir_.file(kConfigFile)) << gpt2_config_json(c);
    text::BpeTokenizer::byte_level().save(dir_.path());
  }
  std::string load_error() {
    try {
      ModelFolder::load(dir_.path());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  testing_util::TempDir dir_;
};

TEST_F(ModelFolderTest, PathsAreTheFolderAndTheFileNames) {
  EXPECT_EQ(model_config_path("m"), (fs::path("m") / "config.json").string());
  EXPECT_EQ(model_weights_path("m"), (fs::path("m") / "model.safetensors").string());
}

TEST_F(ModelFolderTest, LoadsTheModelAndTheTokenizerTheTokenizerSaved) {
  write_gpt2();
  EXPECT_TRUE(fs::exists(dir_.file(text::kBpeVocabFile)));
  EXPECT_TRUE(fs::exists(dir_.file(text::kBpeMergesFile)));
  const ModelFolder f = ModelFolder::load(dir_.path());
  EXPECT_EQ(f.dir, dir_.path());
  EXPECT_EQ(f.lm().arch(), "gpt2");
  EXPECT_EQ(f.tokenizer->kind(), "bpe");
  EXPECT_EQ(f.tokenizer->vocab_size(), 257);
  EXPECT_NO_THROW(f.gpt2("test"));
  // GPT-2 has no BOS: an empty text is the end-of-text token that starts a document.
  EXPECT_EQ(f.text_ids(""), std::vector<std::int32_t>{256});
  EXPECT_EQ(f.text_ids("hi"), f.tokenizer->encode("hi"));
}

TEST_F(ModelFolderTest, ATokenizerLargerThanTheModelNamesItsFile) {
  write_gpt2(200);
  const std::string e = load_error();
  EXPECT_NE(e.find(text::kBpeVocabFile), std::string::npos) << e;
  EXPECT_NE(e.find("more than the model's vocab_size 200"), std::string::npos) << e;
}

TEST_F(ModelFolderTest, OpenAiSpellingOfTheBpeFilesIsRead) {
  write_gpt2();
  fs::rename(dir_.file(text::kBpeVocabFile), dir_.file(text::kOpenAiVocabFile));
  fs::rename(dir_.file(text::kBpeMergesFile), dir_.file(text::kOpenAiMergesFile));
  EXPECT_EQ(load_tokenizer(dir_.path())->vocab_size(), 257);
}

TEST_F(ModelFolderTest, ABrokenConfigIsNamedOnce) {
  write_gpt2();
  std::ofstream(dir_.file(kConfigFile)) << "{\"n_embd\": ";
  const std::string e = load_error();
  EXPECT_NE(e.find(model_config_path(dir_.path())), std::string::npos) << e;
}

}  // namespace
}  // namespace orion::model
