#pragma once
// What `GET /metrics` reports, in Prometheus's text exposition format (version 0.0.4), as
// llama-server and vLLM report theirs: requests by endpoint and status, prompt and generated
// tokens, time to first token and the gaps between tokens as histograms, the prompt cache's
// hits and reused tokens, and, at the moment of the scrape, the requests generating and queued
// and the prompt cache's bytes. The HTTP side counts responses; the scheduler's
// worker counts tokens as it emits them. Safe to call from any thread.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace orion::serve {

// Cumulative buckets of seconds, with their sum and count.
class Histogram {
 public:
  static constexpr std::array<double, 14> kBounds = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25,
                                                     0.5,   0.75, 1.0,   2.5,  5.0,   10.0, 30.0};
  void observe(double seconds);
  // The family's lines: NAME_bucket{le="..."} for every bound and +Inf, NAME_sum, NAME_count.
  void write(std::string& out, const std::string& name) const;
  std::uint64_t count() const { return count_; }

 private:
  std::array<std::uint64_t, kBounds.size() + 1> counts_{};  // the last: above every bound
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

class ServeMetrics {
 public:
  // A response: `path` (a known endpoint's, else counted as "other"), its status code.
  void request(std::string_view path, int status);
  // A request's prompt, prefilled: `cached` of its tokens came from the prompt cache.
  void prompt(std::int64_t tokens, std::int64_t cached = 0);
  // What the prompt cache holds now.
  void prompt_cache(std::size_t bytes, std::size_t sessions);
  // One generated token, `since` seconds after the request was submitted (its first) or after
  // its previous token.
  void first_token(double since);
  void next_token(double since);

  // The whole exposition, with the scheduler's gauges.
  std::string text(int active, int queued) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;
  std::uint64_t prompt_tokens_ = 0, cached_tokens_ = 0, cache_hits_ = 0;
  std::size_t cache_bytes_ = 0, cache_sessions_ = 0;
  // Every generated token is in one of them: the generated count is theirs together.
  Histogram first_token_, between_tokens_;
};

}  // namespace orion::serve
