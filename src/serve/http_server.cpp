#include "serve/http_server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "core/stopwatch.h"
#include "serve/chat_page.h"
#include "serve/response_store.h"
#include "serve/responses_api.h"

namespace orion::serve {

using nlohmann::json;

namespace {

std::int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.body().dump(), "application/json");
}

}  // namespace

bool equal_in_constant_time(std::string_view given, std::string_view wanted) {
  unsigned char diff = given.size() == wanted.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ (wanted.empty() ? 0 : wanted[i % wanted.size()]));
  return diff == 0;
}

struct HttpServer::Impl {
  Scheduler& scheduler;
  ServerOptions options;
  httplib::Server server;
  int port = 0;
  std::mutex log_mu;

  Impl(Scheduler& s, ServerOptions o) : scheduler(s), options(std::move(o)) {}

  // One line per request on stderr: id, tokens, time to first token, rate, status.
  void log(const std::string& id, const char* what, std::int64_t prompt, std::int64_t generated, double ttft_ms,
           double seconds, const std::string& status, const std::string& note = "") {
    if (options.quiet) return;
    const double rate = generated > 1 && seconds * 1e3 > ttft_ms ? static_cast<double>(generated - 1) / (seconds - ttft_ms * 1e-3) : 0.0;
    std::lock_guard lock(log_mu);
    std::fprintf(stderr, "serve: #%s %s: prompt %lld tokens, generated %lld, first token %.0f ms, %.1f tok/s, %s%s%s\n", id.c_str(), what,
                 static_cast<long long>(prompt), static_cast<long long>(generated), ttft_ms, rate, status.c_str(),
                 note.empty() ? "" : "; ", printable(note).c_str());
  }

  void complete(Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
    const char* what = endpoint == Endpoint::chat ? "chat" : "completion";
    CompletionRequest r;
    std::shared_ptr<Job> job;
    try {
      r = parse_request(endpoint, req.body);
      if (r.model.empty()) r.model = options.model_name;
      job = scheduler.submit(r);
    } catch (const ApiError& e) {
      send_error(res, e);
      log("-", what, 0, 0, 0, 0, std::to_string(e.status) + " " + e.message);
      return;
    }
    const std::string id = (endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-") + job->id();
    const std::int64_t created = unix_time();
    auto clock = std::make_shared<Stopwatch>();
    if (!r.stream) {
      std::string text;
      double ttft = -1;
      AnswerSplitter splitter = job->splitter();
      std::vector<LogprobEntry> logprobs;
      for (;;) {
        const std::optional<JobEvent> e = job->next(std::chrono::milliseconds(200));
        if (!e) continue;
        if (ttft < 0 && !e->text.empty()) ttft = clock->ms();
        text += e->text;
        logprobs.insert(logprobs.end(), e->logprobs.begin(), e->logprobs.end());
        if (!e->done) continue;
        if (!e->error.empty()) {
          send_error(res, ApiError{500, "generation failed: " + e->error, "server_error", ""});
          log(job->id(), what, e->usage.prompt_tokens, e->usage.completion_tokens, ttft, clock->seconds(), "500 " + e->error, r.log_note);
          return;
        }
        ChatAnswer answer;
        answer.logprobs = std::move(logprobs);
        if (endpoint == Endpoint::chat) {
          AnswerSplitter::Delta d = splitter.take(text, true);
          answer.reasoning = std::move(d.reasoning);
          answer.content = std::move(d.content);
          answer.calls = std::move(d.calls);
        } else {
          answer.content = text;
        }
        const std::string finish = answer.calls.empty() || e->finish_reason != "stop" ? e->finish_reason : "tool_calls";
        res.set_content(completion_body(r, id, created, answer, finish, e->usage).dump(), "application/json");
        log(job->id(), what, e->usage.prompt_tokens, e->usage.completion_tokens, std::max(ttft, 0.0), clock->seconds(),
            "200 " + e->finish_reason, r.log_note);
        return;
      }
    }
    // Server-sent events: a chunk per piece of text, the last with finish_reason, then usage
    // when asked, then [DONE]. A write that fails, or a peer that is gone, cancels the job.
    auto first = std::make_shared<bool>(true);
    auto ttft = std::make_shared<double>(-1.0);
    auto usage = std::make_shared<Usage>();
    auto status = std::make_shared<std::string>("disconnected");
    auto splitter = std::make_shared<AnswerSplitter>(job->splitter());
    auto offset = std::make_shared<std::size_t>(0);  // a completion's text so far: logprobs' text_offset
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [r, job, id, created, first, ttft, usage, status, clock, splitter, offset](std::size_t, httplib::DataSink& sink) {
          const auto send = [&](const json& j) {
            const std::string line = "data: " + j.dump() + "\n\n";
            return sink.write(line.data(), line.size());
          };
          std::optional<JobEvent> e;
          while (!(e = job->next(std::chrono::milliseconds(100)))) {
            if (!sink.is_writable()) {
              job->cancel();
              return false;
            }
          }
          // The role chunk goes with the first event, not before: a client that has gone away is
          // only seen when a write fails, and a request still queued writes nothing, so one that
          // hung up after an early role chunk and asked again could fill the queue with requests
          // nobody reads.
          if (*first) {
            *first = false;
            if (r.endpoint == Endpoint::chat && !send(stream_chunk(r, id, created, "", std::nullopt, true))) {
              job->cancel();
              return false;
            }
          }
          if (!e->text.empty() && *ttft < 0) *ttft = clock->ms();
          // A chat's text goes through the splitter (reasoning, content, whole tool calls); a
          // completion's as it comes.
          const auto send_text = [&](const std::string& text, bool end) {
            const std::vector<LogprobEntry>& lps = e->logprobs;
            if (r.endpoint != Endpoint::chat) {
              const std::size_t at = *offset;
              *offset += text.size();
              return (text.empty() && lps.empty()) || send(stream_chunk(r, id, created, text, std::nullopt, false, lps, at));
            }
            const int before = splitter->calls();
            const AnswerSplitter::Delta d = splitter->take(text, end);
            return (d.empty() && lps.empty()) || send(chat_delta_chunk(r, id, created, d, before, lps));
          };
          if (!send_text(e->text, e->done)) {
            job->cancel();
            return false;
          }
          if (!e->done) return true;
          *usage = e->usage;
          if (!e->error.empty()) {
            *status = "500 " + e->error;
            send(ApiError{500, "generation failed: " + e->error, "server_error", ""}.body());
          } else {
            *status = "200 " + e->finish_reason;
            const std::string finish = splitter->calls() == 0 || e->finish_reason != "stop" ? e->finish_reason : "tool_calls";
            send(stream_chunk(r, id, created, "", finish));
            if (r.include_usage) send(usage_chunk(r, id, created, e->usage));
          }
          const std::string done = "data: [DONE]\n\n";
          sink.write(done.data(), done.size());
          sink.done();
          return true;
        },
        [this, job, ttft, usage, status, clock, what, note = r.log_note](bool success) {
          if (!success) job->cancel();
          log(job->id(), what, usage->prompt_tokens ? usage->prompt_tokens : job->prompt_tokens(), usage->completion_tokens,
              std::max(*ttft, 0.0), clock->seconds(), success ? *status : "disconnected (cancelled)", note);
        });
  }

