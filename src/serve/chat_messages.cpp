#include "serve/chat_messages.h"

#include <string>

#include "serve/openai_wire.h"

namespace orion::serve {

using nlohmann::json;

namespace {

// A message's content as text: a string, null, or a list of text parts joined by newlines.
json content_text(const json& content, const std::string& where) {
  if (content.is_string() || content.is_null()) return content;
  if (!content.is_array()) throw bad_request(where + " must be a string or an array of content parts", where);
  std::string text;
  for (std::size_t k = 0; k < content.size(); ++k) {
    const std::string w = where + "[" + std::to_string(k) + "]";
    const json& part = content[k];
    if (!part.is_object() || !part.contains("type") || !part.at("type").is_string())
      throw bad_request(w + " must be a content part {\"type\": \"text\", \"text\": ...}", w);
    const std::string type = part.at("type").get<std::string>();
    if (type != "text")
      throw bad_request(w + " is a part of type '" + type + "': this server's models read text parts only", w);
    if (!part.contains("text") || !part.at("text").is_string()) throw bad_request(w + ".text must be a string", w + ".text");
    if (k > 0) text += "\n";
    text += part.at("text").get<std::string>();
  }
  return text;
}

void check_tool_calls(const json& m, const std::string& role, const std::string& where) {
  if (role == "tool" && (!m.contains("content") || !m.at("content").is_string()))
    throw bad_request(where + ": a tool message's content must be a string (the tool's result)", where + ".content");
  if (!m.contains("tool_calls") || m.at("tool_calls").is_null()) return;
  const json& calls = m.at("tool_calls");
  if (role != "assistant" || !calls.is_array()) throw bad_request(where + ".tool_calls must be an array on an assistant message", where + ".tool_calls");
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const std::string w = where + ".tool_calls[" + std::to_string(k) + "]";
    const json& c = calls[k];
    if (!c.is_object() || !c.contains("function") || !c.at("function").is_object() || !c.at("function").contains("name") ||
        !c.at("function").at("name").is_string())
      throw bad_request(w + " must be {\"type\": \"function\", \"function\": {\"name\", \"arguments\"}}", w);
    if (c.at("function").contains("arguments") && !c.at("function").at("arguments").is_string() &&
        !c.at("function").at("arguments").is_object())
      throw bad_request(w + ".function.arguments must be a string of JSON", w + ".function.arguments");
  }
}

}  // namespace

json read_messages(const json& messages) {
  json out = json::array();
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const json& m = messages[i];
    if (!m.is_object()) throw bad_request(where + " must be an object", where);
    if (!m.contains("role") || !m.at("role").is_string()) throw bad_request(where + ".role must be a string", where + ".role");
    std::string role = m.at("role").get<std::string>();
    bool known = false;
    for (const char* r : kChatRoles) known = known || role == r;
    if (!known)
      throw bad_request(where + ".role '" + role + "' is not one of system, developer, user, assistant, tool", where + ".role");
    json one = m;
    if (role == "developer") one["role"] = role = "system";
    if (m.contains("content")) one["content"] = content_text(m.at("content"), where + ".content");
    check_tool_calls(one, role, where);
    out.push_back(std::move(one));
  }
  return out;
}

}  // namespace orion::serve
