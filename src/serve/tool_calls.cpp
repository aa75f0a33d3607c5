#include "serve/tool_calls.h"

#include <algorithm>
#include <atomic>
#include <random>

#include "core/error.h"

namespace orion::serve {

using ojson = nlohmann::ordered_json;

namespace {

constexpr std::string_view kThink = "<think>", kThinkEnd = "</think>";
constexpr std::string_view kHermes = "<tool_call>", kHermesEnd = "</tool_call>";
constexpr std::string_view kMistral = "[TOOL_CALLS]", kPythonTag = "<|python_tag|>";

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  return s;
}

std::string_view trim(std::string_view s) {
  s = trim_left(s);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// How many bytes at the end of `s` could begin `marker` (held back until the next piece).
std::size_t partial_marker(std::string_view s, std::string_view marker) {
  for (std::size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

// A call's id: Mistral's templates take nine letters and digits, nothing else; OpenAI's start "call_".
std::string call_id(ToolSyntax syntax, int index) {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  // Seeded once per process (ids differ across restarts too); the HTTP threads draw from it at once.
  static std::atomic<std::uint64_t> counter = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  std::uint64_t x = (counter.fetch_add(0x9e3779b97f4a7c15ull) + 0x9e3779b97f4a7c15ull) ^ static_cast<std::uint64_t>(index);
  std::string s;
  for (int i = 0; i < 9; ++i) {
    x ^= x >> 31, x *= 0xbf58476d1ce4e5b9ull, x ^= x >> 29;
    s += kAlnum[x % 62];
  }
  return syntax == ToolSyntax::mistral ? s : "call_" + s;
}

// A call object {"name", "arguments" | "parameters"} as a ToolCall; false when it is not one.
bool as_call(const ojson& j, ToolSyntax syntax, int index, ToolCall& out) {
  if (!j.is_object() || !j.contains("name") || !j.at("name").is_string()) return false;
  const char* key = j.contains("arguments") ? "arguments" : j.contains("parameters") ? "parameters" : nullptr;
  ojson args = key ? j.at(key) : ojson::object();
  if (args.is_string()) {  // some models write the arguments as a JSON string
    args = ojson::parse(args.get<std::string>(), nullptr, false);
  }
  if (!args.is_object()) return false;
  out = {call_id(syntax, index), j.at("name").get<std::string>(), args.dump()};
  return true;
}

}  // namespace

ToolSyntax tool_syntax_of(std::string_view t) {
  if (contains(t, kHermes)) return ToolSyntax::hermes;
  if (contains(t, kMistral)) return ToolSyntax::mistral;
  if (contains(t, kPythonTag) || contains(t, "\"parameters\": dictionary")) return ToolSyntax::llama3_json;
  return ToolSyntax::none;
}

bool template_thinks(std::string_view t) { return contains(t, kThink) && contains(t, kThinkEnd); }

ForcedCall forced_tool_call(ToolSyntax syntax, const ojson& tools, const std::string& only) {
  if (syntax == ToolSyntax::none) throw Error("the model's chat template shows no tool-call syntax Orion reads");
  const char* args_key = syntax == ToolSyntax::llama3_json ? "parameters" : "arguments";
  ojson branches = ojson::array();
  for (const ojson& t : tools) {
    const ojson& f = t.at("function");
    const std::string name = f.at("name").get<std::string>();
    if (!only.empty() && name != only) continue;
    const ojson params = f.contains("parameters") && !f.at("parameters").is_null() ? f.at("parameters")
                                                                                    : ojson{{"type", "object"}, {"properties", ojson::object()}};
    ojson props = ojson::object();
    props["name"] = {{"const", name}};
    props[args_key] = params;
    branches.push_back({{"type", "object"}, {"properties", props}, {"required", {"name", args_key}}});
  }
  if (branches.empty()) throw Error("tool_choice names the function '" + only + "', which is not among the tools");
  ForcedCall out;
  try {
    out.grammar = text::constrain::compile_json_schema(branches.size() == 1 ? branches[0] : ojson{{"anyOf", branches}});
  } catch (const Error& e) {
    throw Error(std::string("a tool's parameters: ") + e.what());
  }
  switch (syntax) {
    case ToolSyntax::hermes:
      out.tail = std::string(kHermes) + "\n";
      out.grammar.suffix = "\n" + std::string(kHermesEnd);
      break;
    case ToolSyntax::mistral:
      out.tail = std::string(kMistral);
      out.grammar.prefix = "[";
      out.grammar.suffix = "]";
      break;
    default: break;
  }
  return out;
}

AnswerSplitter::AnswerSplitter(ToolSyntax tools, bool thinks, std::string tail, int max_calls)
    : tools_(tools), thinks_(thinks), buf_(std::move(tail)), max_calls_(max_calls) {}

AnswerSplitter::Delta AnswerSplitter::take(std::string_view text, bool end) {
  buf_ += text;
  Delta d;
  run(d, end);
  return d;
}

void AnswerSplitter::add_calls(Delta& d, const std::string& text) {
  // A Hermes block's JSON, Mistral's array after its marker, or Llama's whole answer.
  std::string_view body = trim(text);
  if (tools_ == ToolSyntax::mistral && body.starts_with(kMistral)) body = trim(body.substr(kMistral.size()));
  if (tools_ == ToolSyntax::llama3_json && body.starts_with(kPythonTag)) body = trim(body.substr(kPythonTag.size()));
  const ojson j = ojson::parse(body, nullptr, false);
  std::vector<ToolCall> calls;
  bool ok = !j.is_discarded();
  if (ok && j.is_array() && tools_ == ToolSyntax::mistral) {
    for (const ojson& c : j) {
      ToolCall call;
      ok = ok && as_call(c, tools_, calls_ + static_cast<int>(calls.size()), call);
      calls.push_back(std::move(call));
    }
  } else if (ok) {
    ToolCall call;
    ok = as_call(j, tools_, calls_, call);
    calls.push_back(std::move(call));
  }
  if (!ok || calls.empty()) {
    d.content += text;  // not a call after all: the text stays the answer's
    return;
  }
  for (ToolCall& c : calls) {
    if (max_calls_ >= 0 && calls_ >= max_calls_) break;
    d.calls.push_back(std::move(c));
    ++calls_;
  }
}

void AnswerSplitter::run(Delta& d, bool end) {
  for (;;) {
    switch (state_) {
      case State::start: {
        const std::string_view t = trim_left(buf_);
        if (thinks_ && !after_reasoning_) {
          if (t.starts_with(kThink)) {
            buf_ = std::string(t.substr(kThink.size()));
            state_ = State::reasoning;
            continue;
          }
          if (!end && kThink.starts_with(t)) return;  // "<thi" may still be "<think>"
        }
        if (after_reasoning_) {
          if (t.empty() && !end) return;  // the blank lines after </think> are no content
          buf_ = std::string(t);
        }
        if (tools_ == ToolSyntax::llama3_json) {
          if (!end && (t.empty() || kPythonTag.starts_with(t))) return;
          if (t.starts_with("{") || t.starts_with(kPythonTag)) {
            state_ = State::whole;
            continue;
          }
        }
        state_ = State::content;
        continue;
      }
      case State::reasoning: {
        // Without the newlines that open and close the block: those at its start are dropped as
        // they come, those before a possible end held back until text follows them.
        if (!reasoning_started_) {
          const std::size_t text = buf_.find_first_not_of('\n');
          buf_.erase(0, text == std::string::npos ? buf_.size() : text);
          if (buf_.empty() && !end) return;
          reasoning_started_ = true;
        }
        const std::size_t at = buf_.find(kThinkEnd);
        if (at == std::string::npos) {
          std::size_t keep = end ? 0 : partial_marker(buf_, kThinkEnd);
          while (!end && keep < buf_.size() && buf_[buf_.size() - keep - 1] == '\n') ++keep;
          d.reasoning += buf_.substr(0, buf_.size() - keep);
          buf_.erase(0, buf_.size() - keep);
          return;
        }
        std::string_view r = std::string_view(buf_).substr(0, at);
        while (!r.empty() && r.back() == '\n') r.remove_suffix(1);
        d.reasoning += r;
        buf_.erase(0, at + kThinkEnd.size());
        after_reasoning_ = true;
        state_ = State::start;
        continue;
      }
      case State::content: {
        if (after_call_) {
          // What follows a call before the next one (or the end) is no content.
          const std::string_view t = trim_left(buf_);
          if (t.empty()) {
            if (end) buf_.clear();
            return;
          }
          buf_ = std::string(t);
          after_call_ = false;
        }
        const std::string_view marker = tools_ == ToolSyntax::hermes ? kHermes : tools_ == ToolSyntax::mistral ? kMistral : "";
        const std::size_t at = marker.empty() ? std::string::npos : buf_.find(marker);
        if (at == std::string::npos) {
          const std::size_t keep = end || marker.empty() ? 0 : partial_marker(buf_, marker);
          d.content += buf_.substr(0, buf_.size() - keep);
          buf_.erase(0, buf_.size() - keep);
          return;
        }
        d.content += buf_.substr(0, at);
        buf_.erase(0, at);
        state_ = tools_ == ToolSyntax::hermes ? State::call : State::whole;
        continue;
      }
      case State::call: {
        const std::size_t close = buf_.find(kHermesEnd);
        if (close == std::string::npos) {
          if (!end) return;
          add_calls(d, buf_.substr(kHermes.size()));  // unclosed: a call if its JSON is whole
          buf_.clear();
          return;
        }
        const std::string block = buf_.substr(0, close + kHermesEnd.size());
        const std::size_t before = d.content.size();
        add_calls(d, block.substr(kHermes.size(), close - kHermes.size()));
        if (d.content.size() != before) d.content.replace(before, std::string::npos, block);
        buf_.erase(0, close + kHermesEnd.size());
        after_call_ = true;
        state_ = State::content;
        continue;
      }
      case State::whole:
        if (!end) return;
        add_calls(d, buf_);
        buf_.clear();
        return;
    }
  }
}

}  // namespace orion::serve