  ResponseStore store;

  // POST /v1/responses: the chat machinery behind the Responses API's objects and events.
  void respond(const httplib::Request& req, httplib::Response& res) {
    ResponsesRequest q;
    std::shared_ptr<Job> job;
    try {
      q = parse_responses_request(req.body, [this](const std::string& id) { return store.get(id); });
      if (q.chat.model.empty()) q.chat.model = options.model_name;
      job = scheduler.submit(q.chat);
    } catch (const ApiError& e) {
      send_error(res, e);
      log("-", "response", 0, 0, 0, 0, std::to_string(e.status) + " " + e.message);
      return;
    }
    const std::int64_t created = unix_time();
    const std::string id = std::to_string(created) + "x" + job->id();
    auto clock = std::make_shared<Stopwatch>();
    const auto status_of = [](const JobEvent& e) { return e.finish_reason == "length" ? "incomplete" : "completed"; };
    if (!q.chat.stream) {
      AnswerSplitter splitter = job->splitter();
      std::string text;
      double ttft = -1;
      for (;;) {
        const std::optional<JobEvent> e = job->next(std::chrono::milliseconds(200));
        if (!e) continue;
        if (ttft < 0 && !e->text.empty()) ttft = clock->ms();
        text += e->text;
        if (!e->done) continue;
        AnswerSplitter::Delta d = splitter.take(text, true);
        ChatAnswer answer{std::move(d.reasoning), std::move(d.content), std::move(d.calls), {}};
        if (!e->error.empty()) {
          send_error(res, ApiError{500, "generation failed: " + e->error, "server_error", ""});
          log(job->id(), "response", e->usage.prompt_tokens, e->usage.completion_tokens, ttft, clock->seconds(), "500 " + e->error);
          return;
        }
        if (q.store) store.put("resp_" + id, conversation_after(q, answer));
        res.set_content(response_object(q, id, created, status_of(*e), answer, e->usage).dump(), "application/json");
        log(job->id(), "response", e->usage.prompt_tokens, e->usage.completion_tokens, std::max(ttft, 0.0), clock->seconds(),
            "200 " + e->finish_reason, q.chat.log_note);
        return;
      }
    }
    // Typed server-sent events: "event: TYPE" and its JSON, numbered.
    auto q_shared = std::make_shared<ResponsesRequest>(std::move(q));
    auto events = std::make_shared<ResponseEvents>(*q_shared, id, created);
    auto splitter = std::make_shared<AnswerSplitter>(job->splitter());
    auto started = std::make_shared<bool>(false);
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, q_shared, job, id, events, splitter, started, status_of](std::size_t, httplib::DataSink& sink) {
          const auto send = [&](const std::vector<json>& list) {
            for (const json& ev : list) {
              const std::string text = "event: " + ev["type"].get<std::string>() + "\ndata: " + ev.dump() + "\n\n";
              if (!sink.write(text.data(), text.size())) return false;
            }
            return true;
          };
          std::optional<JobEvent> e;
          while (!(e = job->next(std::chrono::milliseconds(100)))) {
            if (!sink.is_writable()) {
              job->cancel();
              return false;
            }
          }
          if (!*started) {
            *started = true;
            if (!send(events->start())) {
              job->cancel();
              return false;
            }
          }
          const AnswerSplitter::Delta d = splitter->take(e->text, e->done);
          if (!send(events->add(d.reasoning, d.content, d.calls))) {
            job->cancel();
            return false;
          }
          if (!e->done) return true;
          if (!e->error.empty()) {
            send({{{"type", "error"}, {"code", "server_error"}, {"message", "generation failed: " + e->error}}});
          } else {
            const std::vector<json> last = events->finish(status_of(*e), e->usage);
            if (q_shared->store) store.put("resp_" + id, conversation_after(*q_shared, events->answer()));
            send(last);
            log(job->id(), "response", e->usage.prompt_tokens, e->usage.completion_tokens, 0, 0, "200 " + e->finish_reason + " (streamed)",
                q_shared->chat.log_note);
          }
          sink.done();
          return true;
        },
        [job](bool success) {
          if (!success) job->cancel();
        });
  }

  void routes() {
    server.set_payload_max_length(options.max_body_bytes);
    if (!options.api_key.empty()) {
      server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (req.path == "/health" || req.path == "/") return httplib::Server::HandlerResponse::Unhandled;
        const std::string auth = req.get_header_value("Authorization");
        constexpr std::string_view kBearer = "Bearer ";
        const std::string_view token = auth.starts_with(kBearer) ? std::string_view(auth).substr(kBearer.size()) : std::string_view();
        if (equal_in_constant_time(token, options.api_key)) return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, ApiError{401,
                                 auth.empty() ? "no API key: send the header Authorization: Bearer KEY"
                                              : "incorrect API key provided",
                                 "invalid_request_error", "", "invalid_api_key"});
        return httplib::Server::HandlerResponse::Handled;
      });
    }
    server.new_task_queue = [n = options.connections] { return new httplib::ThreadPool(static_cast<std::size_t>(n)); };
    server.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(json{{"status", "ok"}, {"active", scheduler.active()}, {"queued", scheduler.queued()}}.dump(), "application/json");
    });
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(scheduler.metrics().text(scheduler.active(), scheduler.queued()), "text/plain; version=0.0.4; charset=utf-8");
    });
    // Every response the library writes, whoever set its status (a handler, the key check, the
    // library's own 404 and 413), and a stream whose client went away (as its 200).
    server.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      scheduler.metrics().request(req.path, res.status);
    });
    server.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      const json model = {{"id", options.model_name}, {"object", "model"}, {"created", unix_time()}, {"owned_by", "orion"}};
      res.set_content(json{{"object", "list"}, {"data", json::array({model})}}.dump(), "application/json");
    });
    server.Post("/v1/chat/completions", [this](const httplib::Request& q, httplib::Response& s) { complete(Endpoint::chat, q, s); });
    server.Post("/v1/completions", [this](const httplib::Request& q, httplib::Response& s) { complete(Endpoint::completion, q, s); });
    server.Post("/v1/responses", [this](const httplib::Request& q, httplib::Response& s) { respond(q, s); });
    server.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(chat_page_html(), "text/html; charset=utf-8"); });
    // Statuses the library sets itself (an unknown path, a body over the limit...) get OpenAI's
    // error object; responses with a body of their own are left alone.
    server.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      std::string message = "HTTP " + std::to_string(res.status);
      if (res.status == 404) message = "no such endpoint: " + req.method + " " + req.path;
      if (res.status == 413) message = "the request body is larger than the server's limit of " + std::to_string(options.max_body_bytes) + " bytes";
      if (res.status == 400) message = "the request is malformed";
      send_error(res, ApiError{res.status, message, res.status >= 500 ? "server_error" : "invalid_request_error", ""});
      return httplib::Server::HandlerResponse::Handled;
    }));
    server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      send_error(res, ApiError{500, "internal error: " + what, "server_error", ""});
    });
  }
};

HttpServer::HttpServer(Scheduler& scheduler, ServerOptions options) : impl_(std::make_unique<Impl>(scheduler, std::move(options))) {
  impl_->routes();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  Impl& m = *impl_;
  if (m.options.port == 0) {
    m.port = m.server.bind_to_any_port(m.options.host);
  } else {
    m.port = m.server.bind_to_port(m.options.host, m.options.port) ? m.options.port : -1;
  }
  if (m.port < 0)
    throw Error("serve: cannot listen on " + m.options.host + ":" + std::to_string(m.options.port) +
                " (in use, or not an address of this machine)");
  return m.port;
}

void HttpServer::listen() { impl_->server.listen_after_bind(); }

void HttpServer::stop() {
  if (impl_->server.is_running()) impl_->server.stop();
}

}  // namespace orion::serve
