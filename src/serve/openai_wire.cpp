#include "serve/openai_wire.h"

#include <algorithm>

#include "text/hf/hf_components.h"

namespace orion::serve {

using nlohmann::json;

namespace {

ApiError bad(std::string message, std::string param) { return ApiError{400, std::move(message), "invalid_request_error", std::move(param)}; }

double number_in(const json& j, const char* key, double lo, double hi, double fallback) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  const json& v = j.at(key);
  if (!v.is_number()) throw bad(std::string("'") + key + "' must be a number, not " + v.type_name(), key);
  const double d = v.get<double>();
  if (!(d >= lo && d <= hi))
    throw bad(std::string("'") + key + "' is " + v.dump() + "; it must be between " + json(lo).dump() + " and " + json(hi).dump(), key);
  return d;
}

std::int64_t integer_in(const json& j, const char* key, std::int64_t lo, std::int64_t hi) {
  const json& v = j.at(key);
  if (!v.is_number_integer()) throw bad(std::string("'") + key + "' must be an integer, not " + v.type_name(), key);
  // nlohmann reads a non-negative integer as unsigned: compare it as one, so that a huge value
  // is not wrapped into range.
  const bool out = v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi) ||
                                                v.get<std::uint64_t>() < static_cast<std::uint64_t>(std::max<std::int64_t>(lo, 0))
                                          : v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi;
  if (out)
    throw bad(std::string("'") + key + "' is " + v.dump() + "; it must be between " + std::to_string(lo) + " and " +
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

}  // namespace

json ApiError::body() const {
  return {{"error", {{"message", message}, {"type", type}, {"param", param.empty() ? json() : json(param)}, {"code", code.empty() ? json() : json(code)}}}};
}

CompletionRequest parse_request(Endpoint endpoint, std::string_view body) {
  if (text::hf::valid_utf8(body) != body) throw bad("the request body is not valid UTF-8", "");
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    throw bad(std::string("the request body is not valid JSON (at byte ") + std::to_string(e.byte) + ")", "");
  }
  if (!j.is_object()) throw bad(std::string("the request body must be a JSON object, not ") + j.type_name(), "");
  CompletionRequest r;
  r.endpoint = endpoint;
  if (j.contains("model")) {
    if (!j.at("model").is_string()) throw bad("'model' must be a string", "model");
    r.model = j.at("model").get<std::string>();
  }
  if (endpoint == Endpoint::chat) {
    if (!j.contains("messages")) throw bad("'messages' is required", "messages");
    const json& m = j.at("messages");
    if (!m.is_array() || m.empty()) throw bad("'messages' must be a non-empty array", "messages");
    for (std::size_t i = 0; i < m.size(); ++i) {
      const std::string where = "messages[" + std::to_string(i) + "]";
      if (!m[i].is_object()) throw bad(where + " must be an object", where);
      if (!m[i].contains("role") || !m[i].at("role").is_string()) throw bad(where + ".role must be a string", where + ".role");
      if (m[i].contains("content") && !m[i].at("content").is_string() && !m[i].at("content").is_null())
        throw bad(where + ".content must be a string", where + ".content");
    }
    r.messages = m;
  } else {
    if (!j.contains("prompt")) throw bad("'prompt' is required", "prompt");
    const json& p = j.at("prompt");
    if (p.is_string()) {
      r.prompt = p.get<std::string>();
    } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
      r.prompt = p[0].get<std::string>();
    } else {
      throw bad("'prompt' must be a string (one prompt a request)", "prompt");
    }
  }
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (j.contains(key) && !j.at(key).is_null()) r.max_tokens = integer_in(j, key, 1, std::int64_t{1} << 40);
  r.temperature = number_in(j, "temperature", 0.0, 2.0, 1.0);
  r.top_p = number_in(j, "top_p", 0.0, 1.0, 1.0);
  if (r.top_p == 0.0) throw bad("'top_p' must be above 0", "top_p");
  if (j.contains("top_k") && !j.at("top_k").is_null()) r.top_k = integer_in(j, "top_k", 0, std::int64_t{1} << 31);
  if (j.contains("seed") && !j.at("seed").is_null()) {
    const json& s = j.at("seed");
    if (!s.is_number_integer()) throw bad("'seed' must be an integer", "seed");
    r.seed = s.is_number_unsigned() ? s.get<std::uint64_t>() : static_cast<std::uint64_t>(s.get<std::int64_t>());
  }
  if (j.contains("n") && !j.at("n").is_null() && integer_in(j, "n", 1, 128) != 1) throw bad("'n' must be 1: one choice a request", "n");
  if (j.contains("stop") && !j.at("stop").is_null()) {
    const json& s = j.at("stop");
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array() && s.size() <= 4) {
      for (const json& x : s) {
        if (!x.is_string()) throw bad("'stop' must be a string or up to 4 strings", "stop");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      throw bad("'stop' must be a string or up to 4 strings", "stop");
    }
    for (const std::string& x : r.stop)
      if (x.empty()) throw bad("'stop' strings must not be empty", "stop");
  }
  if (j.contains("stream") && !j.at("stream").is_null()) {
    if (!j.at("stream").is_boolean()) throw bad("'stream' must be a boolean", "stream");
    r.stream = j.at("stream").get<bool>();
  }
  if (j.contains("ignore_eos") && !j.at("ignore_eos").is_null()) {
    if (!j.at("ignore_eos").is_boolean()) throw bad("'ignore_eos' must be a boolean", "ignore_eos");
    r.ignore_eos = j.at("ignore_eos").get<bool>();
  }
  if (j.contains("stream_options") && j.at("stream_options").is_object()) {
    const json& o = j.at("stream_options");
    r.include_usage = o.contains("include_usage") && o.at("include_usage").is_boolean() && o.at("include_usage").get<bool>();
  }
  return r;
}

json Usage::json() const {
  return {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}, {"total_tokens", prompt_tokens + completion_tokens}};
}

json completion_body(const CompletionRequest& r, const std::string& id, std::int64_t created, const std::string& text,
                     const std::string& finish_reason, const Usage& usage) {
  json choice = choice_text(r, text, false, false);
  choice["index"] = 0;
  choice["finish_reason"] = finish_reason;
  choice["logprobs"] = nullptr;
  return {{"id", id}, {"object", object_of(r, false)}, {"created", created}, {"model", r.model},
          {"choices", json::array({choice})}, {"usage", usage.json()}};
}

json stream_chunk(const CompletionRequest& r, const std::string& id, std::int64_t created, const std::string& text,
                  const std::optional<std::string>& finish_reason, bool first) {
  json choice = choice_text(r, text, true, first);
  choice["index"] = 0;
  choice["finish_reason"] = finish_reason ? json(*finish_reason) : json();
  choice["logprobs"] = nullptr;
  return {{"id", id}, {"object", object_of(r, true)}, {"created", created}, {"model", r.model}, {"choices", json::array({choice})}};
}

json usage_chunk(const CompletionRequest& r, const std::string& id, std::int64_t created, const Usage& usage) {
  return {{"id", id}, {"object", object_of(r, true)}, {"created", created}, {"model", r.model}, {"choices", json::array()},
          {"usage", usage.json()}};
}

}  // namespace orion::serve
