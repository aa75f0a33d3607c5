// orion init, generate, tokenize and perplexity as a user runs them, and every kind of broken
// model folder: each must give one clear error line naming the file and exit 1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;

class ModelDirCli : public CliFolderTest {
 protected:
  void SetUp() override {
    CliFolderTest::SetUp();
    const CliResult r = run_orion("init -o " + model() + " --layers 2 --dim 32 --heads 2 --context 64 --seed 3");
    ASSERT_EQ(r.status, 0) << r.out;
  }
  std::string model() const { return (dir_ / "m").string(); }
  std::string path(const char* f) const { return (dir_ / "m" / f).string(); }
  std::string read(const char* f) const {
    std::ifstream in(path(f), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void write(const char* f, const std::string& bytes) const { std::ofstream(path(f), std::ios::binary) << bytes; }
  // Generation must fail with exit status 1 and one line that names `file` and says `what`.
  void expect_broken(const char* file, const std::string& what) const {
    const CliResult r = run_orion("generate -m " + model() + " -p hi -n 2");
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find(file), std::string::npos) << "error does not name " << file << ": " << r.out;
    EXPECT_NE(r.out.find(what), std::string::npos) << "error does not say '" << what << "': " << r.out;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "not one line: " << r.out;
  }
};

TEST_F(ModelDirCli, InitThenGenerateIsReproducible) {
  const CliResult a = run_orion("generate -m " + model() + " -p 'Once upon a time' -n 12 --seed 7");
  const CliResult b = run_orion("generate -m " + model() + " -p 'Once upon a time' -n 12 --seed 7");
  ASSERT_EQ(a.status, 0) << a.out;
  EXPECT_EQ(a.out.substr(0, a.out.find("generated")), b.out.substr(0, b.out.find("generated")));
  EXPECT_EQ(a.out.rfind("Once upon a time", 0), 0u) << a.out;  // the prompt is echoed first
  EXPECT_NE(a.out.find("prompt 16 tokens, generated 12 tokens"), std::string::npos) << a.out;
}

TEST_F(ModelDirCli, InitRefusesToOverwriteWithoutForce) {
  const CliResult r = run_orion("init -o " + model() + " --layers 1 --dim 16 --heads 2");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("exists already"), std::string::npos) << r.out;
  EXPECT_EQ(run_orion("init -o " + model() + " --layers 1 --dim 16 --heads 2 --force").status, 0);
}

TEST_F(ModelDirCli, TokenizeRoundTrips) {
  const CliResult ids = run_orion("tokenize -m " + model() + " 'héllo wörld'");
  ASSERT_EQ(ids.status, 0) << ids.out;
  const CliResult text = run_orion("tokenize -m " + model() + " --decode " + ids.out);
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_EQ(text.out, "héllo wörld\n");
}

TEST_F(ModelDirCli, PerplexityJsonHasTheFields) {
  const std::string text = (dir_ / "t.txt").string();
  std::ofstream(text) << std::string(300, 'a') << " the end";
  const CliResult r = run_orion("perplexity -m " + model() + " -f " + text + " --json");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* key : {"\"tokens\": 307", "\"loss\":", "\"perplexity\":"})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << " in " << r.out;
}

TEST_F(ModelDirCli, MissingFolder) {
  const CliResult r = run_orion("generate -m " + (dir_ / "nothing").string() + " -p hi");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("nothing"), std::string::npos) << r.out;
}

TEST_F(ModelDirCli, TruncatedSafetensors) {
  const std::string s = read("model.safetensors");
  write("model.safetensors", s.substr(0, s.size() / 2));
  expect_broken("model.safetensors", "past the data region");
}

TEST_F(ModelDirCli, HeaderLengthPastEndOfFile) {
  std::string s = read("model.safetensors");
  const std::uint64_t huge = s.size() + 10;
  for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>((huge >> (8 * i)) & 0xff);
  write("model.safetensors", s);
  expect_broken("model.safetensors", "header");
}

TEST_F(ModelDirCli, OverlappingOffsets) {
  // Point the second tensor's data at the first one's: rewrite the header's offsets in place,
  // keeping its length, so that only the overlap is wrong.
  std::string s = read("model.safetensors");
  const std::uint64_t n = static_cast<unsigned char>(s[0]) | (static_cast<std::uint64_t>(static_cast<unsigned char>(s[1])) << 8) |
                          (static_cast<std::uint64_t>(static_cast<unsigned char>(s[2])) << 16);
  std::string header = s.substr(8, n);
  const auto first = header.find("\"data_offsets\":[0,");
  ASSERT_NE(first, std::string::npos) << header.substr(0, 300);
  const auto end_pos = first + std::string("\"data_offsets\":[0,").size();
  const std::string first_end = header.substr(end_pos, header.find(']', end_pos) - end_pos);
  const auto second = header.find("\"data_offsets\":[" + first_end + ",");
  ASSERT_NE(second, std::string::npos);
  std::string shifted = "\"data_offsets\":[" + std::string(first_end.size() - 1, ' ') + "1,";
  header.replace(second, shifted.size(), shifted);
  // The end offset stays, so the size no longer matches or the ranges overlap: both are errors.
  s.replace(8, n, header);
  write("model.safetensors", s);
  expect_broken("model.safetensors", "tensor");
}

TEST_F(ModelDirCli, MissingTensor) {
  std::string s = read("model.safetensors");
  const auto at = s.find("\"h.1.ln_2.bias\"");
  ASSERT_NE(at, std::string::npos);
  s[at + 1] = 'x';  // the tensor is renamed "x.1.ln_2.bias": h.1.ln_2.bias is missing
  write("model.safetensors", s);
  expect_broken("model.safetensors", "h.1.ln_2.bias");
}

TEST_F(ModelDirCli, ConfigThatDoesNotMatchTheWeights) {
  std::string c = read("config.json");
  const auto at = c.find("\"n_embd\": 32");
  ASSERT_NE(at, std::string::npos) << c;
  c.replace(at, 12, "\"n_embd\": 16");
  write("config.json", c);
  expect_broken("model.safetensors", "shape");
}

TEST_F(ModelDirCli, MalformedConfigJson) {
  write("config.json", "{\"n_embd\": 32, \"n_layer\": ");
  expect_broken("config.json", "JSON");
  write("config.json", "{\"n_embd\": \"wide\", \"n_layer\": 2, \"n_head\": 2, \"vocab_size\": 257}");
  expect_broken("config.json", "n_embd");
  write("config.json", "{\"n_embd\": 30, \"n_layer\": 2, \"n_head\": 4, \"vocab_size\": 257}");
  expect_broken("config.json", "multiple");
}

TEST_F(ModelDirCli, MalformedVocabulary) {
  write("vocab.json", "{\"a\": 0, \"b\": \"one\"}");
  expect_broken("vocab.json", ":");
}

TEST_F(ModelDirCli, MalformedMerges) {
  write("merges.txt", "#version: 0.2\nonly-one-symbol\n");
  expect_broken("merges.txt", ":2:");
}

}  // namespace
}  // namespace orion::test
