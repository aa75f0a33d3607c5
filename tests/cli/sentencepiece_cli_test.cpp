// The SentencePiece path against the library's own command-line tools: a vocabulary trained
// by `orion tokenizer train` on the default corpus (the KJV, 4.1 MB, written into the build's
// test-data folder by scripts/fetch_corpus.sh), then every line of the corpus plus lines that
// need byte fallback encoded by Orion's tokenizer and by `spm_encode`, and decoded by both.
// Ids and texts must be identical; the streaming pieces must spell the same text. At the small
// scale (tests/test_scale.h) the corpus is the KJV's first 512 KB, for training and comparing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"
#include "test_scale.h"
#include "text/sentencepiece_tokenizer.h"

namespace orion::test {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// ORION_TEST_DATA/kjv.txt, written there by scripts/fetch_corpus.sh (idempotent) if missing.
std::string corpus() {
  const char* dir = std::getenv("ORION_TEST_DATA");
  if (!dir || !*dir) {
    ADD_FAILURE() << "ORION_TEST_DATA is not set: run the tests through ctest";
    return "";
  }
  const std::string cmd = std::string(ORION_SOURCE_DIR) + "/scripts/fetch_corpus.sh " + dir + " 2>&1";
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << cmd << " failed";
  return std::string(dir) + "/kjv.txt";
}

class SentencePieceCli : public CliFolderTest {};

TEST_F(SentencePieceCli, EncodesAndDecodesTheCorpusLikeSpmEncodeAndSpmDecode) {
  std::string kjv = corpus();
  ASSERT_FALSE(kjv.empty());
  std::string text = read_file(kjv);
  ASSERT_GT(text.size(), 4'000'000u);
  if (testing_util::small_scale()) {
    text.resize(text.rfind('\n', 512 * 1024) + 1);
    kjv = write("kjv_start.txt", text);
  }
  const CliResult tr =
      run_orion("tokenizer train --vocab 2000 --byte-fallback --in " + kjv + " --out " + path("tok") + " --threads 2");
  ASSERT_EQ(tr.status, 0) << tr.out;
  EXPECT_NE(tr.out.find("tokenizer: wrote"), std::string::npos) << tr.out;
  const std::string model = path("tok") + "/tokenizer.model";

  // The corpus and lines outside its alphabet: accents, CJK, an emoji (byte fallback), runs of
  // spaces, a leading space, digits.
  text += "naïve café — Ελληνικά, 東京 🙂\n  two  leading spaces, and 12345 digits\n\ttab\n";
  const std::string input = write("input.txt", text);
  const std::vector<std::string> lines = lines_of(text);

  ASSERT_EQ(std::system(("spm_encode --model=" + model + " --output_format=id < " + input + " > " + path("ids.txt")).c_str()), 0);
  ASSERT_EQ(std::system(("spm_decode --model=" + model + " --input_format=id < " + path("ids.txt") + " > " + path("decoded.txt")).c_str()), 0);
  const std::vector<std::string> spm_ids = lines_of(read_file(path("ids.txt")));
  const std::vector<std::string> spm_text = lines_of(read_file(path("decoded.txt")));
  ASSERT_EQ(spm_ids.size(), lines.size());
  ASSERT_EQ(spm_text.size(), lines.size());

  const text::SentencePieceTokenizer tok = text::SentencePieceTokenizer::load(model);
  EXPECT_EQ(tok.vocab_size(), 2000);
  EXPECT_TRUE(tok.byte_fallback());
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  std::size_t mismatched_ids = 0, mismatched_text = 0, mismatched_pieces = 0, tokens = 0, byte_tokens = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::vector<std::int32_t> ids = tok.encode(lines[i]);
    tokens += ids.size();
    std::string joined, pieces;
    for (std::int32_t id : ids) {
      joined += (joined.empty() ? "" : " ") + std::to_string(id);
      pieces += tok.piece(id);
      if (id >= 3 && id < 3 + 256) ++byte_tokens;
    }
    if (joined != spm_ids[i] && mismatched_ids++ < 3) ADD_FAILURE() << "line " << i + 1 << ": ids differ from spm_encode";
    const std::string decoded = tok.decode(ids);
    if (decoded != spm_text[i] && mismatched_text++ < 3) ADD_FAILURE() << "line " << i + 1 << ": text differs from spm_decode";
    // Streaming: the pieces spell the text, with the word mark the model puts before the first word.
    if (pieces != (lines[i].empty() ? "" : " ") + decoded && mismatched_pieces++ < 3)
      ADD_FAILURE() << "line " << i + 1 << ": pieces spell '" << pieces << "'";
    EXPECT_EQ(decoded, lines[i]) << "line " << i + 1 << " does not round-trip";
  }
  EXPECT_EQ(mismatched_ids, 0u);
  EXPECT_EQ(mismatched_text, 0u);
  EXPECT_EQ(mismatched_pieces, 0u);
  EXPECT_GT(tokens, testing_util::at_scale(800'000u, 100'000u));  // the corpus is really tokenized, not skipped
  EXPECT_GT(byte_tokens, 10u);  // and the extra lines went through byte fallback
}

TEST_F(SentencePieceCli, TrainErrorsAreClear) {
  CliResult r = run_orion("tokenizer train --vocab 100 --in " + path("missing.txt") + " --out " + path("tok"));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("missing.txt: no such file"), std::string::npos) << r.out;

  const std::string small = write("small.txt", "a tiny corpus\nwith two lines\n");
  r = run_orion("tokenizer train --vocab 5000 --in " + small + " --out " + path("tok"));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("orion: error: tokenizer training failed: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Vocabulary size too high"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(path("tok") + "/tokenizer.model"));

  r = run_orion("tokenizer train --vocab 100 --model-type word --in " + small + " --out " + path("tok"));
  EXPECT_EQ(r.status, 2) << r.out;
  r = run_orion("tokenizer train --in " + small + " --out " + path("tok"));
  EXPECT_EQ(r.status, 2) << r.out;  // --vocab is required

  fs::create_directories(path("bad"));
  write("bad/tokenizer.model", "not a protobuf");
  r = run_orion("tokenize -m " + path("bad") + " hello");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("bad/tokenizer.model: not a SentencePiece model"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace orion::test
