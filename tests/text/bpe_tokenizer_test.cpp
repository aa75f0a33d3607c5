#include "text/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "core/testing_temp_dir.h"
#include "text/byte_unicode.h"
#include "text/text_test_data.h"
#include "text/tiny_vocab.h"

namespace orion::text {
namespace {

using testing::english_prose;
using testing::gpt2_tokenizer;
using testing::read_file;
using testing::test_data_file;
using testing_util::TempDir;

struct EncodeVector {
  std::string sample;
  std::vector<std::int32_t> ids;
  int line;
};

// The records of TestPlans.txt for one encoding. Each record is
//   EncodingName: NAME
//   Sample: TEXT
//   Encoded: [ID, ID, ...]
// with records separated by an empty line. TEXT runs to the next "\nEncoded: [", so a sample
// may span lines and contain any character. Records a failure for a malformed record.
std::vector<EncodeVector> parse_test_plans(const std::string& text, std::string_view encoding) {
  std::vector<EncodeVector> out;
  const std::string name_key = "EncodingName: ";
  const std::string sample_key = "Sample: ";
  const std::string encoded_key = "\nEncoded: [";
  std::size_t pos = 0;
  while (true) {
    std::size_t at = text.find(name_key, pos);
    while (at != std::string::npos && at > 0 && text[at - 1] != '\n')
      at = text.find(name_key, at + 1);
    if (at == std::string::npos) break;
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    const std::size_t name_end = text.find('\n', at);
    if (name_end == std::string::npos) {
      ADD_FAILURE() << "TestPlans.txt:" << line << ": record ends after its name";
      break;
    }
    const std::string name = text.substr(at + name_key.size(), name_end - at - name_key.size());
    if (text.compare(name_end + 1, sample_key.size(), sample_key) != 0) {
      ADD_FAILURE() << "TestPlans.txt:" << line + 1 << ": expected \"Sample: \"";
      pos = name_end;
      continue;
    }
    const std::size_t sample_begin = name_end + 1 + sample_key.size();
    const std::size_t encoded = text.find(encoded_key, sample_begin);
    const std::size_t close =
        encoded == std::string::npos ? std::string::npos : text.find(']', encoded);
    if (close == std::string::npos) {
      ADD_FAILURE() << "TestPlans.txt:" << line << ": no \"Encoded: [...]\" after the sample";
      break;
    }
    EncodeVector v;
    v.sample = text.substr(sample_begin, encoded - sample_begin);
    v.line = line;
    const std::string list = text.substr(encoded + encoded_key.size(), close - encoded - encoded_key.size());
    std::size_t i = 0;
    bool ok = true;
    while (i < list.size()) {
      while (i < list.size() && (list[i] == ' ' || list[i] == ',')) ++i;
      if (i >= list.size()) break;
      std::size_t used = 0;
      try {
        v.ids.push_back(static_cast<std::int32_t>(std::stol(list.substr(i), &used)));
      } catch (const std::exception&) {
        ok = false;
        break;
      }
      i += used;
    }
    if (!ok) ADD_FAILURE() << "TestPlans.txt:" << line << ": bad id list [" << list << "]";
    pos = close + 1;
    if (name == encoding && ok) out.push_back(std::move(v));
  }
  return out;
}

TEST(Gpt2Tokenizer, Basics) {
  const BpeTokenizer* tok = gpt2_tokenizer();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab_size(), 50257);
  EXPECT_EQ(tok->merge_count(), 50000u);
  EXPECT_EQ(tok->eot_id(), 50256);
  EXPECT_EQ(tok->token_id("\xC4\xA0the"), std::optional<std::int32_t>(262));  // "Ġthe"
  EXPECT_EQ(tok->token_id("!"), std::optional<std::int32_t>(0));
  EXPECT_EQ(tok->token_id("<|endoftext|>"), std::optional<std::int32_t>(50256));
  EXPECT_EQ(tok->token_id("no such token"), std::nullopt);
  EXPECT_EQ(tok->token(262), "\xC4\xA0the");
  EXPECT_EQ(tok->token(220), "\xC4\xA0");
  EXPECT_TRUE(tok->encode("").empty());
  EXPECT_EQ(tok->decode(std::vector<std::int32_t>{}), "");
}

TEST(Gpt2Tokenizer, EncodesEveryR50kTestPlanVector) {
  const BpeTokenizer* tok = gpt2_tokenizer();
  ASSERT_NE(tok, nullptr);
  const std::string path = test_data_file(testing::kTestPlans);
  ASSERT_FALSE(path.empty());
  const std::vector<EncodeVector> vectors = parse_test_plans(read_file(path), "r50k_base");
  ASSERT_GT(vectors.size(), 0u) << "no r50k_base vectors found in " << path;
  int passed = 0;
  for (const EncodeVector& v : vectors) {
    EXPECT_EQ(tok->encode(v.sample), v.ids) << "TestPlans.txt:" << v.line << ": " << v.sample;
    EXPECT_EQ(tok->decode(v.ids), v.sample) << "TestPlans.txt:" << v.line;
    if (tok->encode(v.sample) == v.ids) ++passed;
  }
  std::cout << "[          ] " << passed << " of " << vectors.size()
            << " r50k_base vectors of TestPlans.txt encode as expected\n";
  EXPECT_EQ(passed, static_cast<int>(vectors.size()));
}

TEST(Gpt2Tokenizer, TestPlansParserHandlesMultiLineSamples) {
  const std::string text =
      "EncodingName: r50k_base\nSample: one\nEncoded: [505]\n\n"
      "EncodingName: cl100k_base\nSample: x\nEncoded: [87]\n\n"
      "EncodingName: r50k_base\nSample: a\n\nb: c\nEncoded: [64, 198, 198, 65, 25, 269]\n\n"
      "EncodingName: r50k_base\nSample: \nEncoded: []\n";
  const auto v = parse_test_plans(text, "r50k_base");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].sample, "one");
  EXPECT_EQ(v[1].sample, "a\n\nb: c");
  EXPECT_EQ(v[1].ids, (std::vector<std::int32_t>{64, 198, 198, 65, 25, 269}));
  EXPECT_EQ(v[2].sample, "");
  EXPECT_TRUE(v[2].ids.empty());
}

