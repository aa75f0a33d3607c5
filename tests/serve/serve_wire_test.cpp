// The server's pieces that need no model: OpenAI request bodies read and checked (errors name
// the field), and generated text released around stop strings and split UTF-8 characters.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "serve/openai_wire.h"
#include "serve/request_fields.h"
#include "serve/stop_strings.h"

namespace orion::serve {
namespace {

ApiError error_of(Endpoint e, const std::string& body) {
  try {
    parse_request(e, body);
  } catch (const ApiError& x) {
    return x;
  }
  return ApiError{0, "no error", "", ""};
}

TEST(OpenAiWire, ReadsTheParametersAndRefusesWhatIsOutOfRange) {
  const CompletionRequest r = parse_request(
      Endpoint::chat, R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 7, "temperature": 0,
                          "top_p": 0.5, "top_k": 3, "seed": 9, "stop": ["\n", "END"], "stream": true,
                          "stream_options": {"include_usage": true}, "n": 1})");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.temperature, 0.0);
  EXPECT_EQ(r.top_p, 0.5);
  EXPECT_EQ(r.top_k, 3);
  EXPECT_EQ(r.seed, 9u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_TRUE(r.stream && r.include_usage);
  EXPECT_EQ(parse_request(Endpoint::completion, R"({"prompt": ["one"]})").prompt, "one");

  struct Case {
    Endpoint e;
    std::string body, param, message;
  };
  const std::vector<Case> cases = {
      {Endpoint::chat, "{", "", "not valid JSON"},
      {Endpoint::chat, "[]", "", "must be a JSON object"},
      {Endpoint::chat, R"({})", "messages", "'messages' is required"},
      {Endpoint::chat, R"({"messages": [{"content": "x"}]})", "messages[0].role", "must be a string"},
      {Endpoint::completion, R"({"prompt": ["a", "b"]})", "prompt", "one prompt a request"},
      {Endpoint::completion, R"({"prompt": "a", "max_tokens": 0})", "max_tokens", "between 1 and"},
      {Endpoint::completion, R"({"prompt": "a", "max_tokens": 1.5})", "max_tokens", "must be an integer"},
      {Endpoint::completion, R"({"prompt": "a", "top_p": 0})", "top_p", "above 0"},
      {Endpoint::completion, R"({"prompt": "a", "stop": ["a", "b", "c", "d", "e"]})", "stop", "up to 4"},
      {Endpoint::completion, R"({"prompt": "a", "stop": [""]})", "stop", "must not be empty"},
      {Endpoint::completion, R"({"prompt": "a", "stream": "yes"})", "stream", "must be a boolean"},
      {Endpoint::completion, "{\"prompt\": \"\xff\"}", "", "not valid UTF-8"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of(c.e, c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(e.message.find(c.message), std::string::npos) << c.body << " -> " << e.message;
    EXPECT_EQ(e.body()["error"]["type"], "invalid_request_error");
  }
}

TEST(StopStrings, ReleasesTextBeforeTheStopAndHoldsWhatMayStillBecomeOne) {
  StopStrings s({"END", "\n\n"});
  EXPECT_EQ(s.push("Hello E"), "Hello ");  // "E" may start "END"
  EXPECT_EQ(s.push("x"), "Ex");
  EXPECT_EQ(s.push(" then \n"), " then ");
  EXPECT_EQ(s.push("\nafter"), "");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.push("more"), "");
  StopStrings t({"END"});
  EXPECT_EQ(t.push("almost EN"), "almost ");
  EXPECT_EQ(t.flush(), "EN");
  // A character split over two pieces is released whole.
  StopStrings u({});
  EXPECT_EQ(u.push("caf\xC3"), "caf");
  EXPECT_EQ(u.push("\xA9!"), "\xC3\xA9!");
  EXPECT_EQ(u.push("\xE2\x82"), "");
  EXPECT_EQ(u.flush(), "\xEF\xBF\xBD\xEF\xBF\xBD");  // cut off at the end: replaced, as decoders do
}

}  // namespace
}  // namespace orion::serve

namespace orion::serve {
namespace {

// Content parts, roles, and every field either honoured or refused by name.
TEST(OpenAiWire, ContentPartsAndRolesAndTheFieldTable) {
  const CompletionRequest r = parse_request(Endpoint::chat, R"({"messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "there"}]}],
      "user": "ada", "metadata": {"k": "v"}, "frequency_penalty": 0.5, "presence_penalty": -1, "logit_bias": {"7": 100, "12": -5.5},
      "n": 1, "store": false, "seed": 3})");
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[0]["content"], "Be brief.");
  EXPECT_EQ(r.messages[1]["content"], "Hello\nthere");
  EXPECT_EQ(r.frequency_penalty, 0.5);
  EXPECT_EQ(r.presence_penalty, -1);
  EXPECT_EQ(r.logit_bias, (std::vector<std::pair<std::int32_t, float>>{{12, -5.5f}, {7, 100.0f}}));
  EXPECT_NE(r.log_note.find("user=ada"), std::string::npos);
  EXPECT_NE(r.log_note.find("metadata={\"k\":\"v\"}"), std::string::npos);

  struct Case {
    Endpoint e;
    std::string body, param, message;
  };
  const std::string msg = R"("messages": [{"role": "user", "content": "hi"}])";
  const std::vector<Case> cases = {
      {Endpoint::chat, R"({"messages": [{"role": "wizard", "content": "hi"}]})", "messages[0].role", "'wizard' is not one of"},
      {Endpoint::chat, R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}]}]})",
       "messages[0].content[1]", "type 'image_url'"},
      {Endpoint::chat, R"({"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]})", "messages[0].content[0]", "'input_audio'"},
      {Endpoint::chat, R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content", "content parts"},
      {Endpoint::chat, "{" + msg + R"(, "modalities": ["text", "audio"]})", "modalities", "not supported"},
      {Endpoint::chat, "{" + msg + R"(, "audio": {"voice": "x"}})", "audio", "not supported"},
      {Endpoint::chat, "{" + msg + R"(, "store": true})", "store", "not supported"},
      {Endpoint::chat, "{" + msg + R"(, "functions": []})", "functions", "send tools"},
      {Endpoint::chat, "{" + msg + R"(, "frobnicate": 1})", "frobnicate", "Unrecognized request argument supplied: frobnicate"},
      {Endpoint::chat, "{" + msg + R"(, "n": 2})", "n", "must be 1"},
      {Endpoint::chat, "{" + msg + R"(, "frequency_penalty": 3})", "frequency_penalty", "between"},
      {Endpoint::chat, "{" + msg + R"(, "logit_bias": {"x": 1}})", "logit_bias", "not a token id"},
      {Endpoint::chat, "{" + msg + R"(, "logit_bias": {"5": 101}})", "logit_bias", "between -100 and 100"},
      {Endpoint::completion, R"({"prompt": "a", "echo": true})", "echo", "not supported"},
      {Endpoint::completion, R"({"prompt": "a", "suffix": "b"})", "suffix", "not supported"},
      {Endpoint::completion, R"({"prompt": "a", "tools": []})", "tools", "Unrecognized"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of(c.e, c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << " -> " << e.message;
    EXPECT_NE(e.message.find(c.message), std::string::npos) << c.body << " -> " << e.message;
  }
  // What the table lets through at the value that asks for nothing.
  EXPECT_NO_THROW(parse_request(Endpoint::completion, R"({"prompt": "a", "echo": false, "best_of": 1, "n": 1})"));
  EXPECT_NO_THROW(parse_request(Endpoint::chat, "{" + msg + R"(, "modalities": ["text"], "service_tier": "auto"})"));
}

}  // namespace
}  // namespace orion::serve

namespace orion::serve {
namespace {

// docs/SERVING.md's table of request fields is the code's table, row for row.
TEST(RequestFields, TheDocsTableIsTheCodesTable) {
  std::vector<std::string> want;
  for (const RequestField& f : request_fields()) {
    const char* use = f.use == FieldUse::honoured ? "honoured" : f.use == FieldUse::logged ? "logged" : "refused";
    want.push_back("| `" + std::string(f.name) + "` | " + (f.chat ? "yes" : "—") + " | " + (f.completion ? "yes" : "—") + " | " + use +
                   ": " + std::string(f.note) + " |");
  }
  std::vector<std::string> got;
  std::ifstream in(std::string(ORION_SOURCE_DIR) + "/docs/SERVING.md");
  ASSERT_TRUE(in) << "docs/SERVING.md";
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "| field | chat | completions | what becomes of it |") in_table = true;
    else if (in_table && line.rfind("| `", 0) == 0) got.push_back(line);
    else if (in_table && line.rfind("| ---", 0) != 0) in_table = false;
  }
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace orion::serve
