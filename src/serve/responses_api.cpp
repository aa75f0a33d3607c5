#include "serve/responses_api.h"

#include "serve/chat_messages.h"

namespace orion::serve {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

// The Responses API's names for the chat fields an error may name.
std::string responses_name(const std::string& chat) {
  if (chat == "max_tokens") return "max_output_tokens";
  if (chat.rfind("messages", 0) == 0) return "input" + chat.substr(8);
  if (chat.rfind("response_format", 0) == 0) return "text.format";
  return chat;
}

// A message's content: a string, or input_text / output_text parts (as text parts).
ojson message_content(const ojson& content, const std::string& where) {
  if (!content.is_array()) return content;
  ojson parts = ojson::array();
  for (std::size_t k = 0; k < content.size(); ++k) {
    const ojson& p = content[k];
    const std::string type = p.is_object() ? p.value("type", "") : "";
    if (type == "input_text" || type == "output_text" || type == "text") {
      parts.push_back({{"type", "text"}, {"text", p.value("text", ojson())}});
    } else {
      throw bad_request(where + "[" + std::to_string(k) + "] is a part of type '" + type + "': this server's models read text parts only",
                where + "[" + std::to_string(k) + "]");
    }
  }
  return parts;
}

// `input` as chat messages: messages, function calls (folded into one assistant turn) and
// their outputs (tool messages).
ojson input_messages(const ojson& input) {
  if (input.is_string()) return ojson::array({{{"role", "user"}, {"content", input}}});
  if (!input.is_array()) throw bad_request("'input' must be a string or an array of items", "input");
  ojson out = ojson::array();
  for (std::size_t i = 0; i < input.size(); ++i) {
    const std::string where = "input[" + std::to_string(i) + "]";
    const ojson& item = input[i];
    if (!item.is_object()) throw bad_request(where + " must be an object", where);
    const std::string type = item.value("type", item.contains("role") ? "message" : "");
    if (type == "message") {
      ojson m = {{"role", item.value("role", ojson())}, {"content", message_content(item.value("content", ojson()), where + ".content")}};
      out.push_back(std::move(m));
    } else if (type == "function_call") {
      ojson call = {{"id", item.value("call_id", "")}, {"type", "function"},
                    {"function", {{"name", item.value("name", "")}, {"arguments", item.value("arguments", "{}")}}}};
      if (out.empty() || out.back().value("role", "") != "assistant" || !out.back().contains("tool_calls"))
        out.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", ojson::array()}});
      out.back()["tool_calls"].push_back(std::move(call));
    } else if (type == "function_call_output") {
      const ojson& o = item.value("output", ojson());
      out.push_back({{"role", "tool"}, {"tool_call_id", item.value("call_id", "")}, {"content", o.is_string() ? o : ojson(o.dump())}});
    } else if (type == "reasoning") {
      continue;  // an earlier answer's reasoning: templates drop it from past turns
    } else {
      throw bad_request(where + " is an item of type '" + type + "': this server takes messages, function calls and their outputs", where + ".type");
    }
  }
  return out;
}

}  // namespace

