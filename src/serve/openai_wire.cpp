#include "serve/openai_wire.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "serve/chat_messages.h"
#include "serve/request_fields.h"

#include "text/hf/hf_components.h"

namespace orion::serve {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

double number_in(const json& j, const char* key, double lo, double hi, double fallback) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  const json& v = j.at(key);
  if (!v.is_number()) throw bad_request(std::string("'") + key + "' must be a number, not " + v.type_name(), key);
  const double d = v.get<double>();
  if (!(d >= lo && d <= hi))
    throw bad_request(std::string("'") + key + "' is " + v.dump() + "; it must be between " + json(lo).dump() + " and " + json(hi).dump(), key);
  return d;
}

std::int64_t integer_in(const json& j, const char* key, std::int64_t lo, std::int64_t hi) {
  const json& v = j.at(key);
  if (!v.is_number_integer()) throw bad_request(std::string("'") + key + "' must be an integer, not " + v.type_name(), key);
  // nlohmann reads a non-negative integer as unsigned: compare it as one, so that a huge value
  // is not wrapped into range.
  const bool out = v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi) ||
                                                v.get<std::uint64_t>() < static_cast<std::uint64_t>(std::max<std::int64_t>(lo, 0))
                                          : v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi;
  if (out)
    throw bad_request(std::string("'") + key + "' is " + v.dump() + "; it must be between " + std::to_string(lo) + " and " +
                  std::to_string(hi), key);
  return v.get<std::int64_t>();
}

json choice_text(const CompletionRequest& r, const std::string& text, bool delta, bool first) {
  if (r.endpoint == Endpoint::completion) return {{"text", text}};
  json message = json::object();
  if (!delta || first) message["role"] = "assistant";
  if (!delta || !text.empty() || !first) message["content"] = text;
  return {{delta ? "delta" : "message", message}};
}

const char* object_of(const CompletionRequest& r, bool chunk) {
  if (r.endpoint == Endpoint::chat) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";
}

void parse_tools(const ojson& j, CompletionRequest& r) {
  if (j.contains("tools") && !j.at("tools").is_null()) {
    const ojson& tools = j.at("tools");
    if (!tools.is_array()) throw bad_request("'tools' must be an array", "tools");
    std::set<std::string> names;
    for (std::size_t i = 0; i < tools.size(); ++i) {
      const std::string where = "tools[" + std::to_string(i) + "]";
      const ojson& t = tools[i];
      if (!t.is_object() || t.value("type", "") != "function" || !t.contains("function") || !t.at("function").is_object())
        throw bad_request(where + " must be {\"type\": \"function\", \"function\": {...}}", where);
      const ojson& f = t.at("function");
      if (!f.contains("name") || !f.at("name").is_string() || f.at("name").get<std::string>().empty())
        throw bad_request(where + ".function.name must be a non-empty string", where + ".function.name");
      if (!names.insert(f.at("name").get<std::string>()).second)
        throw bad_request(where + ".function.name '" + f.at("name").get<std::string>() + "' is given twice", where + ".function.name");
      if (f.contains("parameters") && !f.at("parameters").is_object() && !f.at("parameters").is_null())
        throw bad_request(where + ".function.parameters must be a JSON Schema object", where + ".function.parameters");
    }
    r.tools = tools;
  }
  using TC = CompletionRequest::ToolChoice;
  r.tool_choice = r.tools.empty() ? TC::none : TC::automatic;
  if (j.contains("tool_choice") && !j.at("tool_choice").is_null()) {
    const ojson& c = j.at("tool_choice");
    if (c.is_string() && c.get<std::string>() == "none") r.tool_choice = TC::none;
    else if (c.is_string() && c.get<std::string>() == "auto") r.tool_choice = r.tools.empty() ? TC::none : TC::automatic;
    else if (c.is_string() && c.get<std::string>() == "required") r.tool_choice = TC::required;
    else if (c.is_object() && c.value("type", "") == "function" && c.contains("function") && c.at("function").is_object() &&
             c.at("function").contains("name") && c.at("function").at("name").is_string()) {
      r.tool_choice = TC::named;
      r.tool_name = c.at("function").at("name").get<std::string>();
    } else {
      throw bad_request("'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\"}}", "tool_choice");
    }
    if ((r.tool_choice == TC::required || r.tool_choice == TC::named) && r.tools.empty())
      throw bad_request("'tool_choice' asks for a tool call, but 'tools' gives none", "tool_choice");
  }
  if (j.contains("parallel_tool_calls") && !j.at("parallel_tool_calls").is_null() && !j.at("parallel_tool_calls").is_boolean())
    throw bad_request("'parallel_tool_calls' must be a boolean", "parallel_tool_calls");
  if (j.contains("chat_template_kwargs") && !j.at("chat_template_kwargs").is_null()) {
    if (!j.at("chat_template_kwargs").is_object()) throw bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    r.template_variables = j.at("chat_template_kwargs");
  }
  if (j.contains("enable_thinking") && !j.at("enable_thinking").is_null()) {
    if (!j.at("enable_thinking").is_boolean()) throw bad_request("'enable_thinking' must be a boolean", "enable_thinking");
    r.template_variables["enable_thinking"] = j.at("enable_thinking").get<bool>();
  }
}

