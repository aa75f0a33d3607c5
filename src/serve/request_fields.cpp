#include "serve/request_fields.h"

#include <array>

namespace orion::serve {

using nlohmann::json;

namespace {

bool is_one(const json& v) { return v.is_null() || v == 1; }
bool is_false(const json& v) { return v.is_null() || v == false; }
bool text_only(const json& v) { return v.is_null() || v == json::array({"text"}); }
bool default_tier(const json& v) { return v.is_null() || v == "auto" || v == "default"; }

constexpr bool C = true, N = false;  // the chat and completion columns
constexpr FieldUse H = FieldUse::honoured, L = FieldUse::logged, R = FieldUse::refused;

const std::array kFields = {
    RequestField{"model", C, C, H, "the name answers carry (one model per server)"},
    RequestField{"messages", C, N, H, "through the chat template; content as a string or text parts"},
    RequestField{"prompt", N, C, H, "one prompt a request"},
    RequestField{"max_tokens", C, C, H, "capped by --max-tokens-limit"},
    RequestField{"max_completion_tokens", C, N, H, "as max_tokens"},
    RequestField{"temperature", C, C, H, "0 to 2; 0 is greedy"},
    RequestField{"top_p", C, C, H, "nucleus sampling"},
    RequestField{"top_k", C, C, H, "an extension, as vLLM's"},
    RequestField{"seed", C, C, H, "the sampler's seed"},
    RequestField{"stop", C, C, H, "up to 4 strings"},
    RequestField{"stream", C, C, H, "server-sent events"},
    RequestField{"stream_options", C, C, H, "include_usage"},
    RequestField{"frequency_penalty", C, C, H, "-2 to 2, times each token's count in the answer so far"},
    RequestField{"presence_penalty", C, C, H, "-2 to 2, once for each token in the answer so far"},
    RequestField{"logit_bias", C, C, H, "token id to a bias of -100 to 100, added to its logit"},
    RequestField{"repetition_penalty", C, C, H, "an extension, as vLLM's: over the prompt and the answer"},
    RequestField{"logprobs", C, C, H, "chat: true; completions: 0 to 5 alternatives"},
    RequestField{"top_logprobs", C, N, H, "0 to 20 alternatives"},
    RequestField{"response_format", C, C, H, "json_object or json_schema, by constrained decoding"},
    RequestField{"tools", C, N, H, "function tools through the template"},
    RequestField{"tool_choice", C, N, H, "none, auto, required or a named function"},
    RequestField{"parallel_tool_calls", C, N, H, "false: at most one call an answer"},
    RequestField{"chat_template_kwargs", C, N, H, "an extension: the template's further variables"},
    RequestField{"enable_thinking", C, N, H, "an extension: the template's variable"},
    RequestField{"ignore_eos", C, C, H, "an extension, as vLLM's: generate past end-of-text"},
    RequestField{"n", C, C, R, "one choice a request", is_one},
    RequestField{"user", C, C, L, "written in the request's log line"},
    RequestField{"metadata", C, N, L, "written in the request's log line"},
    RequestField{"safety_identifier", C, N, L, "written in the request's log line"},
    RequestField{"prompt_cache_key", C, N, L, "written in the log line; the prompt cache matches prefixes by itself"},
    RequestField{"store", C, N, R, "nothing is stored for later use", is_false},
    RequestField{"echo", N, C, R, "the prompt is not echoed", is_false},
    RequestField{"best_of", N, C, R, "one candidate a request", is_one},
    RequestField{"suffix", N, C, R, "no insertion after a suffix"},
    RequestField{"modalities", C, N, R, "text only", text_only},
    RequestField{"audio", C, N, R, "no audio output"},
    RequestField{"prediction", C, N, R, "no predicted outputs"},
    RequestField{"web_search_options", C, N, R, "no web search"},
    RequestField{"functions", C, N, R, "the deprecated form of tools: send tools"},
    RequestField{"function_call", C, N, R, "the deprecated form of tool_choice: send tool_choice"},
    RequestField{"reasoning_effort", C, N, R, "use enable_thinking where the template has it"},
    RequestField{"verbosity", C, N, R, "no verbosity control"},
    RequestField{"service_tier", C, C, R, "one tier", default_tier},
};

}  // namespace

std::span<const RequestField> request_fields() { return kFields; }

void check_request_fields(Endpoint endpoint, const json& body) {
  for (const auto& [key, value] : body.items()) {
    const RequestField* f = nullptr;
    for (const RequestField& x : kFields)
      if (x.name == key && (endpoint == Endpoint::chat ? x.chat : x.completion)) f = &x;
    if (f == nullptr)
      throw ApiError{400, "Unrecognized request argument supplied: " + key, "invalid_request_error", key};
    if (f->use == FieldUse::refused && !(f->asks_nothing && f->asks_nothing(value)))
      throw ApiError{400, "'" + key + "' is not supported: " + std::string(f->note), "invalid_request_error", key};
  }
}

}  // namespace orion::serve
