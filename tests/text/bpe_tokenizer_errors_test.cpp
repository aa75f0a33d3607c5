// Malformed vocab.json and merges.txt: each gives an orion::Error that names the file, the line
// and what is wrong, never a crash.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "text/bpe_tokenizer.h"
#include "text/tiny_vocab.h"

namespace orion::text {
namespace {

using testing_util::TempDir;
using testing_util::write_bytes;
using tiny::vocab_json;

// The error message of `f`, or "" (with a failure recorded) when it does not throw one.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw something other than orion::Error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error";
  return "";
}

void expect_vocab_error(const std::string& vocab, const std::string& location,
                        const std::string& words) {
  const std::string message =
      error_of([&] { BpeTokenizer::from_data(vocab, "", "mem"); });
  EXPECT_EQ(message.rfind("mem/vocab.json:" + location, 0), 0u)
      << "expected mem/vocab.json:" << location << " first in: " << message;
  EXPECT_NE(message.find(words), std::string::npos) << "expected \"" << words << "\" in: " << message;
}

void expect_merges_error(const std::string& merges, const std::string& location,
                         const std::string& words) {
  const std::string vocab = vocab_json({"ab", "abc", "\xC4\xA0t"});
  const std::string message =
      error_of([&] { BpeTokenizer::from_data(vocab, merges, "mem"); });
  EXPECT_EQ(message.rfind("mem/merges.txt:" + location, 0), 0u)
      << "expected mem/merges.txt:" << location << " first in: " << message;
  EXPECT_NE(message.find(words), std::string::npos) << "expected \"" << words << "\" in: " << message;
}

TEST(BpeTokenizerErrors, VocabNotAnObject) {
  expect_vocab_error("[1, 2]", "1:1:", "expected a JSON object");
  expect_vocab_error("\n\n42", "3:", "expected a JSON object");
  expect_vocab_error("\"a\"", "1:", "expected a JSON object");
}

TEST(BpeTokenizerErrors, VocabInvalidJson) {
  expect_vocab_error("", "1:1:", "invalid JSON");
  expect_vocab_error("{\n  \"a\": 0,\n  \"b\" 1\n}", "3:", "invalid JSON");
  expect_vocab_error("{\"a\": 0}\nx", "2:", "invalid JSON");
  expect_vocab_error("{\n\"\xff\": 0}", "2:", "invalid JSON");  // not UTF-8
  expect_vocab_error("{\"a\": 0,\n", "2:", "invalid JSON");   // truncated
}

TEST(BpeTokenizerErrors, VocabIdsThatAreNotIntegers) {
  expect_vocab_error("{\n  \"a\": 0,\n  \"b\": 1.5\n}", "3:", "\"b\" is the number 1.5, not an integer");
  expect_vocab_error("{\n  \"a\": \"1\"\n}", "2:", "not an integer");
  expect_vocab_error("{\n  \"a\": null\n}", "2:", "is null, not an integer");
  expect_vocab_error("{\n  \"a\": true\n}", "2:", "is true, not an integer");
  expect_vocab_error("{\n  \"a\": {\"b\": 1}\n}", "2:", "is an object, not an integer");
  expect_vocab_error("{\n  \"a\": [1]\n}", "2:", "is an array, not an integer");
  expect_vocab_error("{\n  \"a\": 1e3\n}", "2:", "not an integer");
  expect_vocab_error("{\n  \"a\": 99999999999999999999\n}", "2:", "not an integer");
}

TEST(BpeTokenizerErrors, VocabIdsOutOfRange) {
  expect_vocab_error("{\n  \"a\": 0,\n  \"b\": -1\n}", "3:", "token \"b\" has the negative id -1");
  expect_vocab_error("{\n  \"a\": 2147483647\n}", "2:", "too large");
  expect_vocab_error("{\n  \"a\": 4294967296\n}", "2:", "too large");
  expect_vocab_error("{\n  \"a\": 18446744073709551615\n}", "2:", "too large");
}

TEST(BpeTokenizerErrors, VocabDuplicates) {
  expect_vocab_error("{\n  \"a\": 0,\n  \"b\": 0\n}", "3:",
                     "token \"b\" has the id 0, which token \"a\" already has (line 2");
  expect_vocab_error("{\n  \"a\": 0,\n  \"b\": 1,\n  \"a\": 2\n}", "4:",
                     "token \"a\" appears again (first at line 2");
}

TEST(BpeTokenizerErrors, VocabEmptyOrIncomplete) {
  expect_vocab_error("{\n  \"a\": 0,\n  \"\": 1\n}", "3:", "a token may not be empty");
  EXPECT_NE(error_of([] { BpeTokenizer::from_data("{}", "", "mem"); }).find("mem/vocab.json: the vocabulary has no tokens"),
            std::string::npos);
  // Without the token for '\n' ("Ċ", U+010A, line 200 of the tiny vocabulary).
  std::string vocab = vocab_json({});
  const std::string line = "\"\xC4\x8A\": 198,\n";
  const std::size_t at = vocab.find(line);
  ASSERT_NE(at, std::string::npos);
  vocab.erase(at, line.size());
  const std::string message = error_of([&] { BpeTokenizer::from_data(vocab, "", "mem"); });
  EXPECT_NE(message.find("mem/vocab.json: no token for the byte 0x0A"), std::string::npos) << message;
}

TEST(BpeTokenizerErrors, VocabLocationsInASingleLineFile) {
  // GPT-2's encoder.json is one line: the column tells where.
  const std::string message = error_of(
      [] { BpeTokenizer::from_data("{\"a\": 0, \"bb\": -4}", "", "mem"); });
  EXPECT_EQ(message.rfind("mem/vocab.json:1:13: ", 0), 0u) << message;
}

TEST(BpeTokenizerErrors, MergesLinesWithoutTwoSymbols) {
  expect_merges_error("#version: 0.2\na b\nab\n", "3:1:", "expected two symbols separated by one space, found \"ab\"");
  expect_merges_error("a b\nab c d\n", "2:1:", "expected two symbols");
  expect_merges_error("a  b\n", "1:1:", "expected two symbols");
  expect_merges_error(" a\n", "1:1:", "expected two symbols");
  expect_merges_error("a \n", "1:1:", "expected two symbols");
  expect_merges_error("a\tb\n", "1:1:", "expected two symbols");
  expect_merges_error("a b\n#version: 0.2\n", "2:1:", "symbol \"#version:\" is not in the vocabulary");
}

TEST(BpeTokenizerErrors, MergesSymbolsNotInTheVocabulary) {
  expect_merges_error("a b\nzz b\n", "2:1:", "symbol \"zz\" is not in the vocabulary");
  expect_merges_error("a b\nab zz\n", "2:4:", "symbol \"zz\" is not in the vocabulary");
  expect_merges_error("a b\nb c\n", "2:1:", "the merged symbol \"bc\" is not in the vocabulary");
  expect_merges_error("a \xff\n", "1:3:", "is not in the vocabulary");
}

TEST(BpeTokenizerErrors, MergesRepeatedOrWithEmptyLines) {
  expect_merges_error("a b\nab c\na b\n", "3:1:", "the merge \"a b\" repeats line 1");
  expect_merges_error("a b\n\nab c\n", "2:1:", "empty line");
  expect_merges_error("\na b\n", "1:1:", "empty line");
}

TEST(BpeTokenizerErrors, MissingFilesNameThePath) {
  TempDir dir;
  const std::string vocab = dir.file("vocab.json");
  const std::string merges = dir.file("merges.txt");
  write_bytes(vocab, vocab_json({"ab"}));
  write_bytes(merges, "a b\n");
  EXPECT_EQ(BpeTokenizer::load(vocab, merges).merge_count(), 1u);
  const std::string no_vocab = error_of([&] { BpeTokenizer::load(dir.file("none.json"), merges); });
  EXPECT_NE(no_vocab.find(dir.file("none.json")), std::string::npos) << no_vocab;
  const std::string no_merges = error_of([&] { BpeTokenizer::load(vocab, dir.file("none.txt")); });
  EXPECT_NE(no_merges.find(dir.file("none.txt")), std::string::npos) << no_merges;
}

TEST(BpeTokenizerErrors, LoadNamesTheFilesInMessages) {
  TempDir dir;
  const std::string vocab = dir.file("vocab.json");
  const std::string merges = dir.file("merges.txt");
  write_bytes(vocab, "{\n  \"a\": -3\n}");
  write_bytes(merges, "");
  const std::string bad_vocab = error_of([&] { BpeTokenizer::load(vocab, merges); });
  EXPECT_EQ(bad_vocab.rfind(vocab + ":2:", 0), 0u) << bad_vocab;
  write_bytes(vocab, vocab_json({}));
  write_bytes(merges, "#version: 0.2\nq r\n");
  const std::string bad_merges = error_of([&] { BpeTokenizer::load(vocab, merges); });
  EXPECT_EQ(bad_merges.rfind(merges + ":2:1: ", 0), 0u) << bad_merges;
  EXPECT_NE(bad_merges.find("\"qr\""), std::string::npos) << bad_merges;
}

TEST(BpeTokenizerErrors, SaveIntoAFileFails) {
  TempDir dir;
  write_bytes(dir.file("file"), "x");
  const std::string message =
      error_of([&] { BpeTokenizer::byte_level().save(dir.file("file") + "/sub"); });
  EXPECT_NE(message.find(dir.file("file")), std::string::npos) << message;
}

}  // namespace
}  // namespace orion::text
