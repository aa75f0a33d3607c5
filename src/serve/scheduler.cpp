#include "serve/scheduler.h"

#include <algorithm>
#include <random>
#include <tuple>

#include "core/error.h"
#include "core/stopwatch.h"
#include "engine/generation.h"
#include "serve/stop_strings.h"
#include "text/constrain/json_constraint.h"
#include "text/sampler.h"

namespace orion::serve {

struct Scheduler::Active {
  std::shared_ptr<Job> job;
  std::unique_ptr<engine::Decoder> session;
  std::unique_ptr<text::Sampler> sampler;
  // Made when the prompt is prefilled; until then the request is prefilling (prefilled tokens
  // of its prompt in the session).
  std::unique_ptr<engine::Generation> generation;
  std::int64_t prefilled = 0;
  bool ended = false;  // ended before generating (cancelled or failed while prefilling)
  StopStrings stops;
  explicit Active(std::vector<std::string> stop) : stops(std::move(stop)) {}
  bool finished() const { return ended || (generation && generation->done()); }
};

std::optional<JobEvent> Job::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return has_pending_; })) return std::nullopt;
  JobEvent e = std::move(pending_);
  pending_ = {};
  has_pending_ = false;
  return e;
}

void Job::cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
}

bool Job::cancelled() const {
  std::lock_guard lock(mu_);
  return cancelled_;
}

void Job::push(std::string text, bool done, std::string finish_reason, std::string error, std::vector<LogprobEntry> logprobs) {
  std::lock_guard lock(mu_);
  if (finished_) return;
  pending_.text += text;
  pending_.logprobs.insert(pending_.logprobs.end(), std::make_move_iterator(logprobs.begin()), std::make_move_iterator(logprobs.end()));
  if (done) {
    pending_.done = true;
    pending_.finish_reason = std::move(finish_reason);
    pending_.error = std::move(error);
    pending_.usage = {prompt_tokens_, generated_.load(), cached_tokens_};
    finished_ = true;
  }
  has_pending_ = has_pending_ || !pending_.text.empty() || !pending_.logprobs.empty() || done;
  cv_.notify_all();
}

Scheduler::Scheduler(engine::ModelText text, SessionFactory sessions, SchedulerOptions options)
    : text_(text), sessions_(std::move(sessions)), options_(options) {
  const std::string source = text_.chat_template_source();
  tool_syntax_ = tool_syntax_of(source);
  thinks_ = template_thinks(source);
  if (!sessions_) throw Error("serve: the engine cannot make sessions for concurrent requests (use the fast cpu engine)");
  idle_.push_back({sessions_(), {}, 0});
  context_ = idle_.back().session->context();
  // A prompt's worth of warm-up: the first batched prefill of a process sets up the BLAS and its
  // threads, which would otherwise stall the streams running when the first long prompt comes.
  if (context_ > 16) {
    idle_.back().session->extend(std::vector<std::int32_t>(16, 0));
    idle_.back().session->reset();
  }
  worker_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

int Scheduler::active() const {
  std::lock_guard lock(mu_);
  return active_count_;
}

int Scheduler::queued() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(queue_.size());
}

void Scheduler::drop_cancelled() {
  std::erase_if(queue_, [](const std::shared_ptr<Job>& job) {
    if (!job->cancelled()) return false;
    job->push("", true, "stop");
    return true;
  });
}

