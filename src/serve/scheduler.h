#pragma once
// One model instance serving many requests: a worker thread owns the sessions (each with its
// own KV cache) and steps every active request's generation a token at a time, their tokens
// run through the model together in one pass over the weights where the engine can
// (engine::decode_batch), so that requests that arrive together stream together and the aggregate rate
// grows with them; the others wait in a bounded queue. A request
// is a Job: its text comes out as events the HTTP side waits on, and cancelling it (a client
// that went away) ends its generation at the next token and frees its session.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/decoder.h"
#include "engine/model_text.h"
#include "serve/metrics.h"
#include "serve/openai_wire.h"
#include "serve/tool_calls.h"
#include "text/constrain/token_constraint.h"
#include "text/constrain/vocab_trie.h"

namespace orion::serve {

struct SchedulerOptions {
  int max_active = 8;     // requests generating at once (each holds a session)
  int max_queue = 64;     // requests waiting beyond them; more: 503
  std::int64_t max_prompt_tokens = 0;  // 0: the model's context less one
  std::int64_t max_total_tokens = 0;   // prompt + generated a request may reach; 0: the context
  std::int64_t max_tokens_limit = 0;   // tokens a request may generate (its max_tokens, or the default); 0: no limit
  // The prompt cache: the KV bytes idle sessions may keep of earlier requests, for later
  // prompts that start the same way (a shared system prompt, a chat's next turn); 0: none.
  std::size_t prompt_cache_bytes = std::size_t{1} << 30;
};

// What a request produced since the last look: text, and at the end why it ended.
struct JobEvent {
  std::string text;
  bool done = false;
  std::string finish_reason;  // "stop" or "length" when done
  std::string error;          // when done by a failure (an internal error: 500)
  Usage usage;
  std::vector<LogprobEntry> logprobs;  // of the tokens since the last look, when asked
};

class Job {
 public:
  // Waits up to `timeout` for new text or the end; nullopt when nothing came.
  std::optional<JobEvent> next(std::chrono::milliseconds timeout);
  void cancel();
  bool cancelled() const;
  const std::string& id() const { return id_; }
  std::int64_t prompt_tokens() const { return prompt_tokens_; }
  // Tokens generated so far (read from any thread while the scheduler works).
  std::int64_t generated() const { return generated_.load(std::memory_order_relaxed); }
  // What reads the answer's reasoning, content and tool calls as its text arrives.
  AnswerSplitter splitter() const { return AnswerSplitter(split_tools_, split_thinks_, tail_, max_calls_); }

 private:
  friend class Scheduler;
  void push(std::string text, bool done, std::string finish_reason = "", std::string error = "",
            std::vector<LogprobEntry> logprobs = {});

  std::string id_;
  CompletionRequest request_;
  std::vector<std::int32_t> ids_;  // the prompt, then what is generated
  std::int64_t prompt_tokens_ = 0, max_tokens_ = 0, cached_tokens_ = 0;
  // Constrained decoding (response_format, a forced tool call): nullptr for free text.
  std::unique_ptr<text::TokenConstraint> constraint_;
  // The answer's syntax: tool calls read (none: no tools), a <think> block, the forced start.
  ToolSyntax split_tools_ = ToolSyntax::none;
  bool split_thinks_ = false;
  std::string tail_;
  int max_calls_ = -1;  // parallel_tool_calls false: 1
  std::atomic<std::int64_t> generated_ = 0;
  // When it was submitted, and when its last token came (the worker's only): the metrics' times.
  std::chrono::steady_clock::time_point submitted_, last_token_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  JobEvent pending_;
  bool has_pending_ = false, finished_ = false;
  bool cancelled_ = false;
};

class Scheduler {
 public:
  using SessionFactory = std::function<std::unique_ptr<engine::Decoder>()>;
  // The folder behind `text` (its tokenizer, chat template and stop ids) must outlive the
  // scheduler.
  Scheduler(engine::ModelText text, SessionFactory sessions, SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Tokenizes the request (the chat template for messages) and queues it. Throws ApiError:
  // 400 for a prompt past the limits or a conversation the template refuses, 503 when the
  // queue is full.
  std::shared_ptr<Job> submit(const CompletionRequest& request);

  std::int64_t context() const { return context_; }
  int active() const;
  int queued() const;
  // What GET /metrics reports: the worker counts tokens here, the HTTP side responses.
  ServeMetrics& metrics() { return metrics_; }

 private:
  struct Active;
  // The request's prompt ids, answer syntax and constraint (chat: its template's variables,
  // tools and forced start). Throws ApiError (400).
  void prepare(const CompletionRequest& r, Job& job);
  // An idle session and what its cache holds.
  struct Idle {
    std::unique_ptr<engine::Decoder> session;
    std::vector<std::int32_t> tokens;
    std::uint64_t returned = 0;  // when it was given back: the least recent goes first
  };
  // The idle session whose cache starts as `ids` does for longest, rewound to that (at most all
  // of `ids` but the last), and how many of its tokens it keeps; else the least recently used
  // one, reset, and 0; else nullptr. Under mu_.
  std::pair<std::unique_ptr<engine::Decoder>, std::int64_t> take_session(const std::vector<std::int32_t>& ids);
  // A finished request's session, keeping the first `tokens` it ran; sessions are dropped,
  // least recently used first, while the cache passes its budget. Under mu_.
  void give_back(std::unique_ptr<engine::Decoder> session, std::vector<std::int32_t> tokens);
  // The vocabulary's trie, built at the first constrained request.
  std::shared_ptr<const text::constrain::VocabTrie> vocab_trie();
  // Finishes and removes the queued jobs whose clients went away, so that they hold no place in
  // the queue (a client that disconnects and asks again must not fill it). Under mu_.
  void drop_cancelled();
  // decode_batch's logits, their storage kept from step to step (the worker's only).
  std::vector<std::vector<float>> batch_logits_;
  void run();
  void start(std::shared_ptr<Job> job, std::vector<std::unique_ptr<Active>>& active);
  // Prefills the request's prompt, a chunk of it when `streams_waiting` (others are generating),
  // and starts its generation when the prompt is whole.
  void prefill_some(Active& a, bool streams_waiting);
  // The tokens a chunk takes: about half a decode step's time at the measured prefill rate.
  std::int64_t chunk_tokens() const;
  double step_seconds_ = 0, prefill_rate_ = 0;  // moving averages (the worker's only)
  // Runs each running request's token through its session: together when the engine can
  // (engine::can_decode_batch), else one by one; each generation gets its logits.
  void decode(const std::vector<Active*>& running, const std::vector<std::int32_t>& tokens);

  engine::ModelText text_;
  ToolSyntax tool_syntax_ = ToolSyntax::none;
  bool thinks_ = false;
  std::mutex vocab_mu_;
  std::shared_ptr<const text::constrain::VocabTrie> vocab_;
  ServeMetrics metrics_;
  SessionFactory sessions_;
  SchedulerOptions options_;
  std::int64_t context_ = 0;
  std::uint64_t next_id_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<Idle> idle_;  // sessions kept for the next requests, with their caches
  std::uint64_t returns_ = 0;
  int active_count_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace orion::serve