// Expected ids computed with OpenAI's encoder.py (Python `regex` module) on GPT-2's files.
TEST(Gpt2Tokenizer, MatchesEncoderPy) {
  const BpeTokenizer* tok = gpt2_tokenizer();
  ASSERT_NE(tok, nullptr);
  const std::vector<std::pair<std::string, std::vector<std::int32_t>>> cases = {
      {"Hello world", {15496, 995}},
      {"a\x1c" "b", {64, 216, 65}},
      {"x\x1f\x1e y", {87, 219, 218, 331}},
      {"tab\there", {8658, 197, 1456}},
      {" \xe3\x80\x80 end", {220, 5099, 222, 886}},
      {"a\n\nb", {64, 198, 198, 65}},
      {"a\n\n", {64, 628}},
      {"  leading and trailing  ", {220, 3756, 290, 25462, 220, 220}},
      {"l'amour l'homme", {75, 6, 321, 454, 300, 6, 26452, 1326}},
      {"It's 2024!", {1026, 338, 48609, 0}},
      {"emoji \xf0\x9f\x8e\x89\xf0\x9f\x8e\x89", {368, 31370, 12520, 236, 231, 8582, 236, 231}},
      {"\xc2\x85\xe2\x80\xa8\xe2\x80\xa9", {126, 227, 447, 101, 447, 102}},
      {"\xe2\x85\xab\xc2\xb2", {158, 227, 104, 31185}},
      {"\xc7\x85ungla", {131, 227, 2150, 5031}},
      {"e\xcc\x81", {68, 136, 223}},
      // longer than the pieces the cache keeps
      {"supercalifragilisticexpialidocioussupercalifragilisticexpialidocious"
       "supercalifragilisticexpialidocious",
       {16668, 9948, 361, 22562, 346, 396, 501, 42372, 498, 312, 32346, 16668, 9948, 361, 22562,
        346, 396, 501, 42372, 498, 312, 32346, 16668, 9948, 361, 22562, 346, 396, 501, 42372, 498,
        312, 32346}},
  };
  for (const auto& [text, ids] : cases) {
    EXPECT_EQ(tok->encode(text), ids) << text;
    EXPECT_EQ(tok->decode(ids), text);
  }
  std::string abab = " ";
  for (int i = 0; i < 40; ++i) abab += "ab";
  std::vector<std::int32_t> expected = {450};
  expected.insert(expected.end(), 39, 397);
  EXPECT_EQ(tok->encode(abab), expected);
}