std::shared_ptr<Job> Scheduler::submit(const CompletionRequest& r) {
  auto job = std::make_shared<Job>();
  job->request_ = r;
  prepare(r, *job);
  job->prompt_tokens_ = static_cast<std::int64_t>(job->ids_.size());
  const std::int64_t max_prompt = options_.max_prompt_tokens > 0 ? options_.max_prompt_tokens : context_ - 1;
  if (job->prompt_tokens_ > max_prompt)
    throw ApiError{400, "the prompt is " + std::to_string(job->prompt_tokens_) + " tokens; at most " + std::to_string(max_prompt) +
                            " are taken (the model's context is " + std::to_string(context_) + ")",
                   "invalid_request_error", r.endpoint == Endpoint::chat ? "messages" : "prompt"};
  const std::int64_t total = options_.max_total_tokens > 0 ? std::min(options_.max_total_tokens, context_) : context_;
  const std::int64_t room = std::max<std::int64_t>(total - job->prompt_tokens_, 0);
  if (r.max_tokens && *r.max_tokens > room)
    throw ApiError{400, "max_tokens is " + std::to_string(*r.max_tokens) + "; the prompt's " + std::to_string(job->prompt_tokens_) +
                            " tokens leave room for " + std::to_string(room) + " of the " + std::to_string(total) + " a request may reach",
                   "invalid_request_error", "max_tokens"};
  if (r.max_tokens && options_.max_tokens_limit > 0 && *r.max_tokens > options_.max_tokens_limit)
    throw ApiError{400, "max_tokens is " + std::to_string(*r.max_tokens) + "; this server generates at most " +
                            std::to_string(options_.max_tokens_limit) + " tokens a request",
                   "invalid_request_error", "max_tokens"};
  job->max_tokens_ = r.max_tokens.value_or(options_.max_tokens_limit > 0 ? std::min(room, options_.max_tokens_limit) : room);
  job->submitted_ = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    drop_cancelled();
    if (static_cast<int>(queue_.size()) >= options_.max_queue)
      throw ApiError{503, "the server is busy: " + std::to_string(queue_.size()) + " requests are waiting; try again shortly",
                     "server_busy", ""};
    job->id_ = std::to_string(++next_id_);
    queue_.push_back(job);
  }
  cv_.notify_all();
  return job;
}

std::shared_ptr<const text::constrain::VocabTrie> Scheduler::vocab_trie() {
  std::lock_guard lock(vocab_mu_);
  if (!vocab_) vocab_ = std::make_shared<const text::constrain::VocabTrie>(text_.tokenizer());
  return vocab_;
}

void Scheduler::prepare(const CompletionRequest& r, Job& job) {
  using TC = CompletionRequest::ToolChoice;
  std::shared_ptr<const text::constrain::Grammar> grammar = r.grammar;
  if (r.endpoint == Endpoint::completion) {
    try {
      job.ids_ = text_.text_ids(r.prompt);
    } catch (const Error& e) {
      throw ApiError{400, std::string("the prompt cannot be made: ") + e.what(), "invalid_request_error", "prompt"};
    }
  } else {
    const bool forced = r.tool_choice == TC::required || r.tool_choice == TC::named;
    if (forced && r.grammar)
      throw ApiError{400, "a forced tool call and a response_format cannot both shape one answer", "invalid_request_error", "response_format"};
    nlohmann::ordered_json vars = r.template_variables;
    const bool tools = r.tool_choice != TC::none && !r.tools.empty();
    if (tools) {
      if (tool_syntax_ == ToolSyntax::none)
        throw ApiError{400, "this model's chat template shows no tool-call syntax Orion reads (Qwen's <tool_call>, Llama 3's JSON, Mistral's [TOOL_CALLS])",
                       "invalid_request_error", "tools"};
      vars["tools"] = r.tools;
    }
    if (forced) {
      try {
        ForcedCall call = forced_tool_call(tool_syntax_, r.tools, r.tool_choice == TC::named ? r.tool_name : "");
        job.tail_ = std::move(call.tail);
        grammar = std::make_shared<const text::constrain::Grammar>(std::move(call.grammar));
      } catch (const Error& e) {
        throw ApiError{400, e.what(), "invalid_request_error", r.tool_choice == TC::named ? "tool_choice" : "tools"};
      }
    }
    // A constrained answer starts at once: no reasoning before it.
    if (grammar && thinks_) {
      if (vars.contains("enable_thinking") && vars.at("enable_thinking") == true)
        throw ApiError{400, "enable_thinking cannot be true with a response_format or a forced tool call: the answer is constrained from its first token",
                       "invalid_request_error", "enable_thinking"};
      vars["enable_thinking"] = false;
    }
    job.split_tools_ = tools ? tool_syntax_ : ToolSyntax::none;
    job.split_thinks_ = thinks_ && !(vars.contains("enable_thinking") && vars.at("enable_thinking") == false);
    // An assistant turn of tool calls only comes with content null, which templates index as text.
    nlohmann::json messages = r.messages;
    for (nlohmann::json& m : messages)
      if (m.value("role", "") == "assistant" && (!m.contains("content") || m.at("content").is_null())) m["content"] = "";
    try {
      job.ids_ = text_.chat_ids(messages, vars, job.tail_);
    } catch (const Error& e) {
      throw ApiError{400, std::string("the prompt cannot be made: ") + e.what(), "invalid_request_error", "messages"};
    }
  }
  for (const auto& [id, bias] : r.logit_bias)
    if (id >= text_.tokenizer().vocab_size())
      throw ApiError{400, "logit_bias names token " + std::to_string(id) + ", beyond the vocabulary of " +
                              std::to_string(text_.tokenizer().vocab_size()),
                     "invalid_request_error", "logit_bias"};
  job.max_calls_ = r.parallel_tool_calls ? -1 : 1;
  if (grammar) {
    std::vector<std::int32_t> ends = r.ignore_eos ? std::vector<std::int32_t>{} : text_.stop_ids();
    job.constraint_ = std::make_unique<text::constrain::JsonConstraint>(grammar, vocab_trie(), std::move(ends));
  }
}

