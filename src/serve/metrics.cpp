#include "serve/metrics.h"

#include <cstdio>

namespace orion::serve {

namespace {

// A number as Prometheus reads it (ten significant digits: sums of seconds, bucket bounds).
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

void family(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// The label a response is counted under: the endpoints by name, anything else as one label
// (an unknown path must not grow the exposition without bound).
std::string_view endpoint_label(std::string_view path) {
  for (std::string_view known : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics", "/"})
    if (path == known) return known;
  return "other";
}

}  // namespace

void Histogram::observe(double seconds) {
  std::size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

void Histogram::write(std::string& out, const std::string& name) const {
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + number(kBounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + number(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

void ServeMetrics::request(std::string_view path, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{std::string(endpoint_label(path)), status}];
}

void ServeMetrics::prompt(std::int64_t tokens, std::int64_t cached) {
  std::lock_guard lock(mu_);
  prompt_tokens_ += static_cast<std::uint64_t>(tokens);
  cached_tokens_ += static_cast<std::uint64_t>(cached);
  cache_hits_ += cached > 0 ? 1 : 0;
}

void ServeMetrics::prompt_cache(std::size_t bytes, std::size_t sessions) {
  std::lock_guard lock(mu_);
  cache_bytes_ = bytes;
  cache_sessions_ = sessions;
}

void ServeMetrics::first_token(double since) {
  std::lock_guard lock(mu_);
  first_token_.observe(since);
}

void ServeMetrics::next_token(double since) {
  std::lock_guard lock(mu_);
  between_tokens_.observe(since);
}

std::string ServeMetrics::text(int active, int queued) const {
  std::lock_guard lock(mu_);
  std::string out;
  family(out, "orion_requests_total", "counter", "HTTP responses by endpoint and status code.");
  for (const auto& [key, n] : requests_)
    out += "orion_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(n) + "\n";
  family(out, "orion_prompt_tokens_total", "counter", "Prompt tokens of the requests (cached ones included).");
  out += "orion_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
  family(out, "orion_prompt_cache_hits_total", "counter", "Prompts that started from a cached prefix.");
  out += "orion_prompt_cache_hits_total " + std::to_string(cache_hits_) + "\n";
  family(out, "orion_prompt_cache_tokens_total", "counter", "Prompt tokens taken from the prompt cache instead of prefilled.");
  out += "orion_prompt_cache_tokens_total " + std::to_string(cached_tokens_) + "\n";
  family(out, "orion_prompt_cache_bytes", "gauge", "Bytes of KV cache the idle sessions keep for later prompts.");
  out += "orion_prompt_cache_bytes " + std::to_string(cache_bytes_) + "\n";
  family(out, "orion_prompt_cache_sessions", "gauge", "Idle sessions whose cache is kept.");
  out += "orion_prompt_cache_sessions " + std::to_string(cache_sessions_) + "\n";
  family(out, "orion_generation_tokens_total", "counter", "Tokens generated.");
  out += "orion_generation_tokens_total " + std::to_string(first_token_.count() + between_tokens_.count()) + "\n";
  family(out, "orion_time_to_first_token_seconds", "histogram", "From a request's arrival to its first generated token.");
  first_token_.write(out, "orion_time_to_first_token_seconds");
  family(out, "orion_inter_token_seconds", "histogram", "Between a request's consecutive generated tokens.");
  between_tokens_.write(out, "orion_inter_token_seconds");
  family(out, "orion_requests_running", "gauge", "Requests generating now.");
  out += "orion_requests_running " + std::to_string(active) + "\n";
  family(out, "orion_requests_waiting", "gauge", "Requests queued behind them.");
  out += "orion_requests_waiting " + std::to_string(queued) + "\n";
  return out;
}

}  // namespace orion::serve