TEST(Gpt2Tokenizer, SpecialToken) {
  const BpeTokenizer* tok = gpt2_tokenizer();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("<|endoftext|>"), (std::vector<std::int32_t>{50256}));
  EXPECT_EQ(tok->encode("a<|endoftext|>b"), (std::vector<std::int32_t>{64, 50256, 65}));
  EXPECT_EQ(tok->encode("<|endoftext|><|endoftext|>"), (std::vector<std::int32_t>{50256, 50256}));
  EXPECT_EQ(tok->encode(" <|endoftext|> "), (std::vector<std::int32_t>{220, 50256, 220}));
  EXPECT_EQ(tok->encode("<|endoftext"), (std::vector<std::int32_t>{27, 91, 437, 1659, 5239}));
  EXPECT_EQ(tok->decode(std::vector<std::int32_t>{64, 50256, 65}), "a<|endoftext|>b");
  const std::string text = "Hello<|endoftext|>\n\nWorld<|endoftext|>";
  EXPECT_EQ(tok->decode(tok->encode(text)), text);
}

TEST(Gpt2Tokenizer, DecodeRejectsUnknownIds) {
  const BpeTokenizer* tok = gpt2_tokenizer();
  ASSERT_NE(tok, nullptr);
  for (const std::int32_t bad : {-1, 50257, 1 << 30}) {
    try {
      tok->decode(std::vector<std::int32_t>{15496, bad});
      ADD_FAILURE() << "no error for id " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(tok->token(50257), Error);
}

TEST(Gpt2Tokenizer, RoundTripsEnglishProse) {
  const BpeTokenizer* tok = gpt2_tokenizer();
  ASSERT_NE(tok, nullptr);
  const std::string prose = english_prose();
  ASSERT_GE(prose.size(), 1'000'000u);
  const std::vector<std::int32_t> ids = tok->encode(prose);
  const std::string back = tok->decode(ids);
  ASSERT_EQ(back.size(), prose.size());
  EXPECT_TRUE(back == prose) << "decode(encode(prose)) differs from the prose";
  // English takes about 3 to 4.5 bytes per GPT-2 token; far fewer means the merges did not run.
  const double bytes_per_token = static_cast<double>(prose.size()) / static_cast<double>(ids.size());
  EXPECT_GT(bytes_per_token, 2.5);
  std::cout << "[          ] " << prose.size() << " bytes of prose -> " << ids.size()
            << " tokens (" << bytes_per_token << " bytes per token)\n";
  // A second pass, from the cache, gives the same ids.
  EXPECT_TRUE(tok->encode(prose) == ids);
}

// Random byte strings: mostly invalid UTF-8, mixed with pieces of valid text.
std::vector<std::string> random_byte_strings(std::uint64_t seed, int count) {
  Rng rng(seed);
  const std::vector<std::string> fragments = {
      " ", "  ", "\n", "\n\n", "\t", "'s", "'ll", "the", " of", "7", "2024", "!", "...",
      "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\xe3\x80\x80", "<|endoftext|>",
      "<|endof", "\xc2\x85", "\r\n"};
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    std::string s;
    const auto n = rng.below(i % 10 == 0 ? 300 : 40);
    for (std::uint64_t k = 0; k < n; ++k) {
      if (rng.below(3) != 0)
        s.push_back(static_cast<char>(rng.below(256)));
      else
        s += fragments[rng.below(fragments.size())];
    }
    out.push_back(std::move(s));
  }
  return out;
}

TEST(Gpt2Tokenizer, RoundTripsRandomBytes) {
  const BpeTokenizer* tok = gpt2_tokenizer();
  ASSERT_NE(tok, nullptr);
  for (const std::string& s : random_byte_strings(42, 5000)) {
    const std::vector<std::int32_t> ids = tok->encode(s);
    for (const std::int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok->vocab_size());
    ASSERT_EQ(tok->decode(ids), s);
  }
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(tok->decode(tok->encode(all)), all);
  const std::string long_run(200000, 'z');
  EXPECT_EQ(tok->decode(tok->encode(long_run)), long_run);
}

TEST(Gpt2Tokenizer, ConcurrentEncodersAgree) {
  const BpeTokenizer* tok = gpt2_tokenizer();
  ASSERT_NE(tok, nullptr);
  const std::vector<std::string> texts = random_byte_strings(7, 400);
  std::string prose = english_prose(400'000);
  std::vector<std::vector<std::int32_t>> expected;
  // A fresh tokenizer (empty cache) computes the reference ids.
  const BpeTokenizer fresh = BpeTokenizer::load(test_data_file(testing::kGpt2Vocab),
                                                test_data_file(testing::kGpt2Merges));
  for (const std::string& t : texts) expected.push_back(fresh.encode(t));
  const std::vector<std::int32_t> prose_ids = fresh.encode(prose);
  const BpeTokenizer shared = BpeTokenizer::load(test_data_file(testing::kGpt2Vocab),
                                                 test_data_file(testing::kGpt2Merges));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t i = static_cast<std::size_t>(t); i < texts.size() * 2; i += 2) {
        const std::size_t k = i % texts.size();
        if (shared.encode(texts[k]) != expected[k]) ++mismatches[static_cast<std::size_t>(t)];
      }
      if (shared.encode(prose) != prose_ids) ++mismatches[static_cast<std::size_t>(t)];
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[static_cast<std::size_t>(t)], 0) << "thread " << t;
}