std::pair<std::unique_ptr<engine::Decoder>, std::int64_t> Scheduler::take_session(const std::vector<std::int32_t>& ids) {
  if (idle_.empty()) return {nullptr, 0};
  std::size_t best = 0, oldest = 0;
  std::int64_t best_len = 0;
  for (std::size_t i = 0; i < idle_.size(); ++i) {
    const std::vector<std::int32_t>& t = idle_[i].tokens;
    const auto n = static_cast<std::int64_t>(std::mismatch(t.begin(), t.end(), ids.begin(), ids.end()).first - t.begin());
    if (n > best_len) best = i, best_len = n;
    // Without a match: a session that holds nothing, else the least recently used.
    const auto key = [&](std::size_t k) { return std::pair(!idle_[k].tokens.empty(), idle_[k].returned); };
    if (key(i) < key(oldest)) oldest = i;
  }
  // At least the prompt's last token runs: its logits start the answer.
  const std::int64_t reuse = std::min<std::int64_t>(best_len, static_cast<std::int64_t>(ids.size()) - 1);
  std::size_t pick = oldest;
  std::int64_t kept = 0;
  if (reuse > 0 && idle_[best].session->rewind(reuse)) pick = best, kept = reuse;
  std::unique_ptr<engine::Decoder> s = std::move(idle_[pick].session);
  idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(pick));
  return {std::move(s), kept};
}

void Scheduler::give_back(std::unique_ptr<engine::Decoder> session, std::vector<std::int32_t> tokens) {
  const std::size_t per = session->cache_bytes_per_position();
  if (options_.prompt_cache_bytes == 0 || per == 0) tokens.clear();
  idle_.push_back({std::move(session), std::move(tokens), ++returns_});
  // Over the budget, the least recently used caches go, and their sessions with them (a session
  // is made again when one is needed): the memory their caches touched is freed.
  const auto bytes = [&] {
    std::size_t b = 0;
    for (const Idle& i : idle_) b += i.tokens.size() * i.session->cache_bytes_per_position();
    return b;
  };
  while (bytes() > options_.prompt_cache_bytes) {
    std::size_t oldest = idle_.size();
    for (std::size_t i = 0; i < idle_.size(); ++i)
      if (!idle_[i].tokens.empty() && (oldest == idle_.size() || idle_[i].returned < idle_[oldest].returned)) oldest = i;
    idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(oldest));
  }
  std::size_t kept = 0;
  for (const Idle& i : idle_) kept += i.tokens.empty() ? 0 : 1;
  metrics_.prompt_cache(bytes(), kept);
}

void Scheduler::start(std::shared_ptr<Job> job, std::vector<std::unique_ptr<Active>>& active) {
  auto a = std::make_unique<Active>(job->request_.stop);
  a->job = job;
  std::int64_t cached = 0;
  {
    std::lock_guard lock(mu_);
    std::tie(a->session, cached) = take_session(job->ids_);
  }
  if (!a->session) a->session = sessions_();
  if (cached == 0) a->session->reset();
  a->prefilled = cached;
  job->cached_tokens_ = cached;
  metrics_.prompt(job->prompt_tokens_, cached);
  active.push_back(std::move(a));
}

