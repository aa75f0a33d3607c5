// `orion serve`'s tool calls and JSON-schema answers, used by the official OpenAI client (npm
// openai) and checked by an independent validator (npm ajv), through
// tests/reference/structured_client.mjs, on a Qwen3-shaped folder with Qwen3's real template and
// random weights: whatever the weights, a forced call's arguments and every schema answer must
// parse and validate, because the answers come from constrained decoding.
#include <cstdlib>
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

}  // namespace
}  // namespace orion::test
