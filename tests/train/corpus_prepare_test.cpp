// train::prepare_corpus: text files through a model folder's tokenizer into a token file, each
// document's tail held out; what it reports, its progress, and inputs that cannot be prepared.
#include "train/data/corpus_prepare.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "error_of.h"
#include "model/model_init.h"
#include "train/data/token_file.h"

namespace orion::train {
namespace {

// A folder with orion init's byte-level model (every byte one token, end-of-text 256).
std::string byte_level_model(const testing_util::TempDir& dir) {
  model::InitOptions o;
  o.out = dir.path() + "/m";
  o.layers = 1, o.dim = 32, o.heads = 2, o.context = 16;
  model::init_model(o);
  return o.out;
}

std::string write_corpus_file(const testing_util::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(CorpusPrepare, WritesBothSplitsAndReportsThem) {
  testing_util::TempDir dir;
  const std::string m = byte_level_model(dir);
  const std::vector<std::string> in = {write_corpus_file(dir, "a.txt", std::string(55, 'a')),
                                       write_corpus_file(dir, "b.txt", std::string(42, 'b'))};
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  const PreparedCorpus p = prepare_corpus(m, in, 0.2, dir.path() + "/c.tok",
                                          [&](std::size_t done, std::size_t total) { calls.emplace_back(done, total); });
  EXPECT_EQ(p.files, 2u);
  EXPECT_EQ(p.bytes, 97u);
  EXPECT_EQ(p.vocab_size, 257u);
  // 20% of 55 is 11 held out, of 42 rounds to 8; each part ends with end-of-text.
  EXPECT_EQ(p.train_tokens, 44u + 1 + 34 + 1);
  EXPECT_EQ(p.val_tokens, 11u + 1 + 8 + 1);
  EXPECT_LE(p.tokenize_seconds, p.seconds);
  const TokenFile f = TokenFile::open(dir.path() + "/c.tok");
  EXPECT_EQ(f.size(Split::train), p.train_tokens);
  EXPECT_EQ(f.size(Split::val), p.val_tokens);
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.front(), (std::pair<std::size_t, std::size_t>{0, 97}));
  for (const auto& [done, total] : calls) EXPECT_EQ(total, 97u);
}

TEST(CorpusPrepare, AMissingInputFailsBeforeAnythingIsWritten) {
  testing_util::TempDir dir;
  const std::string m = byte_level_model(dir);
  const std::vector<std::string> in = {write_corpus_file(dir, "a.txt", "text"), dir.path() + "/missing.txt"};
  EXPECT_THROW(prepare_corpus(m, in, 0.1, dir.path() + "/c.tok"), Error);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/c.tok"));
}

TEST(CorpusPrepare, AnEmptyCorpusIsAnError) {
  testing_util::TempDir dir;
  const std::string m = byte_level_model(dir);
  const std::vector<std::string> in = {write_corpus_file(dir, "e.txt", "")};
  const std::string e = orion::testing::error_of([&] { prepare_corpus(m, in, 0.1, dir.path() + "/c.tok"); });
  EXPECT_NE(e.find("the corpus is empty: 1 input file holds no text"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/c.tok"));
}

}  // namespace
}  // namespace orion::train