std::int64_t Scheduler::chunk_tokens() const {
  // About half a decode step's time of prefill, so that the streams' gaps stay near their pace;
  // at least a batched prefill's worth (16 rows: matrix products), at most 4096.
  if (prefill_rate_ <= 0 || step_seconds_ <= 0) return 16;
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(0.5 * step_seconds_ * prefill_rate_), 16, 4096);
}

void Scheduler::prefill_some(Active& a, bool streams_waiting) {
  Job& job = *a.job;
  if (job.cancelled()) {
    job.push("", true, "stop");
    a.ended = true;
    return;
  }
  // Between steps, the prompt's last token goes alone: its step runs the head, as a decode does.
  const std::int64_t left = job.prompt_tokens_ - a.prefilled;
  const std::int64_t n = !streams_waiting ? left : left == 1 ? 1 : std::min(left - 1, chunk_tokens());
  const std::span<const std::int32_t> part = std::span(job.ids_).subspan(static_cast<std::size_t>(a.prefilled), static_cast<std::size_t>(n));
  Stopwatch sw;
  if (n < left) {
    a.session->extend(part);
    a.prefilled += n;
    const double rate = static_cast<double>(n) / std::max(sw.seconds(), 1e-6);
    prefill_rate_ = prefill_rate_ > 0 ? 0.7 * prefill_rate_ + 0.3 * rate : rate;
    return;
  }
  std::vector<float> logits = a.session->prefill(part);
  a.prefilled += n;
  const CompletionRequest& r = job.request_;
  text::SamplerOptions so;
  so.temperature = static_cast<float>(r.temperature);
  so.top_p = static_cast<float>(r.top_p);
  so.top_k = static_cast<int>(r.top_k);
  so.seed = r.seed.value_or(std::random_device{}());
  so.frequency_penalty = static_cast<float>(r.frequency_penalty);
  so.presence_penalty = static_cast<float>(r.presence_penalty);
  so.repetition_penalty = static_cast<float>(r.repetition_penalty);
  so.logit_bias = r.logit_bias;
  a.sampler = std::make_unique<text::Sampler>(so);
  a.generation = std::make_unique<engine::Generation>(
      *a.session, *a.sampler, text_.tokenizer(), std::move(logits), job.ids_,
      engine::GenerationLimits{static_cast<int>(job.max_tokens_), r.ignore_eos ? std::vector<std::int32_t>{} : text_.stop_ids(),
                               job.constraint_.get(), r.logprobs});
}

void Scheduler::decode(const std::vector<Active*>& running, const std::vector<std::int32_t>& tokens) {
  if (running.empty()) return;
  std::vector<engine::Decoder*> sessions;
  for (Active* a : running) sessions.push_back(a->session.get());
  Stopwatch sw;
  // The step's time, for the prefill chunks that go between steps (chunk_tokens).
  struct Timed {
    Stopwatch& sw;
    double& ema;
    ~Timed() { ema = ema > 0 ? 0.8 * ema + 0.2 * sw.seconds() : sw.seconds(); }
  } timed{sw, step_seconds_};
  if (engine::can_decode_batch(sessions)) {
    try {
      engine::decode_batch(sessions, tokens, batch_logits_);
      const double each = sw.seconds();
      for (std::size_t i = 0; i < running.size(); ++i) running[i]->generation->set_logits(batch_logits_[i], each);
    } catch (const std::exception& e) {
      for (Active* a : running) {
        a->job->push("", true, "", e.what());
        a->generation->stop("failed");
      }
    }
    return;
  }
  for (std::size_t i = 0; i < running.size(); ++i) {
    Active& a = *running[i];
    try {
      Stopwatch one;
      std::vector<float> logits = a.session->decode(tokens[i]);
      a.generation->set_logits(logits, one.seconds());
    } catch (const std::exception& e) {
      a.job->push("", true, "", e.what());
      a.generation->stop("failed");
    }
  }
}

