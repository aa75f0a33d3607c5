#pragma once
// OpenAI's HTTP API as far as `orion serve` speaks it: the request bodies of
// /v1/chat/completions and /v1/completions read and checked into one CompletionRequest, and
// the JSON of the answers, the streamed chunks and the error object. Only the wire format:
// what is generated is the scheduler's (serve/scheduler.h).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/tool_calls.h"
#include "text/constrain/json_grammar.h"

namespace orion::serve {

// An error as the API reports it: the HTTP status and {"error": {"message", "type", "param",
// "code"}}. Bad input is a 4xx, never a 500.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending field, "" for none
  std::string code = {};  // OpenAI's code ("invalid_api_key"), "" for none
  nlohmann::json body() const;
};

// A 400 invalid_request_error about `param`.
ApiError bad_request(std::string message, std::string param);
// A request body as a JSON object in its key order. Throws ApiError (400): invalid UTF-8, JSON
// that does not parse (its byte), anything but an object.
nlohmann::ordered_json parse_body(std::string_view body);

enum class Endpoint { chat, completion };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::completion;
  std::string model;
  nlohmann::json messages;  // chat: the conversation, as given
  std::string prompt;       // completion
  std::optional<std::int64_t> max_tokens;  // none: until a stop or the context's end
  double temperature = 1.0, top_p = 1.0;
  std::int64_t top_k = 0;  // 0: no limit (an extension OpenAI's API does not have)
  std::optional<std::uint64_t> seed;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool ignore_eos = false;     // generate past end-of-text (an extension, as vLLM's, for benchmarks)
  // response_format json_object or json_schema: the answer's grammar (nullptr: free text).
  std::shared_ptr<const text::constrain::Grammar> grammar;
  // chat: the tools as given (in their order, an empty array for none) and tool_choice.
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  enum class ToolChoice { none, automatic, required, named } tool_choice = ToolChoice::automatic;
  std::string tool_name;  // ToolChoice::named
  // OpenAI's penalties over the answer so far, and vLLM's repetition penalty (1: none).
  double frequency_penalty = 0, presence_penalty = 0, repetition_penalty = 1;
  // logit_bias: token id -> bias, added to its logit before sampling (ids checked against the
  // vocabulary when the request is queued).
  std::vector<std::pair<std::int32_t, float>> logit_bias;
  bool parallel_tool_calls = true;  // false: at most one tool call an answer
  // What the request's log line shows of the fields only logged (user, metadata...).
  std::string log_note;
  // Log-probabilities: -1 none, else the alternatives each token lists (chat: logprobs true and
  // top_logprobs 0-20; completions: logprobs 0-5).
  int logprobs = -1;
  // chat: the template's further variables (chat_template_kwargs, enable_thinking), an object.
  nlohmann::ordered_json template_variables = nlohmann::ordered_json::object();
};

// Reads a request body. Throws ApiError (400) naming the field: JSON that does not parse,
// invalid UTF-8, a field of the wrong type or out of range, n other than 1, a missing prompt or
// messages, a schema the grammar cannot honour (by keyword), tools that are not functions.
CompletionRequest parse_request(Endpoint endpoint, std::string_view body);

// A generated token's log-probability and its step's most likely tokens', as text (the token's
// piece, which may be part of a character: `bytes` holds it exactly).
struct LogprobEntry {
  std::string token;
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;
};

// A chat answer in its parts: reasoning (a <think> block), content and tool calls; and, when
// asked, its tokens' log-probabilities.
struct ChatAnswer {
  std::string reasoning, content;
  std::vector<ToolCall> calls;
  std::vector<LogprobEntry> logprobs;
};

// The choice's "logprobs" object for `entries` (chat: {"content": [...]}; completions: tokens,
// token_logprobs, top_logprobs, text_offset from `offset`), null when the request asked none.
nlohmann::json logprobs_json(const CompletionRequest& r, const std::vector<LogprobEntry>& entries, std::size_t offset = 0);

struct Usage {
  std::int64_t prompt_tokens = 0, completion_tokens = 0;
  std::int64_t cached_tokens = 0;  // of the prompt, taken from the prompt cache
  nlohmann::json json() const;
};

// The whole answer of a request that did not stream. finish_reason: "stop", "length" or
// "tool_calls". A chat's message has content null when it is only tool calls, and
// reasoning_content when it reasoned.
nlohmann::json completion_body(const CompletionRequest& r, const std::string& id, std::int64_t created,
                               const ChatAnswer& answer, const std::string& finish_reason, const Usage& usage);
// A chat stream's chunk of reasoning, content and whole tool calls (numbered from
// `first_call`).
nlohmann::json chat_delta_chunk(const CompletionRequest& r, const std::string& id, std::int64_t created,
                                const AnswerSplitter::Delta& delta, int first_call, const std::vector<LogprobEntry>& logprobs = {});
// One server-sent event's data: a piece of text, or (finish_reason set) the last chunk, or
// (usage set, no choices) the usage chunk.
nlohmann::json stream_chunk(const CompletionRequest& r, const std::string& id, std::int64_t created,
                            const std::string& text, const std::optional<std::string>& finish_reason,
                            bool first = false, const std::vector<LogprobEntry>& logprobs = {}, std::size_t offset = 0);
nlohmann::json usage_chunk(const CompletionRequest& r, const std::string& id, std::int64_t created, const Usage& usage);

}  // namespace orion::serve