void parse_response_format(const ojson& j, CompletionRequest& r) {
  if (!j.contains("response_format") || j.at("response_format").is_null()) return;
  const ojson& f = j.at("response_format");
  if (!f.is_object() || !f.contains("type") || !f.at("type").is_string())
    throw bad_request("'response_format' must be {\"type\": \"text\" | \"json_object\" | \"json_schema\", ...}", "response_format");
  const std::string type = f.at("type").get<std::string>();
  try {
    if (type == "text") return;
    if (type == "json_object") {
      r.grammar = std::make_shared<const text::constrain::Grammar>(text::constrain::any_json_object());
      return;
    }
    if (type == "json_schema") {
      if (!f.contains("json_schema") || !f.at("json_schema").is_object() || !f.at("json_schema").contains("schema"))
        throw bad_request("response_format json_schema needs {\"json_schema\": {\"name\", \"schema\": {...}}}", "response_format.json_schema");
      r.grammar = std::make_shared<const text::constrain::Grammar>(text::constrain::compile_json_schema(f.at("json_schema").at("schema")));
      return;
    }
  } catch (const Error& e) {
    throw bad_request(std::string("response_format: ") + e.what(), "response_format");
  }
  throw bad_request("response_format type '" + type + "' is not one of text, json_object, json_schema", "response_format.type");
}

}  // namespace

ApiError bad_request(std::string message, std::string param) {
  return ApiError{400, std::move(message), "invalid_request_error", std::move(param)};
}

json ApiError::body() const {
  return {{"error", {{"message", message}, {"type", type}, {"param", param.empty() ? json() : json(param)}, {"code", code.empty() ? json() : json(code)}}}};
}

ojson parse_body(std::string_view body) {
  if (text::hf::valid_utf8(body) != body) throw bad_request("the request body is not valid UTF-8", "");
  ojson j;
  try {
    j = ojson::parse(body);
  } catch (const ojson::parse_error& e) {
    throw bad_request(std::string("the request body is not valid JSON (at byte ") + std::to_string(e.byte) + ")", "");
  }
  if (!j.is_object()) throw bad_request(std::string("the request body must be a JSON object, not ") + j.type_name(), "");
  return j;
}