TEST(Gpt2Tokenizer, SaveAndLoadGiveAnEqualTokenizer) {
  const BpeTokenizer* tok = gpt2_tokenizer();
  ASSERT_NE(tok, nullptr);
  TempDir dir;
  const std::string out = dir.file("gpt2");
  tok->save(out);
  const BpeTokenizer back = BpeTokenizer::load(out + "/vocab.json", out + "/merges.txt");
  EXPECT_TRUE(back == *tok);
  EXPECT_EQ(back.vocab_size(), tok->vocab_size());
  EXPECT_EQ(back.merge_count(), tok->merge_count());
  EXPECT_EQ(back.eot_id(), tok->eot_id());
  for (std::int32_t id = 0; id < tok->vocab_size(); ++id) {
    ASSERT_EQ(back.token(id), tok->token(id));
    ASSERT_EQ(back.token_id(tok->token(id)), std::optional<std::int32_t>(id));
  }
  const std::string sample = english_prose(200'000);
  EXPECT_TRUE(back.encode(sample) == tok->encode(sample));
  // Saving again writes the same bytes.
  back.save(dir.file("again"));
  EXPECT_EQ(read_file(dir.file("again/vocab.json")), read_file(out + "/vocab.json"));
  EXPECT_EQ(read_file(dir.file("again/merges.txt")), read_file(out + "/merges.txt"));
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"again", "gpt2"}));  // no temporary files left
  // The saved merges are GPT-2's file (same "#version" line, same merges).
  EXPECT_EQ(read_file(out + "/merges.txt"), read_file(test_data_file(testing::kGpt2Merges)));
}

TEST(Gpt2Tokenizer, ByteLevelIdsAreGpt2s) {
  const BpeTokenizer* tok = gpt2_tokenizer();
  ASSERT_NE(tok, nullptr);
  const BpeTokenizer bytes = BpeTokenizer::byte_level();
  for (std::int32_t id = 0; id < 256; ++id) EXPECT_EQ(bytes.token(id), tok->token(id)) << id;
  EXPECT_EQ(bytes.token(256), tok->token(tok->eot_id()));
}

