// `orion serve` as newer clients speak to it, through the official OpenAI client
// (tests/reference/responses_client.mjs) on a Qwen3-shaped folder: chat messages with content
// parts and a developer message, and the Responses API created and streamed over two turns
// (previous_response_id). Greedy answers must be `orion generate --chat`'s on the same
// conversation (--messages for the turns before).
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"
#include "cli/serve_process.h"
#include "text/hf/hf_components.h"

namespace orion::test {
namespace {

using nlohmann::json;

class ServeResponsesCli : public CliFolderTest {
 protected:
  // `orion generate --chat`'s greedy continuation (the text after the assistant's turn opens).
  std::string generate_chat(const std::string& m, const std::string& args) {
    const CliResult r = run_command(orion_bin() + " generate -m " + m + " --chat -n 12 --temp 0 " + args + " 2>/dev/null");
    EXPECT_EQ(r.status, 0) << r.out;
    const std::string marker = "<|im_start|>assistant\n";
    const std::size_t at = r.out.rfind(marker);
    EXPECT_NE(at, std::string::npos) << r.out;
    std::string out = at == std::string::npos ? "" : r.out.substr(at + marker.size());
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return text::hf::valid_utf8(out);
  }
};

TEST_F(ServeResponsesCli, ContentPartsDeveloperMessagesAndTwoTurnsOfResponses) {
  std::string log;
  const std::string m = shared_hf_folder("qwen3", log);
  ASSERT_FALSE(m.empty()) << log;
  ServeProcess server(m, "");
  ASSERT_GT(server.port(), 0) << server.log();
  const std::string data = std::getenv("ORION_TEST_DATA") ? std::getenv("ORION_TEST_DATA") : "";
  const std::string cmd = "node " + std::string(ORION_SOURCE_DIR) + "/tests/reference/responses_client.mjs " + data +
                          "/node_modules " + server.url() + "/v1 " + path("out.json") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << server.log();
  const json out = json::parse(read(path("out.json")));
  ASSERT_FALSE(out.contains("error")) << out.dump() << server.log();

  // Text parts joined by a newline; the developer message as the system's.
  EXPECT_EQ(out["chat"], generate_chat(m, "--system 'Be brief.' -p $'Hello\\nthere'"));
  const std::string first = generate_chat(m, "--system 'Be brief.' -p 'Name a colour'");
  const json& created = out["created"];
  ASSERT_EQ(created.size(), 2u) << out.dump();
  EXPECT_EQ(created[0]["text"], first);
  EXPECT_EQ(created[0]["object"], "response");
  EXPECT_EQ(created[0]["status"], "incomplete");  // 12 tokens of random weights: max_output_tokens
  EXPECT_EQ(created[0]["usage"]["output_tokens"], 12);
  EXPECT_GT(created[0]["usage"]["input_tokens"].get<int>(), 0);
  // The second turn: the first's conversation (its instructions are not carried over), its
  // answer, the new input; as the chat endpoint answers the same messages.
  const json messages = {{{"role", "user"}, {"content", "Name a colour"}},
                         {{"role", "assistant"}, {"content", first}},
                         {{"role", "user"}, {"content", "And another one"}}};
  const Http chat = curl(server.url() + "/v1/chat/completions -H 'Content-Type: application/json' -d @" +
                         write("chat.json", json{{"messages", messages}, {"max_tokens", 12}, {"temperature", 0}}.dump()));
  ASSERT_EQ(chat.status, 200) << chat.body;
  const std::string second = json::parse(chat.body)["choices"][0]["message"]["content"];
  EXPECT_EQ(created[1]["text"], second);
  write("earlier.json", json::array({messages[0], messages[1]}).dump());
  EXPECT_EQ(second, generate_chat(m, "--messages " + path("earlier.json") + " -p 'And another one'"));
  EXPECT_GT(created[1]["usage"]["input_tokens"].get<int>(), created[0]["usage"]["input_tokens"].get<int>());

  // Streamed: the same answers, their deltas adding up to them, the events in the API's order.
  const json& streamed = out["streamed"];
  ASSERT_EQ(streamed.size(), 2u) << out.dump();
  EXPECT_EQ(streamed[0].value("text", json()), first);
  EXPECT_EQ(streamed[1].value("text", json()), second);
  for (const json& s : streamed) {
    EXPECT_EQ(s.value("deltas", json()), s.value("text", json()));
    EXPECT_EQ(s.value("usage", json()).value("output_tokens", 0), 12) << s.dump();
    const json t = s.value("types", json::array());
    ASSERT_GE(t.size(), 4u) << s.dump();
    EXPECT_EQ(t.front(), "response.created");
    EXPECT_EQ(t[1], "response.in_progress");
    EXPECT_EQ(t.back(), "response.completed") << s.dump();
    EXPECT_NE(std::find(t.begin(), t.end(), "response.output_text.delta"), t.end());
  }
  // An unknown previous_response_id is a 404; a field the API does not take a 400 naming it.
  const auto post = [&](const json& body) {
    return curl(server.url() + "/v1/responses -H 'Content-Type: application/json' -d @" + write("r.json", body.dump()));
  };
  EXPECT_EQ(post({{"input", "x"}, {"previous_response_id", "resp_none"}}).status, 404);
  const Http refused = post({{"input", "x"}, {"reasoning", {{"effort", "high"}}}});
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(json::parse(refused.body)["error"]["param"], "reasoning");
  const Http image = post({{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", "x"}}}}}}}});
  EXPECT_EQ(image.status, 400);
  EXPECT_EQ(json::parse(image.body)["error"]["param"], "input[0].content[0]") << image.body;
}

}  // namespace
}  // namespace orion::test