CompletionRequest parse_request(Endpoint endpoint, std::string_view body) {
  // Read in the body's key order (a schema's properties come out in it), then as plain JSON.
  const ojson oj = parse_body(body);
  const json j = oj;
  CompletionRequest r;
  r.endpoint = endpoint;
  if (j.contains("model")) {
    if (!j.at("model").is_string()) throw bad_request("'model' must be a string", "model");
    r.model = j.at("model").get<std::string>();
  }
  if (endpoint == Endpoint::chat) {
    if (!j.contains("messages")) throw bad_request("'messages' is required", "messages");
    const json& m = j.at("messages");
    if (!m.is_array() || m.empty()) throw bad_request("'messages' must be a non-empty array", "messages");
    r.messages = read_messages(m);
    parse_tools(oj, r);
  } else {
    if (!j.contains("prompt")) throw bad_request("'prompt' is required", "prompt");
    const json& p = j.at("prompt");
    if (p.is_string()) {
      r.prompt = p.get<std::string>();
    } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
      r.prompt = p[0].get<std::string>();
    } else {
      throw bad_request("'prompt' must be a string (one prompt a request)", "prompt");
    }
  }
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (j.contains(key) && !j.at(key).is_null()) r.max_tokens = integer_in(j, key, 1, std::int64_t{1} << 40);
  r.temperature = number_in(j, "temperature", 0.0, 2.0, 1.0);
  r.top_p = number_in(j, "top_p", 0.0, 1.0, 1.0);
  if (r.top_p == 0.0) throw bad_request("'top_p' must be above 0", "top_p");
  if (j.contains("top_k") && !j.at("top_k").is_null()) r.top_k = integer_in(j, "top_k", 0, std::int64_t{1} << 31);
  if (j.contains("seed") && !j.at("seed").is_null()) {
    const json& s = j.at("seed");
    if (!s.is_number_integer()) throw bad_request("'seed' must be an integer", "seed");
    r.seed = s.is_number_unsigned() ? s.get<std::uint64_t>() : static_cast<std::uint64_t>(s.get<std::int64_t>());
  }
  if (j.contains("n") && !j.at("n").is_null() && integer_in(j, "n", 1, 128) != 1) throw bad_request("'n' must be 1: one choice a request", "n");
  if (j.contains("stop") && !j.at("stop").is_null()) {
    const json& s = j.at("stop");
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array() && s.size() <= 4) {
      for (const json& x : s) {
        if (!x.is_string()) throw bad_request("'stop' must be a string or up to 4 strings", "stop");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      throw bad_request("'stop' must be a string or up to 4 strings", "stop");
    }
    for (const std::string& x : r.stop)
      if (x.empty()) throw bad_request("'stop' strings must not be empty", "stop");
  }
  if (j.contains("stream") && !j.at("stream").is_null()) {
    if (!j.at("stream").is_boolean()) throw bad_request("'stream' must be a boolean", "stream");
    r.stream = j.at("stream").get<bool>();
  }
  if (j.contains("ignore_eos") && !j.at("ignore_eos").is_null()) {
    if (!j.at("ignore_eos").is_boolean()) throw bad_request("'ignore_eos' must be a boolean", "ignore_eos");
    r.ignore_eos = j.at("ignore_eos").get<bool>();
  }
  parse_response_format(oj, r);
  if (j.contains("logprobs") && !j.at("logprobs").is_null()) {
    if (endpoint == Endpoint::chat) {
      if (!j.at("logprobs").is_boolean()) throw bad_request("'logprobs' must be a boolean", "logprobs");
      if (j.at("logprobs").get<bool>()) r.logprobs = 0;
    } else {
      r.logprobs = static_cast<int>(integer_in(j, "logprobs", 0, 5));
    }
  }
  r.frequency_penalty = number_in(j, "frequency_penalty", -2.0, 2.0, 0.0);
  r.presence_penalty = number_in(j, "presence_penalty", -2.0, 2.0, 0.0);
  r.repetition_penalty = number_in(j, "repetition_penalty", 0.01, 10.0, 1.0);
  if (j.contains("logit_bias") && !j.at("logit_bias").is_null()) {
    const json& b = j.at("logit_bias");
    if (!b.is_object()) throw bad_request("'logit_bias' must be an object of token ids to biases", "logit_bias");
    for (const auto& [k, v] : b.items()) {
      std::size_t used = 0;
      long long id = -1;
      try {
        id = std::stoll(k, &used);
      } catch (const std::exception&) {
      }
      if (used != k.size() || id < 0 || id > (std::int64_t{1} << 30))
        throw bad_request("'logit_bias' key '" + k + "' is not a token id", "logit_bias");
      if (!v.is_number() || v.get<double>() < -100 || v.get<double>() > 100)
        throw bad_request("'logit_bias' value for token " + k + " must be a number between -100 and 100", "logit_bias");
      r.logit_bias.emplace_back(static_cast<std::int32_t>(id), v.get<float>());
    }
  }
  if (j.contains("parallel_tool_calls") && j.at("parallel_tool_calls").is_boolean())
    r.parallel_tool_calls = j.at("parallel_tool_calls").get<bool>();
  for (const char* key : {"user", "metadata", "safety_identifier", "prompt_cache_key"})
    if (j.contains(key) && !j.at(key).is_null())
      r.log_note += std::string(r.log_note.empty() ? "" : " ") + key + "=" + (j.at(key).is_string() ? j.at(key).get<std::string>() : j.at(key).dump());
  if (endpoint == Endpoint::chat && j.contains("top_logprobs") && !j.at("top_logprobs").is_null()) {
    const auto n = static_cast<int>(integer_in(j, "top_logprobs", 0, 20));
    if (r.logprobs < 0 && n > 0) throw bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    if (r.logprobs >= 0) r.logprobs = n;
  }
  check_request_fields(endpoint, j);
  if (j.contains("stream_options") && j.at("stream_options").is_object()) {
    const json& o = j.at("stream_options");
    r.include_usage = o.contains("include_usage") && o.at("include_usage").is_boolean() && o.at("include_usage").get<bool>();
  }
  return r;
}