void Scheduler::run() {
  std::vector<std::unique_ptr<Active>> active;
  for (;;) {
    std::vector<std::shared_ptr<Job>> starting;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || !active.empty(); });
      if (stopping_) break;
      drop_cancelled();
      while (!queue_.empty() && static_cast<int>(active.size() + starting.size()) < options_.max_active) {
        starting.push_back(queue_.front());
        queue_.pop_front();
      }
      active_count_ = static_cast<int>(active.size() + starting.size());
    }
    for (auto& job : starting) {
      if (job->cancelled()) {
        job->push("", true, "stop");
        continue;
      }
      try {
        start(job, active);
      } catch (const std::exception& e) {
        job->push("", true, "", e.what());
      }
    }
    // A prompt's prefill: whole when nothing streams, else a chunk between decode steps, the
    // oldest prompt first, so that running streams keep their pace.
    bool streaming = false;
    for (const auto& a : active) streaming = streaming || (a->generation && !a->generation->done());
    for (auto& a : active) {
      if (a->generation || a->ended) continue;
      try {
        prefill_some(*a, streaming);
      } catch (const std::exception& e) {
        a->job->push("", true, "", e.what());
        a->ended = true;
      }
      if (streaming) break;
    }
    // One token for each active request: sampled and emitted for each, then run through the
    // sessions together in one pass over the weights where the engine can (the fast engine's
    // f32 sessions, engine::decode_batch), else one after another.
    std::vector<std::string> released(active.size());
    std::vector<std::vector<LogprobEntry>> logprobs(active.size());
    std::vector<Active*> running;
    std::vector<std::int32_t> tokens;
    for (std::size_t i = 0; i < active.size(); ++i) {
      Active& a = *active[i];
      if (!a.generation) continue;  // still prefilling
      try {
        if (a.job->cancelled()) {
          a.generation->stop("cancelled");
          continue;
        }
        const std::optional<std::int32_t> t = a.generation->next_token([&](std::string_view piece) { released[i] += a.stops.push(piece); });
        for (engine::TokenLogprob& lp : a.generation->take_logprobs()) {
          LogprobEntry e{text_.tokenizer().piece(lp.id), lp.logprob, {}};
          for (const auto& [id, v] : lp.top) e.top.emplace_back(text_.tokenizer().piece(id), v);
          logprobs[i].push_back(std::move(e));
        }
        const std::int64_t before = a.job->generated_, now_generated = a.generation->outcome().generated;
        if (now_generated > before) {
          const auto now = std::chrono::steady_clock::now();
          if (before == 0) metrics_.first_token(std::chrono::duration<double>(now - a.job->submitted_).count());
          else metrics_.next_token(std::chrono::duration<double>(now - a.job->last_token_).count());
          a.job->last_token_ = now;
        }
        a.job->generated_ = now_generated;
        if (t && !a.stops.stopped()) {
          running.push_back(&a);
          tokens.push_back(*t);
        }
      } catch (const std::exception& e) {
        a.job->push(released[i], true, "", e.what());
        a.generation->stop("failed");
      }
    }
    decode(running, tokens);
    for (std::size_t i = 0; i < active.size(); ++i) {
      Active& a = *active[i];
      Job& job = *a.job;
      if (!a.generation) continue;
      if (a.stops.stopped()) {
        job.push(released[i], true, "stop", "", std::move(logprobs[i]));
        a.generation->stop("stop string");
      } else if (a.generation->done()) {
        released[i] += a.stops.flush();
        const engine::GenerationOutcome& o = a.generation->outcome();
        job.push(released[i], true, o.stopped_at_eos || job.cancelled() ? "stop" : "length", "", std::move(logprobs[i]));
      } else if (!released[i].empty() || !logprobs[i].empty()) {
        job.push(released[i], false, "", "", std::move(logprobs[i]));
      }
    }
    // Finished requests give their sessions back.
    std::lock_guard lock(mu_);
    for (auto& a : active)
      if (a->finished() && a->session) {
        const auto held = std::min<std::size_t>(static_cast<std::size_t>(std::max<std::int64_t>(a->session->position(), 0)), a->job->ids_.size());
        give_back(std::move(a->session), std::vector<std::int32_t>(a->job->ids_.begin(), a->job->ids_.begin() + static_cast<std::ptrdiff_t>(held)));
      }
    std::erase_if(active, [](const std::unique_ptr<Active>& a) { return a->finished(); });
    active_count_ = static_cast<int>(active.size());
  }
}

}  // namespace orion::serve
