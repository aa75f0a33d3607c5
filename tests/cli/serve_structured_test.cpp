// `orion serve`'s tool calls and JSON-schema answers, used by the official OpenAI client (npm
// openai) and checked by an independent validator (npm ajv), through
// tests/reference/structured_client.mjs, on a Qwen3-shaped folder with Qwen3's real template and
// random weights: whatever the weights, a forced call's arguments and every schema answer must
// parse and validate, because the answers come from constrained decoding.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <nlohmann/json.hpp>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"
#include "cli/serve_process.h"
#include "test_scale.h"

namespace orion::test {
namespace {

using nlohmann::json;

class ServeStructuredCli : public CliFolderTest {
 protected:
  // tests/reference/structured_client.mjs against a server on the shared folder of `family`.
  json run_client(const std::string& family, bool tools, int requests) {
    std::string log;
    const std::string m = shared_hf_folder(family, log);
    EXPECT_FALSE(m.empty()) << log;
    ServeProcess server(m, "--max-active 16");
    EXPECT_GT(server.port(), 0) << server.log();
    const std::string data = std::getenv("ORION_TEST_DATA") ? std::getenv("ORION_TEST_DATA") : "";
    const std::string cmd = "node " + std::string(ORION_SOURCE_DIR) + "/tests/reference/structured_client.mjs " + data +
                            "/node_modules " + server.url() + "/v1 " + (tools ? "1 " : "0 ") + std::to_string(requests) + " " +
                            path("out.json") + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << server.log();
    const json r = json::parse(read(path("out.json")), nullptr, false);
    EXPECT_TRUE(r.is_object() && !r.contains("error")) << r.dump() << server.log();
    return r.is_object() ? r : json::object();
  }
  static void expect_all_valid(const json& s, int requests) {
    ASSERT_TRUE(s.is_object());
    EXPECT_EQ(s["requests"], requests);
    EXPECT_EQ(s["parsed"], requests) << s.dump();
    EXPECT_EQ(s["valid"], requests) << s.dump();
    EXPECT_EQ(s["finish_reasons"], json({{"stop", requests}})) << s.dump();
  }
};

// Qwen3's template: a forced call (tool_choice "required") streamed and not, its arguments
// valid under the tool's parameters, the calls and their results sent back, a final answer.
TEST_F(ServeStructuredCli, QwenToolRoundTripsAndSchemaAnswersValidateUnderAjv) {
  const int requests = 8;
  const json r = run_client("qwen3", true, requests);
  ASSERT_EQ(r.value("round_trips", json::array()).size(), 2u) << r.dump();
  for (const json& t : r["round_trips"]) {
    SCOPED_TRACE(t.dump());
    EXPECT_EQ(t["first_finish"], "tool_calls");
    EXPECT_TRUE(t["first_content"].is_null() || t["first_content"] == "");
    ASSERT_GE(t["calls"].size(), 1u);
    for (const json& c : t["calls"]) {
      EXPECT_TRUE(c["parses"].get<bool>());
      EXPECT_TRUE(c["valid"].get<bool>());
      EXPECT_TRUE(c["id"].get<std::string>().starts_with("call_"));
    }
    EXPECT_TRUE(t["final"]["content"].is_string());
    EXPECT_TRUE(t["final"]["finish_reason"] == "stop" || t["final"]["finish_reason"] == "length");
    EXPECT_GT(t["final"]["usage"]["prompt_tokens"].get<int>(), 0);
  }
  // The same seed streamed and not: the same call.
  EXPECT_EQ(r["round_trips"][0]["calls"][0]["arguments"], r["round_trips"][1]["calls"][0]["arguments"]);
  expect_all_valid(r["schema"], requests);
}

// Two hundred answers to a schema of nested objects, arrays, enums, bounds and required keys,
// on TinyLlama's SentencePiece vocabulary (its byte pieces, its word marks).
TEST_F(ServeStructuredCli, TwoHundredSchemaAnswersOnRandomWeightsAllValidate) {
  const int requests = testing_util::at_scale(200, 24);
  const json r = run_client("tinyllama", false, requests);
  expect_all_valid(r.value("schema", json()), requests);
}

// logprobs and top_logprobs: a greedy answer's every token is its step's most likely, its
// alternatives sorted and together no more probable than one; the stream gives the same entries;
// a text completion's legacy form lines its offsets up with its text.
TEST_F(ServeStructuredCli, LogprobsListEachTokenAndItsMostLikelyAlternatives) {
  std::string log;
  const std::string m = shared_hf_folder("qwen3", log);
  ASSERT_FALSE(m.empty()) << log;
  ServeProcess server(m, "");
  ASSERT_GT(server.port(), 0) << server.log();
  const auto post = [&](const std::string& path, const json& body) {
    return curl(server.url() + path + " -H 'Content-Type: application/json' -d @" + write("body.json", body.dump()));
  };
  const json chat = {{"messages", {{{"role", "user"}, {"content", "Name a colour"}}}}, {"max_tokens", 6}, {"temperature", 0},
                     {"logprobs", true}, {"top_logprobs", 5}};
  const Http r = post("/v1/chat/completions", chat);
  ASSERT_EQ(r.status, 200) << r.body;
  const json content = json::parse(r.body)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 6u) << r.body;
  std::string bytes;
  for (const json& t : content) {
    ASSERT_EQ(t["top_logprobs"].size(), 5u);
    EXPECT_EQ(t["bytes"], t["top_logprobs"][0]["bytes"]) << t.dump();
    EXPECT_EQ(t["logprob"], t["top_logprobs"][0]["logprob"]) << t.dump();
    double mass = 0, last = 0;
    for (std::size_t k = 0; k < 5; ++k) {
      const double lp = t["top_logprobs"][k]["logprob"];
      EXPECT_LE(lp, 0.0);
      if (k > 0) {
        EXPECT_LE(lp, last);
      }
      last = lp;
      mass += std::exp(lp);
    }
    EXPECT_LE(mass, 1.0 + 1e-5);
    for (const json& b : t["bytes"]) bytes += static_cast<char>(b.get<int>());
  }
  EXPECT_EQ(bytes, json::parse(r.body)["choices"][0]["message"]["content"].get<std::string>());
  // Streamed: the same entries, a chunk's worth at a time.
  json streamed = chat;
  streamed["stream"] = true;
  const Http s = post("/v1/chat/completions", streamed);
  json joined = json::array();
  std::istringstream lines(s.body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("data: {", 0) != 0) continue;
    const json c = json::parse(line.substr(6));
    if (!c["choices"].empty() && c["choices"][0]["logprobs"].is_object())
      for (const json& t : c["choices"][0]["logprobs"]["content"]) joined.push_back(t);
  }
  EXPECT_EQ(joined, content);
  // Text completions: OpenAI's legacy form.
  const Http c = post("/v1/completions", {{"prompt", "In the beginning"}, {"max_tokens", 4}, {"temperature", 0}, {"logprobs", 2}});
  ASSERT_EQ(c.status, 200) << c.body;
  const json lp = json::parse(c.body)["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 4u) << c.body;
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(lp["top_logprobs"][i].size(), 2u);
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
  }
  EXPECT_EQ(lp["text_offset"][0], 0);
  EXPECT_EQ(post("/v1/completions", {{"prompt", "x"}, {"logprobs", 6}}).status, 400);
  // The values are the model's: those `orion perplexity` computes (the graph executor, in double)
  // for the same token after the same prompt, and its five most likely.
  const Http one = post("/v1/completions", {{"prompt", "In the beginning"}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 5}});
  ASSERT_EQ(one.status, 200) << one.body;
  const json first = json::parse(one.body)["choices"][0];
  const std::string token = first["logprobs"]["tokens"][0];
  const std::string text = write("scored.txt", "In the beginning" + token);
  const CliResult ppl = run_command(orion_bin() + " perplexity -m " + m + " -f " + text + " --token-logprobs " + path("lp.jsonl") + " --top 5 2>&1");
  ASSERT_EQ(ppl.status, 0) << ppl.out;
  std::istringstream scored(read(path("lp.jsonl")));
  json last;
  for (std::string line; std::getline(scored, line);) last = json::parse(line);
  // The text re-tokenizes as the prompt and then the answer's token.
  ASSERT_EQ(last["index"], json::parse(one.body)["usage"]["prompt_tokens"]) << last.dump();
  ASSERT_EQ(last["piece"], token);
  EXPECT_NEAR(first["logprobs"]["token_logprobs"][0].get<double>(), last["logprob"].get<double>(), 1e-4);
  std::vector<double> served, reference;
  for (const auto& [t, v] : first["logprobs"]["top_logprobs"][0].items()) served.push_back(v.get<double>());
  for (const json& pair : last["top"]) reference.push_back(pair[1].get<double>());
  std::sort(served.begin(), served.end());
  std::sort(reference.begin(), reference.end());
  ASSERT_EQ(served.size(), 5u);
  ASSERT_EQ(reference.size(), 5u);
  for (std::size_t k = 0; k < 5; ++k) EXPECT_NEAR(served[k], reference[k], 1e-4) << k;
  EXPECT_EQ(post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"top_logprobs", 3}}).status, 400);
}

}  // namespace
}  // namespace orion::test