json Usage::json() const {
  return {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}, {"total_tokens", prompt_tokens + completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

namespace {

json token_bytes(const std::string& t) {
  json b = json::array();
  for (const char c : t) b.push_back(static_cast<int>(static_cast<unsigned char>(c)));
  return b;
}

json tool_calls_json(const std::vector<ToolCall>& calls, int first, bool indexed) {
  json out = json::array();
  for (std::size_t i = 0; i < calls.size(); ++i) {
    json c = {{"id", calls[i].id}, {"type", "function"}, {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (indexed) c["index"] = first + static_cast<int>(i);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

json logprobs_json(const CompletionRequest& r, const std::vector<LogprobEntry>& entries, std::size_t offset) {
  if (r.logprobs < 0) return nullptr;
  // A token may be part of a character: its text as valid UTF-8 (U+FFFD for the part), its bytes exact.
  const auto text = [](const std::string& t) { return text::hf::valid_utf8(t); };
  if (r.endpoint == Endpoint::chat) {
    json content = json::array();
    for (const LogprobEntry& e : entries) {
      json top = json::array();
      for (const auto& [t, lp] : e.top) top.push_back({{"token", text(t)}, {"logprob", lp}, {"bytes", token_bytes(t)}});
      content.push_back({{"token", text(e.token)}, {"logprob", e.logprob}, {"bytes", token_bytes(e.token)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (const LogprobEntry& e : entries) {
    tokens.push_back(text(e.token));
    lps.push_back(e.logprob);
    json top = json::object();
    for (const auto& [t, lp] : e.top) top[text(t)] = lp;
    tops.push_back(top);
    offsets.push_back(offset);
    offset += e.token.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json completion_body(const CompletionRequest& r, const std::string& id, std::int64_t created, const ChatAnswer& answer,
                     const std::string& finish_reason, const Usage& usage) {
  json choice = choice_text(r, answer.content, false, false);
  if (r.endpoint == Endpoint::chat) {
    json& m = choice["message"];
    if (!answer.reasoning.empty()) m["reasoning_content"] = answer.reasoning;
    if (!answer.calls.empty()) {
      m["tool_calls"] = tool_calls_json(answer.calls, 0, false);
      if (answer.content.find_first_not_of(" \n\t\r") == std::string::npos) m["content"] = nullptr;
    }
  }
  choice["index"] = 0;
  choice["finish_reason"] = finish_reason;
  choice["logprobs"] = logprobs_json(r, answer.logprobs);
  return {{"id", id}, {"object", object_of(r, false)}, {"created", created}, {"model", r.model},
          {"choices", json::array({choice})}, {"usage", usage.json()}};
}

json stream_chunk(const CompletionRequest& r, const std::string& id, std::int64_t created, const std::string& text,
                  const std::optional<std::string>& finish_reason, bool first, const std::vector<LogprobEntry>& logprobs,
                  std::size_t offset) {
  json choice = choice_text(r, text, true, first);
  choice["index"] = 0;
  choice["finish_reason"] = finish_reason ? json(*finish_reason) : json();
  choice["logprobs"] = logprobs.empty() ? json() : logprobs_json(r, logprobs, offset);
  return {{"id", id}, {"object", object_of(r, true)}, {"created", created}, {"model", r.model}, {"choices", json::array({choice})}};
}

json chat_delta_chunk(const CompletionRequest& r, const std::string& id, std::int64_t created,
                      const AnswerSplitter::Delta& delta, int first_call, const std::vector<LogprobEntry>& logprobs) {
  json d = json::object();
  if (!delta.reasoning.empty()) d["reasoning_content"] = delta.reasoning;
  if (!delta.content.empty()) d["content"] = delta.content;
  if (!delta.calls.empty()) d["tool_calls"] = tool_calls_json(delta.calls, first_call, true);
  json choice = {{"index", 0}, {"delta", d}, {"finish_reason", nullptr},
                 {"logprobs", logprobs.empty() ? json() : logprobs_json(r, logprobs)}};
  return {{"id", id}, {"object", object_of(r, true)}, {"created", created}, {"model", r.model}, {"choices", json::array({choice})}};
}

json usage_chunk(const CompletionRequest& r, const std::string& id, std::int64_t created, const Usage& usage) {
  return {{"id", id}, {"object", object_of(r, true)}, {"created", created}, {"model", r.model}, {"choices", json::array()},
          {"usage", usage.json()}};
}

}  // namespace orion::serve