ResponsesRequest parse_responses_request(std::string_view body, const std::function<std::optional<json>(const std::string&)>& history) {
  const ojson j = parse_body(body);
  ResponsesRequest q;
  ojson chat = ojson::object();
  for (const auto& [key, v] : j.items()) {
    if (v.is_null()) continue;
    if (key == "model" || key == "temperature" || key == "top_p" || key == "stream" || key == "parallel_tool_calls" ||
        key == "metadata" || key == "user" || key == "tool_choice" || key == "safety_identifier" || key == "prompt_cache_key") {
      chat[key] = v;
    } else if (key == "max_output_tokens") {
      chat["max_tokens"] = v;
    } else if (key == "input" || key == "instructions" || key == "previous_response_id") {
      continue;  // below
    } else if (key == "store") {
      if (!v.is_boolean()) throw bad_request("'store' must be a boolean", "store");
      q.store = v.get<bool>();
    } else if (key == "tools") {
      if (!v.is_array()) throw bad_request("'tools' must be an array", "tools");
      ojson tools = ojson::array();
      for (std::size_t i = 0; i < v.size(); ++i) {
        const ojson& t = v[i];
        if (!t.is_object() || t.value("type", "") != "function")
          throw bad_request("tools[" + std::to_string(i) + "] is not a function tool: this server runs function tools only", "tools[" + std::to_string(i) + "]");
        ojson f = {{"name", t.value("name", ojson())}};
        if (t.contains("description")) f["description"] = t.at("description");
        if (t.contains("parameters")) f["parameters"] = t.at("parameters");
        tools.push_back({{"type", "function"}, {"function", f}});
      }
      chat["tools"] = tools;
    } else if (key == "text") {
      if (!v.is_object()) throw bad_request("'text' must be an object", "text");
      for (const auto& [k, x] : v.items())
        if (k != "format") throw bad_request("'text." + k + "' is not supported", "text." + k);
      const ojson f = v.value("format", ojson());
      if (f.is_object() && f.value("type", "") == "json_schema")
        chat["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", f.value("name", "")}, {"schema", f.value("schema", ojson())}}}};
      else if (f.is_object() && f.value("type", "") == "json_object")
        chat["response_format"] = {{"type", "json_object"}};
      else if (!f.is_null() && !(f.is_object() && f.value("type", "") == "text"))
        throw bad_request("'text.format' must be of type text, json_object or json_schema", "text.format");
    } else if ((key == "truncation" && v == "disabled") || (key == "background" && v == false) ||
               (key == "include" && v.is_array() && v.empty())) {
      continue;  // what asks for nothing
    } else {
      throw ApiError{400, "Unrecognized or unsupported request argument supplied: " + key, "invalid_request_error", key};
    }
  }
  if (!j.contains("input")) throw bad_request("'input' is required", "input");
  ojson messages = ojson::array();
  if (j.contains("instructions") && !j.at("instructions").is_null()) {
    if (!j.at("instructions").is_string()) throw bad_request("'instructions' must be a string", "instructions");
    messages.push_back({{"role", "system"}, {"content", j.at("instructions")}});
  }
  ojson conversation = ojson::array();
  if (j.contains("previous_response_id") && !j.at("previous_response_id").is_null()) {
    if (!j.at("previous_response_id").is_string()) throw bad_request("'previous_response_id' must be a string", "previous_response_id");
    q.previous_response_id = j.at("previous_response_id").get<std::string>();
    const std::optional<json> before = history(q.previous_response_id);
    if (!before)
      throw ApiError{404, "no stored response has the id '" + q.previous_response_id + "' (responses are kept for a while, and only with store)",
                     "invalid_request_error", "previous_response_id", "not_found"};
    conversation = *before;
  }
  for (const ojson& m : input_messages(j.at("input"))) conversation.push_back(m);
  for (const ojson& m : conversation) messages.push_back(m);
  chat["messages"] = messages;
  try {
    q.chat = parse_request(Endpoint::chat, chat.dump());
  } catch (ApiError& e) {
    e.param = responses_name(e.param);
    throw;
  }
  q.conversation = read_messages(json(conversation));
  q.echo = {{"instructions", j.value("instructions", ojson())},
            {"max_output_tokens", j.value("max_output_tokens", ojson())},
            {"temperature", j.value("temperature", ojson(1.0))},
            {"top_p", j.value("top_p", ojson(1.0))},
            {"tools", j.value("tools", ojson::array())},
            {"tool_choice", j.value("tool_choice", ojson("auto"))},
            {"parallel_tool_calls", j.value("parallel_tool_calls", ojson(true))},
            {"text", j.value("text", ojson{{"format", {{"type", "text"}}}})},
            {"metadata", j.value("metadata", ojson::object())},
            {"previous_response_id", q.previous_response_id.empty() ? json() : json(q.previous_response_id)},
            {"store", q.store}};
  return q;
}

namespace {

json message_item(const std::string& id, const std::string& text, const std::string& status) {
  return {{"type", "message"}, {"id", "msg_" + id}, {"status", status}, {"role", "assistant"},
          {"content", json::array({{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}}})}};
}

json reasoning_item(const std::string& id, const std::string& text) {
  return {{"type", "reasoning"}, {"id", "rs_" + id}, {"summary", json::array({{{"type", "summary_text"}, {"text", text}}})}};
}

json call_item(const ToolCall& c) {
  return {{"type", "function_call"}, {"id", "fc_" + c.id}, {"call_id", c.id}, {"name", c.name}, {"arguments", c.arguments},
          {"status", "completed"}};
}

