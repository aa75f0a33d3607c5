// Tool calls and reasoning read from an answer as its pieces arrive: the same parts whether the
// text comes whole or a byte at a time, in each family's syntax; and the request fields that
// ask for them (tools, tool_choice, response_format) read and refused by name.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "serve/openai_wire.h"
#include "serve/tool_calls.h"
#include "text/constrain/json_matcher.h"

namespace orion::serve {
namespace {

using ojson = nlohmann::ordered_json;

ChatAnswer split(ToolSyntax syntax, bool thinks, const std::string& text, bool bytewise, const std::string& tail = "") {
  AnswerSplitter s(syntax, thinks, tail);
  ChatAnswer a;
  const auto add = [&](const AnswerSplitter::Delta& d) {
    a.reasoning += d.reasoning;
    a.content += d.content;
    a.calls.insert(a.calls.end(), d.calls.begin(), d.calls.end());
  };
  if (bytewise) {
    for (const char c : text) add(s.push(std::string(1, c)));
  } else {
    add(s.push(text));
  }
  add(s.finish());
  return a;
}

// The parts of `text`, checked equal whole and a byte at a time.
ChatAnswer parts(ToolSyntax syntax, bool thinks, const std::string& text, const std::string& tail = "") {
  const ChatAnswer whole = split(syntax, thinks, text, false, tail), bytes = split(syntax, thinks, text, true, tail);
  EXPECT_EQ(whole.reasoning, bytes.reasoning) << text;
  EXPECT_EQ(whole.content, bytes.content) << text;
  EXPECT_EQ(whole.calls.size(), bytes.calls.size()) << text;
  for (std::size_t i = 0; i < std::min(whole.calls.size(), bytes.calls.size()); ++i) {
    EXPECT_EQ(whole.calls[i].name, bytes.calls[i].name);
    EXPECT_EQ(whole.calls[i].arguments, bytes.calls[i].arguments);
  }
  return whole;
}

TEST(AnswerSplitter, QwenThinksThenCallsInBlocks) {
  const ChatAnswer a = parts(ToolSyntax::hermes, true,
                             "<think>\nThe user wants weather.\n</think>\n\nLet me look.\n<tool_call>\n{\"name\": \"get_weather\", "
                             "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
                             "\"arguments\": {}}\n</tool_call>");
  EXPECT_EQ(a.reasoning, "The user wants weather.");
  EXPECT_EQ(a.content, "Let me look.\n");
  ASSERT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(a.calls[0].name, "get_weather");
  EXPECT_EQ(a.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(a.calls[1].name, "get_time");
  EXPECT_EQ(a.calls[1].arguments, "{}");
  EXPECT_TRUE(a.calls[0].id.starts_with("call_"));
  EXPECT_NE(a.calls[0].id, a.calls[1].id);
}

TEST(AnswerSplitter, TextThatOnlyLooksLikeMarkersStaysContent) {
  // No tools: a <tool_call> is text. A block that does not parse stays text. "<thin" is no <think>.
  EXPECT_EQ(parts(ToolSyntax::none, false, "a <tool_call>{}</tool_call>").content, "a <tool_call>{}</tool_call>");
  const ChatAnswer bad = parts(ToolSyntax::hermes, false, "x<tool_call>\n{\"name\": \"f\", \"arguments\": [}\n</tool_call>y");
  EXPECT_TRUE(bad.calls.empty());
  EXPECT_EQ(bad.content, "x<tool_call>\n{\"name\": \"f\", \"arguments\": [}\n</tool_call>y");
  EXPECT_EQ(parts(ToolSyntax::hermes, true, "<thin").content, "<thin");
  EXPECT_EQ(parts(ToolSyntax::hermes, true, "Plain answer <").content, "Plain answer <");
  // An unclosed think block is all reasoning.
  const ChatAnswer cut = parts(ToolSyntax::hermes, true, "<think>still going");
  EXPECT_EQ(cut.reasoning, "still going");
  EXPECT_EQ(cut.content, "");
}

TEST(AnswerSplitter, ForcedStartsAndOtherFamilies) {
  // tool_choice "required" on Qwen: the prompt ended with "<tool_call>\n".
  const ChatAnswer q = parts(ToolSyntax::hermes, false, "{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>", "<tool_call>\n");
  ASSERT_EQ(q.calls.size(), 1u);
  EXPECT_EQ(q.content, "");
  const ChatAnswer l = parts(ToolSyntax::llama3_json, false, "{\"name\": \"f\", \"parameters\": {\"a\": \"b\"}}");
  ASSERT_EQ(l.calls.size(), 1u);
  EXPECT_EQ(l.calls[0].arguments, R"({"a":"b"})");
  EXPECT_EQ(parts(ToolSyntax::llama3_json, false, "{not a call").content, "{not a call");
  EXPECT_EQ(parts(ToolSyntax::llama3_json, false, "Hello").content, "Hello");
  const ChatAnswer m = parts(ToolSyntax::mistral, false,
                             "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}, {\"name\": \"g\", \"arguments\": {\"x\": 2}}]");
  ASSERT_EQ(m.calls.size(), 2u);
  EXPECT_EQ(m.calls[1].name, "g");
  EXPECT_EQ(m.calls[0].id.size(), 9u);  // Mistral's templates take nine letters and digits
}

TEST(ForcedToolCall, TheGrammarTakesOnlyTheToolsCallsInTheFamilysSyntax) {
  const ojson tools = ojson::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
       "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "now"}}])");
  const ForcedCall q = forced_tool_call(ToolSyntax::hermes, tools, "");
  EXPECT_EQ(q.tail, "<tool_call>\n");
  const auto takes = [](const text::constrain::Grammar& g, const std::string& s) {
    text::constrain::JsonMatcher m(g);
    return m.feed(s) && m.can_end();
  };
  EXPECT_TRUE(takes(q.grammar, "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"c\"}}\n</tool_call>"));
  EXPECT_TRUE(takes(q.grammar, "{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(takes(q.grammar, "{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));  // city is required
  EXPECT_FALSE(takes(q.grammar, "{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  const ForcedCall named = forced_tool_call(ToolSyntax::llama3_json, tools, "now");
  EXPECT_EQ(named.tail, "");
  EXPECT_TRUE(takes(named.grammar, "{\"name\": \"now\", \"parameters\": {}}"));
  EXPECT_FALSE(takes(named.grammar, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"x\"}}"));
  EXPECT_TRUE(takes(forced_tool_call(ToolSyntax::mistral, tools, "now").grammar, "[{\"name\": \"now\", \"arguments\": {}}]"));
  EXPECT_THROW(forced_tool_call(ToolSyntax::hermes, tools, "missing"), Error);
}

ApiError wire_error(const std::string& body) {
  try {
    parse_request(Endpoint::chat, body);
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError{0, "no error", "", ""};
}

TEST(OpenAiWire, ReadsToolsAndResponseFormatAndRefusesByName) {
  const CompletionRequest r = parse_request(Endpoint::chat, R"({"messages": [{"role": "user", "content": "hi"}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
      "tool_choice": {"type": "function", "function": {"name": "f"}}, "chat_template_kwargs": {"enable_thinking": false}})");
  EXPECT_EQ(r.tool_choice, CompletionRequest::ToolChoice::named);
  EXPECT_EQ(r.tool_name, "f");
  EXPECT_EQ(r.template_variables["enable_thinking"], false);
  const CompletionRequest s = parse_request(Endpoint::chat, R"({"messages": [{"role": "user", "content": "hi"}],
      "response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true,
        "schema": {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}, "required": ["b", "a"]}}}})");
  ASSERT_TRUE(s.grammar);
  text::constrain::JsonMatcher m(*s.grammar);
  EXPECT_TRUE(m.feed(R"({"b": "x", "a": 1})") && m.can_end());  // the body's order, not sorted

