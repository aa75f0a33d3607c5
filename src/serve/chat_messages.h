#pragma once
// A chat request's messages as clients send them, read into what a chat template takes: content
// as a string (a list of text parts joined by newlines, as vLLM joins them), `developer` as
// `system` (OpenAI's clients now send it in its place), tool calls and tool results checked. What
// no model here can read (image, audio or file parts) and roles no template knows are refused
// by name.
#include <nlohmann/json.hpp>

namespace orion::serve {

// Throws ApiError (400) naming the message, part or field ("messages[2].content[1]").
nlohmann::json read_messages(const nlohmann::json& messages);

// The roles taken, in the order the error message lists them.
inline constexpr const char* kChatRoles[] = {"system", "developer", "user", "assistant", "tool"};

}  // namespace orion::serve