json usage_json(const Usage& u) {
  return {{"input_tokens", u.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
          {"output_tokens", u.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

}  // namespace

json response_object(const ResponsesRequest& q, const std::string& id, std::int64_t created, const std::string& status,
                     const ChatAnswer& a, const Usage& usage) {
  json output = json::array();
  if (!a.reasoning.empty()) output.push_back(reasoning_item(id, a.reasoning));
  if (!a.content.empty() || a.calls.empty()) output.push_back(message_item(id, a.content, status == "in_progress" ? "in_progress" : "completed"));
  for (const ToolCall& c : a.calls) output.push_back(call_item(c));
  json r = {{"id", "resp_" + id}, {"object", "response"}, {"created_at", created}, {"status", status},
            {"model", q.chat.model}, {"output", output}, {"error", nullptr},
            {"incomplete_details", status == "incomplete" ? json{{"reason", "max_output_tokens"}} : json()},
            {"usage", status == "in_progress" ? json() : usage_json(usage)}};
  for (const auto& [k, v] : q.echo.items()) r[k] = v;
  return r;
}

json conversation_after(const ResponsesRequest& q, const ChatAnswer& a) {
  json c = q.conversation;
  json m = {{"role", "assistant"}, {"content", a.content}};
  if (!a.calls.empty()) {
    json calls = json::array();
    for (const ToolCall& t : a.calls)
      calls.push_back({{"id", t.id}, {"type", "function"}, {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
    m["tool_calls"] = calls;
  }
  c.push_back(std::move(m));
  return c;
}

json ResponseEvents::event(const std::string& type, json fields) {
  fields["type"] = type;
  fields["sequence_number"] = sequence_++;
  return fields;
}

std::vector<json> ResponseEvents::start() {
  const json r = response_object(q_, id_, created_, "in_progress", {}, {});
  json empty = r;
  empty["output"] = json::array();
  return {event("response.created", {{"response", empty}}), event("response.in_progress", {{"response", empty}})};
}

std::vector<json> ResponseEvents::add(const std::string& reasoning, const std::string& content, const std::vector<ToolCall>& calls) {
  std::vector<json> out;
  if (!reasoning.empty()) {
    // Reasoning comes before the answer's text: an item of its own, whole.
    answer_.reasoning += reasoning;
    const json item = reasoning_item(id_ + "_" + std::to_string(items_.size()), reasoning);
    const auto index = static_cast<int>(items_.size());
    out.push_back(event("response.output_item.added", {{"output_index", index}, {"item", item}}));
    out.push_back(event("response.output_item.done", {{"output_index", index}, {"item", item}}));
    items_.push_back(item);
  }
  if (!content.empty()) {
    if (message_index_ < 0) {
      message_index_ = static_cast<int>(items_.size());
      json item = message_item(id_, "", "in_progress");
      item["content"] = json::array();
      items_.push_back(item);
      out.push_back(event("response.output_item.added", {{"output_index", message_index_}, {"item", item}}));
      out.push_back(event("response.content_part.added", {{"item_id", "msg_" + id_}, {"output_index", message_index_}, {"content_index", 0},
                                                          {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}}));
    }
    answer_.content += content;
    out.push_back(event("response.output_text.delta",
                        {{"item_id", "msg_" + id_}, {"output_index", message_index_}, {"content_index", 0}, {"delta", content}}));
  }
  for (const ToolCall& c : calls) {
    answer_.calls.push_back(c);
    const json item = call_item(c);
    const auto index = static_cast<int>(items_.size());
    out.push_back(event("response.output_item.added", {{"output_index", index}, {"item", item}}));
    out.push_back(event("response.function_call_arguments.done", {{"item_id", "fc_" + c.id}, {"output_index", index}, {"arguments", c.arguments}}));
    out.push_back(event("response.output_item.done", {{"output_index", index}, {"item", item}}));
    items_.push_back(item);
  }
  return out;
}

std::vector<json> ResponseEvents::finish(const std::string& status, const Usage& usage) {
  std::vector<json> out;
  if (message_index_ >= 0) {
    const json part = {{"type", "output_text"}, {"text", answer_.content}, {"annotations", json::array()}};
    out.push_back(event("response.output_text.done",
                        {{"item_id", "msg_" + id_}, {"output_index", message_index_}, {"content_index", 0}, {"text", answer_.content}}));
    out.push_back(event("response.content_part.done", {{"item_id", "msg_" + id_}, {"output_index", message_index_}, {"content_index", 0}, {"part", part}}));
    out.push_back(event("response.output_item.done", {{"output_index", message_index_}, {"item", message_item(id_, answer_.content, "completed")}}));
  }
  // The final object lists the items in the order they were streamed.
  json r = response_object(q_, id_, created_, status, answer_, usage);
  if (message_index_ >= 0) items_[static_cast<std::size_t>(message_index_)] = message_item(id_, answer_.content, "completed");
  r["output"] = items_.empty() ? json::array({message_item(id_, "", "completed")}) : json(items_);
  // response.completed whatever the status ("incomplete" inside): the official client takes the
  // final object from that event alone.
  out.push_back(event("response.completed", {{"response", r}}));
  return out;
}

}  // namespace orion::serve