TEST(Gpt2Tokenizer, MeasuresThroughput) {
  const BpeTokenizer* tok = gpt2_tokenizer();
  ASSERT_NE(tok, nullptr);
  // Correctness only (a rate is returned); the number is for `orion bench tokenize`.
  const double rate = measure_encode_mb_per_s(*tok, english_prose(100'000));
  EXPECT_GT(rate, 0.0);
  EXPECT_EQ(measure_encode_mb_per_s(*tok, ""), 0.0);
}

TEST(ByteLevelTokenizer, OneTokenPerByte) {
  const BpeTokenizer tok = BpeTokenizer::byte_level();
  EXPECT_EQ(tok.vocab_size(), 257);
  EXPECT_EQ(tok.eot_id(), 256);
  EXPECT_EQ(tok.merge_count(), 0u);
  EXPECT_EQ(tok.encode("hi"), (std::vector<std::int32_t>{71, 72}));
  EXPECT_EQ(tok.encode("hi there"), (std::vector<std::int32_t>{71, 72, 220, 83, 71, 68, 81, 68}));
  EXPECT_EQ(tok.encode("a<|endoftext|>b"), (std::vector<std::int32_t>{64, 256, 65}));
  EXPECT_EQ(tok.token_id("\xC4\xA0"), std::optional<std::int32_t>(220));
  EXPECT_EQ(tok.token(0), "!");
  for (const std::string& s : random_byte_strings(99, 2000)) {
    const auto ids = tok.encode(s);
    ASSERT_EQ(tok.decode(ids), s);
    std::size_t specials = 0;
    for (std::size_t at = s.find("<|endoftext|>"); at != std::string::npos;
         at = s.find("<|endoftext|>", at + 13))
      ++specials;
    ASSERT_EQ(ids.size(), s.size() - 12 * specials);
  }
}

TEST(ByteLevelTokenizer, SavesAndLoads) {
  const BpeTokenizer tok = BpeTokenizer::byte_level();
  TempDir dir;
  tok.save(dir.path());
  const BpeTokenizer back =
      BpeTokenizer::load(dir.file("vocab.json"), dir.file("merges.txt"));
  EXPECT_TRUE(back == tok);
  EXPECT_EQ(read_file(dir.file("merges.txt")), "#version: 0.2\n");
  const std::string s = "byte-level \xff\x00 text";
  EXPECT_EQ(back.encode(s), tok.encode(s));
}

TEST(BpeTokenizer, MergesByRankLikeEncoderPy) {
  using tiny::vocab_json;
  const BpeTokenizer tok =
      BpeTokenizer::from_data(vocab_json({"ab", "abc", "bc"}), "a b\nb c\nab c\n", "tiny");
  const auto id = [&](std::string_view t) { return *tok.token_id(t); };
  EXPECT_EQ(tok.encode("abc"), (std::vector<std::int32_t>{id("abc")}));
  EXPECT_EQ(tok.encode("abab"), (std::vector<std::int32_t>{id("ab"), id("ab")}));
  EXPECT_EQ(tok.encode("aaab"), (std::vector<std::int32_t>{id("a"), id("a"), id("ab")}));
  EXPECT_EQ(tok.encode("bcbc"), (std::vector<std::int32_t>{id("bc"), id("bc")}));
  EXPECT_EQ(tok.encode("abcb"), (std::vector<std::int32_t>{id("abc"), id("b")}));
  EXPECT_EQ(tok.vocab_size(), 259);
  EXPECT_THROW(tok.eot_id(), Error);  // this vocabulary has no <|endoftext|>
  EXPECT_EQ(tok.encode("<|endoftext|>").size(), 13u);
}

// encoder.py merges every occurrence of the lowest-ranked pair before it looks at the pairs
// those merges create, even when one of them has a lower rank (possible in a hand-made file
// whose merges are not in training order): "abab" with ranks (ab, a) = 0, (a, b) = 1 is
// [ab, ab], where merging one pair at a time would give [aba, b].
TEST(BpeTokenizer, MergesAllOccurrencesOfARankFirst) {
  using tiny::vocab_json;
  const BpeTokenizer tok =
      BpeTokenizer::from_data(vocab_json({"ab", "aba"}), "#version: 0.2\nab a\na b\n", "tiny");
  const auto id = [&](std::string_view t) { return *tok.token_id(t); };
  EXPECT_EQ(tok.encode("abab"), (std::vector<std::int32_t>{id("ab"), id("ab")}));
  EXPECT_EQ(tok.encode("aba"), (std::vector<std::int32_t>{id("aba")}));
}

TEST(BpeTokenizer, VocabularyWithGaps) {
  using tiny::vocab_json;
  std::string vocab = vocab_json({"ab"});
  vocab.insert(vocab.rfind('}'), ",\"xy\": 2147483646\n");
  const BpeTokenizer tok = BpeTokenizer::from_data(vocab, "a b\nx y\n", "gaps");
  EXPECT_EQ(tok.vocab_size(), 2147483647);
  EXPECT_EQ(tok.encode("xyab"), (std::vector<std::int32_t>{2147483646, 256}));
  EXPECT_EQ(tok.decode(std::vector<std::int32_t>{2147483646, 256}), "xyab");
  try {
    tok.decode(std::vector<std::int32_t>{1000});
    ADD_FAILURE() << "no error for an id in a gap";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1000"), std::string::npos) << e.what();
  }
  TempDir dir;
  tok.save(dir.path());
  EXPECT_TRUE(BpeTokenizer::load(dir.file("vocab.json"), dir.file("merges.txt")) == tok);
}

TEST(BpeTokenizer, SpecialTokenOutsideTheByteMapDecodesToItsUtf8) {
  using tiny::vocab_json;
  // "é" (U+00E9) is mapped (byte 0xE9), "€" (U+20AC) is not.
  const BpeTokenizer tok = BpeTokenizer::from_data(vocab_json({"\xe2\x82\xac"}), "", "euro");
  EXPECT_EQ(tok.decode(std::vector<std::int32_t>{256}), "\xe2\x82\xac");
}

TEST(BpeTokenizer, MergesFileVariants) {
  using tiny::vocab_json;
  const std::string vocab = vocab_json({"ab", "abc"});
  const BpeTokenizer plain = BpeTokenizer::from_data(vocab, "a b\nab c", "plain");
  EXPECT_EQ(plain.merge_count(), 2u);
  EXPECT_TRUE(BpeTokenizer::from_data(vocab, "#version: 0.2\r\na b\r\nab c\r\n", "crlf") == plain);
  EXPECT_TRUE(BpeTokenizer::from_data(vocab, "a b\nab c\n\n\n", "trailing") == plain);
  EXPECT_TRUE(BpeTokenizer::from_data(vocab, "#version: 0.2\na b\nab c\n", "version") == plain);
  EXPECT_TRUE(BpeTokenizer::from_data(vocab, "\xEF\xBB\xBF#version: 0.2\na b\nab c\n", "bom") == plain);
  EXPECT_EQ(BpeTokenizer::from_data(vocab, "", "none").merge_count(), 0u);
  EXPECT_FALSE(BpeTokenizer::from_data(vocab, "a b\n", "one") == plain);
}

TEST(BpeTokenizer, CopiesShareTheTables) {
  const BpeTokenizer a = BpeTokenizer::byte_level();
  BpeTokenizer b = a;
  EXPECT_TRUE(a == b);
  EXPECT_EQ(b.encode("copy"), a.encode("copy"));
  b = BpeTokenizer::from_data(tiny::vocab_json({"ab"}), "a b\n", "other");
  EXPECT_FALSE(a == b);
  EXPECT_EQ(b.encode("ab"), (std::vector<std::int32_t>{256}));
}

}  // namespace
}  // namespace orion::text
