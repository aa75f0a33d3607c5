#pragma once
// `orion serve`'s HTTP side (cpp-httplib, Debian's libcpp-httplib-dev: a maintained
// single-purpose HTTP/1.1 server with chunked streaming, a thread per connection from a pool,
// and a body-size limit): OpenAI's endpoints over a Scheduler, server-sent events for
// `stream: true`, the chat page at /, and one log line per request.
//
//   GET  /health                -> {"status": "ok", "active": N, "queued": M}
//   GET  /v1/models             -> the one model, as OpenAI lists models
//   POST /v1/chat/completions   -> messages through the model folder's chat template
//   POST /v1/completions        -> a prompt continued
//   GET  /                      -> the chat page (serve/chat_page.h)
//
// With an API key, every path but /health and / wants `Authorization: Bearer KEY` (compared in
// constant time) and answers 401 with OpenAI's error object (code invalid_api_key) without it.
//
// Errors are OpenAI's error object with the status: 400 for bad JSON or parameters, 404 for an
// unknown path, 405 for a wrong method, 413 for a body over the limit, 503 when the queue is
// full; never a 500 for bad input. A streaming client that disconnects cancels its request.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "serve/scheduler.h"

namespace orion::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;             // 0: any free port (bind() says which)
  std::size_t max_body_bytes = 4u << 20;
  std::string model_name;      // what /v1/models lists and answers carry
  bool quiet = false;          // no per-request log lines
  int connections = 96;        // connections served at once (each streaming one holds a thread)
  std::string api_key;         // "": no key asked for
};

// Whether `given` equals `wanted`, in a time that depends on their lengths only (a key's bytes
// are not found out one by one from how long a refusal takes).
bool equal_in_constant_time(std::string_view given, std::string_view wanted);

class HttpServer {
 public:
  HttpServer(Scheduler& scheduler, ServerOptions options);
  ~HttpServer();
  // Binds the address; returns the port. Throws orion::Error naming the address when it fails.
  int bind();
  // Serves until stop() (from another thread or a signal handler's thread).
  void listen();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orion::serve
