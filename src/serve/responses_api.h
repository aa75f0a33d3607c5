#pragma once
// OpenAI's Responses API (POST /v1/responses) over the chat machinery: a request's `input` (a
// string, or a list of messages, function calls and their outputs) and `instructions` become a
// chat request's messages, after the conversation of `previous_response_id` kept on the server
// (serve/response_store.h); the answer becomes a response object, or when streamed its typed
// events (response.created, response.output_text.delta, response.completed...).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/openai_wire.h"

namespace orion::serve {

struct ResponsesRequest {
  CompletionRequest chat;           // what runs (Endpoint::chat)
  std::string previous_response_id;
  nlohmann::json conversation;      // the messages before this answer, instructions left out
  bool store = true;
  nlohmann::json echo;              // the request's settings a response object repeats
};

// Reads a body of POST /v1/responses. `history(id)` gives the conversation a stored response
// ended with (nullopt: none such). Throws ApiError (400) naming the field, or 404 for an
// unknown previous_response_id.
ResponsesRequest parse_responses_request(std::string_view body,
                                         const std::function<std::optional<nlohmann::json>(const std::string&)>& history);

// The response object; `status` "in_progress", "completed" or "incomplete" (the answer hit
// max_output_tokens or the context).
nlohmann::json response_object(const ResponsesRequest& q, const std::string& id, std::int64_t created, const std::string& status,
                               const ChatAnswer& answer, const Usage& usage);
// The conversation a stored response ends with: the request's, then the answer as messages.
nlohmann::json conversation_after(const ResponsesRequest& q, const ChatAnswer& answer);

// The typed events of a streamed response, numbered in order.
class ResponseEvents {
 public:
  ResponseEvents(const ResponsesRequest& q, std::string id, std::int64_t created) : q_(q), id_(std::move(id)), created_(created) {}
  // response.created and response.in_progress.
  std::vector<nlohmann::json> start();
  // A part of the answer: its text as output_text deltas (the message item opened at the first),
  // its reasoning and calls as whole items.
  std::vector<nlohmann::json> add(const std::string& reasoning, const std::string& content, const std::vector<ToolCall>& calls);
  // The items closed, then response.completed (or .incomplete) with the whole object.
  std::vector<nlohmann::json> finish(const std::string& status, const Usage& usage);
  // What add() was given, together.
  const ChatAnswer& answer() const { return answer_; }

 private:
  nlohmann::json event(const std::string& type, nlohmann::json fields);
  const ResponsesRequest& q_;
  std::string id_;
  std::int64_t created_;
  int sequence_ = 0;
  int message_index_ = -1;  // the message item's output index, once opened
  std::vector<nlohmann::json> items_;  // the output items, as the final object lists them
  ChatAnswer answer_;
};

}  // namespace orion::serve