  const std::string msg = R"("messages": [{"role": "user", "content": "hi"}])";
  struct Case {
    std::string body, param, message;
  };
  for (const Case& c : std::vector<Case>{
           {"{" + msg + R"(, "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "string", "format": "email"}}}})",
            "response_format", "#/format"},
           {"{" + msg + R"(, "response_format": {"type": "xml"}})", "response_format.type", "'xml'"},
           {"{" + msg + R"(, "tools": [{"type": "function", "function": {"name": ""}}]})", "tools[0].function.name", "non-empty"},
           {"{" + msg + R"(, "tools": [{"type": "retrieval"}]})", "tools[0]", "must be"},
           {"{" + msg + R"(, "tool_choice": "required"})", "tool_choice", "gives none"},
           {"{" + msg + R"(, "tool_choice": "sometimes", "tools": [{"type": "function", "function": {"name": "f"}}]})", "tool_choice", "must be"},
           {R"({"messages": [{"role": "tool", "content": null}]})", "messages[0].content", "tool message"},
           {R"({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"type": "function"}]}]})",
            "messages[0].tool_calls[0]", "must be"},
       }) {
    const ApiError e = wire_error(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_NE(e.message.find(c.message), std::string::npos) << e.message;
  }
}

}  // namespace
}  // namespace orion::serve
