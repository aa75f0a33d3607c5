#pragma once
// Tool calls and reasoning in a model's own syntax, read from its chat template: how a family
// writes a call (Qwen's and Hermes' <tool_call> blocks, Llama 3.x's bare JSON object, Mistral's
// [TOOL_CALLS] array), the grammar that makes a model call one (tool_choice "required" or a
// named function), and the split of an answer, as its pieces arrive, into reasoning (Qwen3's
// <think> block), content and calls, as OpenAI's API returns them.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/constrain/json_grammar.h"

namespace orion::serve {

enum class ToolSyntax { none, hermes, llama3_json, mistral };

// The syntax the template writes tool calls in; none when it shows no tool calls.
ToolSyntax tool_syntax_of(std::string_view template_source);
// Whether the template's answers open with a <think> block.
bool template_thinks(std::string_view template_source);

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // a JSON object's text
};

// What makes the model call a tool: text the answer is made to start with (appended to the
// prompt) and the grammar of the rest. `tools` is the request's array; `only` names the one
// function to call ("" for any of them). Throws orion::Error naming the tool whose parameters
// the grammar cannot honour.
struct ForcedCall {
  std::string tail;
  text::constrain::Grammar grammar;
};
ForcedCall forced_tool_call(ToolSyntax syntax, const nlohmann::ordered_json& tools, const std::string& only);

// An answer's pieces in, its parts out: reasoning, content and whole tool calls, each piece of
// text given out as soon as no marker can begin in it. Calls are given whole: their arguments
// must parse before they are a call. A block that does not parse stays content.
class AnswerSplitter {
 public:
  struct Delta {
    std::string reasoning, content;
    std::vector<ToolCall> calls;
    bool empty() const { return reasoning.empty() && content.empty() && calls.empty(); }
  };
  // `tools`: the syntax to read calls in (none: the request has no tools); `thinks`: whether a
  // <think> block may open the answer; `tail`: what the prompt made the answer start with;
  // `max_calls`: calls kept (the rest dropped: parallel_tool_calls false), -1 all.
  AnswerSplitter(ToolSyntax tools, bool thinks, std::string tail = "", int max_calls = -1);
  // `text` taken, and with `end` the rest given out too (the answer's end).
  Delta take(std::string_view text, bool end);
  Delta push(std::string_view text) { return take(text, false); }
  Delta finish() { return take({}, true); }
  int calls() const { return calls_; }

 private:
  enum class State { start, reasoning, content, call, whole };
  void run(Delta& d, bool end);
  void add_calls(Delta& d, const std::string& text);

  ToolSyntax tools_;
  bool thinks_;
  State state_ = State::start;
  std::string buf_;
  bool after_reasoning_ = false, reasoning_started_ = false, after_call_ = false;
  int calls_ = 0, max_calls_ = -1;
};

}  // namespace orion::serve
