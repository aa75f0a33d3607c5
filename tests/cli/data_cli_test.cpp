// orion data prepare as a user runs it: a model from orion init, text files in, a token file out
// that the trainer's reader opens; and its errors.
#include <gtest/gtest.h>

#include <cmath>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"
#include "text/bpe_tokenizer.h"
#include "text/sentencepiece_trainer.h"
#include "text/text_test_data.h"
#include "train/data/token_file.h"

namespace orion::test {
namespace {

using train::Split;
using train::TokenFile;

class DataCli : public CliFolderTest {
 protected:
  // A small model with orion init's default byte-level vocabulary (every byte one token, 257
  // tokens with end-of-text).
  std::string model() {
    const CliResult r = run_orion("init -o " + path("m") + " --layers 1 --dim 32 --heads 2 --context 32");
    EXPECT_EQ(r.status, 0) << r.out;
    return path("m");
  }
};

TEST_F(DataCli, PreparesDocumentsWithTheTailOfEachHeldOut) {
  const std::string m = model();
  const std::string a = "In the beginning God created the heaven and the earth.\n";  // 55 bytes
  const std::string b = "And the earth was without form, and void.\n";              // 42 bytes
  const CliResult r = run_orion("data prepare -m " + m + " --in " + write("a.txt", a) + " " + write("b.txt", b) +
                                " --out " + path("c.tok") + " --val-fraction 0.2");
  ASSERT_EQ(r.status, 0) << r.out;
  // 97 bytes, and an end-of-text after each document's training and validation parts.
  EXPECT_NE(r.out.find("101 tokens from 2 files"), std::string::npos) << r.out;
  const TokenFile f = TokenFile::open(path("c.tok"));
  const text::BpeTokenizer bytes = text::BpeTokenizer::byte_level();
  EXPECT_EQ(f.vocab_size(), 257u);
  EXPECT_EQ(f.header().eot_id, 256u);
  // 20% of 55 is 11 tokens, of 42 rounds to 8; each part ends with end-of-text.
  const std::string eot = "<|endoftext|>";
  EXPECT_EQ(bytes.decode(f.tokens(Split::train)), a.substr(0, 44) + eot + b.substr(0, 34) + eot);
  EXPECT_EQ(bytes.decode(f.tokens(Split::val)), a.substr(44) + eot + b.substr(34) + eot);
}

TEST_F(DataCli, ALargeTextEncodesInPartsToTheTokensOfTheWhole) {
  // GPT-2's vocabulary (merges and all) on 2.5 MB of prose: the command encodes 1 MB parts.
  const text::BpeTokenizer* gpt2 = text::testing::gpt2_tokenizer();
  ASSERT_NE(gpt2, nullptr);
  gpt2->save(path("g"));
  const CliResult init = run_orion("init -o " + path("g") + " --layers 1 --dim 32 --heads 2 --context 32 --tokenizer " + path("g"));
  ASSERT_EQ(init.status, 0) << init.out;
  const std::string text = text::testing::english_prose(2'500'000);
  const CliResult r = run_orion("data prepare -m " + path("g") + " --in " + write("big.txt", text) + " --out " +
                                path("big.tok") + " --val-fraction 0");
  ASSERT_EQ(r.status, 0) << r.out;
  std::vector<std::int32_t> expected = gpt2->encode(text);
  expected.push_back(gpt2->eot_id());
  const TokenFile f = TokenFile::open(path("big.tok"));
  EXPECT_EQ(f.size(Split::val), 0u);
  EXPECT_TRUE(f.tokens(Split::train) == expected) << f.size(Split::train) << " tokens, expected " << expected.size();
  EXPECT_EQ(f.header().width, 2u);
}

// A Llama model's texts start with BOS (its config.json's bos_token_id, which generation puts
// before every prompt): each part of each document starts with it in the token file.
TEST_F(DataCli, LlamaDocumentsStartWithBos) {
  const std::string text = text::testing::english_prose(20'000);
  text::SentencePieceTrainOptions o;
  o.inputs = {write("corpus.txt", text)};
  o.vocab_size = 600;  // the prose's characters and 256 byte pieces, and some merges
  o.byte_fallback = true;
  o.threads = 1;
  const text::SentencePieceTokenizer spm = text::train_sentencepiece(o);
  spm.save(path("tok"));
  const CliResult init = run_orion("init --arch llama -o " + path("l") + " --layers 1 --dim 32 --heads 2 --context 32 "
                                   "--tokenizer " + path("tok"));
  ASSERT_EQ(init.status, 0) << init.out;
  const CliResult r = run_orion("data prepare -m " + path("l") + " --in " + path("corpus.txt") + " --out " + path("l.tok") +
                                " --val-fraction 0.25");
  ASSERT_EQ(r.status, 0) << r.out;
  ASSERT_TRUE(spm.bos_id() && spm.eos_id());
  const std::vector<std::int32_t> all = spm.encode(text);
  const auto held = static_cast<std::size_t>(std::llround(0.25 * static_cast<double>(all.size())));
  std::vector<std::int32_t> train = {*spm.bos_id()}, val = {*spm.bos_id()};
  train.insert(train.end(), all.begin(), all.end() - static_cast<std::ptrdiff_t>(held));
  val.insert(val.end(), all.end() - static_cast<std::ptrdiff_t>(held), all.end());
  train.push_back(*spm.eos_id());
  val.push_back(*spm.eos_id());
  const TokenFile f = TokenFile::open(path("l.tok"));
  EXPECT_TRUE(f.tokens(Split::train) == train) << f.size(Split::train) << " training tokens, expected " << train.size();
  EXPECT_TRUE(f.tokens(Split::val) == val) << f.size(Split::val) << " validation tokens, expected " << val.size();
}

TEST_F(DataCli, AMissingInputIsNamedAndNothingIsWritten) {
  const std::string m = model();
  const CliResult r = run_orion("data prepare -m " + m + " --in " + write("a.txt", "text\n") + " " + path("nope.txt") +
                                " --out " + path("c.tok"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("nope.txt"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line: " << r.out;
  EXPECT_FALSE(std::filesystem::exists(path("c.tok")));
}

TEST_F(DataCli, AnEmptyCorpusIsRefused) {
  const std::string m = model();
  const CliResult r = run_orion("data prepare -m " + m + " --in " + write("e1.txt", "") + " " + write("e2.txt", "") +
                                " --out " + path("c.tok"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("the corpus is empty: 2 input files hold no text (first: " + path("e1.txt")), std::string::npos)
      << r.out;
  EXPECT_FALSE(std::filesystem::exists(path("c.tok")));
}

TEST_F(DataCli, BadOptionsAndAMissingModelAreReported) {
  const std::string m = model();
  const std::string in = write("a.txt", "text\n");
  EXPECT_EQ(run_orion("data prepare -m " + m + " --in " + in + " --out " + path("c.tok") + " --val-fraction 1").status, 2);
  EXPECT_EQ(run_orion("data prepare -m " + m + " --in " + in + " --out " + path("c.tok") + " --val-fraction x").status, 2);
  EXPECT_EQ(run_orion("data prepare -m " + m + " --out " + path("c.tok")).status, 2);
  EXPECT_EQ(run_orion("data").status, 2);
  const CliResult r = run_orion("data prepare -m " + path("no-model") + " --in " + in + " --out " + path("c.tok"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(path("no-model")), std::string::npos) << r.out;
  const CliResult help = run_orion("data prepare --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("--val-fraction"), std::string::npos);
}

}  // namespace
}  // namespace orion::test
