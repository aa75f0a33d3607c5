// The server's pieces that need no model: OpenAI request bodies read and checked (errors name
// the field), and generated text released around stop strings and split UTF-8 characters.
#include <gtest/gtest.h>

#include "serve/openai_wire.h"
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
