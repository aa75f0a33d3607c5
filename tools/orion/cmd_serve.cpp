// orion serve: a model folder behind OpenAI's HTTP API (src/serve): chat and text completions,
// streamed as server-sent events, concurrent requests on one model instance, the chat page at
// /. Ctrl-C stops it.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "ane_package_cli.h"
#include "decoder_cli.h"
#include "commands.h"
#include "core/error.h"
#include "engine/decoder_factory.h"
#include "engine/model_text.h"
#include "runtime/device_factory.h"
#include "model/model_folder.h"
#include "serve/http_server.h"
#include "serve/scheduler.h"

namespace orion::cli {

namespace {

struct ServeOpts {
  std::string model_dir, weights, lora, device = "cpu";
  engine::DeviceRunOptions ane;
  int threads = 0;
  double max_body_mb = 4;
  double prompt_cache_mb = 1024;
  bool pipeline = false;
  std::string api_key_file;
  serve::SchedulerOptions scheduler;
  serve::ServerOptions server;
};

constexpr int kDeviceBatch = 4;

serve::HttpServer* g_server = nullptr;

void on_signal(int) {
  // httplib's stop() shuts the listening socket down: safe enough from a handler, and the
  // process is ending anyway.
  if (g_server) g_server->stop();
}

// --api-key-file's first line, without its line end and surrounding blanks.
std::string read_api_key(const std::string& file) {
  std::ifstream f(file);
  if (!f) throw Error::in_file(file, "cannot be read (--api-key-file)");
  std::string line;
  std::getline(f, line);
  const auto first = line.find_first_not_of(" \t\r"), last = line.find_last_not_of(" \t\r");
  if (first == std::string::npos) throw Error::in_file(file, "has no key on its first line (--api-key-file)");
  return line.substr(first, last - first + 1);
}

bool loopback(const std::string& host) { return host == "127.0.0.1" || host == "::1" || host == "localhost"; }

void serve_command(ServeOpts& o) {
  if (!o.api_key_file.empty()) {
    if (!o.server.api_key.empty()) throw Error("give --api-key or --api-key-file, not both");
    o.server.api_key = read_api_key(o.api_key_file);
  }
  engine::DecoderOptions d;
  d.device = runtime::device_kind(o.device);
  d.weights = o.weights;
  d.threads = o.threads;
  d.lora = o.lora;
  d.run = o.ane;
  // Under mpirun with --pipeline, rank 0 serves and the other ranks run their layers.
  std::optional<PipelinePart> part;
  if (o.pipeline && !(part = start_pipeline(o.model_dir, d, o.server.quiet))) return;
  const model::ModelFolder md =
      part ? std::move(part->md) : model::ModelFolder::load(o.model_dir, device_context(o.device, o.ane.pkg));
  // On a device, concurrent requests decode together through a decode_batch program of
  // --max-active slots, at most kDeviceBatch, unless --ane-batch says otherwise (1: one request
  // at a time). Each slot holds a whole KV cache on the device, and every step packs a mask over
  // all of them.
  if (d.device != runtime::DeviceKind::cpu) {
    if (d.run.pkg.batch == 0) d.run.pkg.batch = std::min(o.scheduler.max_active, kDeviceBatch);
    if (d.run.pkg.batch > 1) o.scheduler.max_active = static_cast<int>(d.run.pkg.batch);
  }
  engine::ChosenDecoder chosen = part ? std::move(part->chosen) : engine::make_decoder(md, d, [&](const std::string& line) {
    if (!o.server.quiet) std::fprintf(stderr, "%s\n", line.c_str());
  });
  serve::Scheduler::SessionFactory sessions = chosen.new_session;
  if (!sessions) {
    // A device without a batch program has one session over kernels compiled and loaded once
    // (the compile budget and the device's memory allow no second): its requests run one at a
    // time and the rest wait in the queue.
    if (o.scheduler.max_active != 1 && !o.server.quiet)
      std::fprintf(stderr, "serve: --device %s runs one request at a time (the others queue)\n", o.device.c_str());
    o.scheduler.max_active = 1;
    sessions = [&chosen, given = false]() mutable -> std::unique_ptr<engine::Decoder> {
      if (given) throw Error("serve: the device's decoder is one session, already in use");
      given = true;
      return std::move(chosen.decoder);
    };
  }
  if (o.server.model_name.empty()) o.server.model_name = std::filesystem::path(o.model_dir).filename().string();
  if (o.server.model_name.empty()) o.server.model_name = "orion";
  o.server.max_body_bytes = static_cast<std::size_t>(o.max_body_mb * 1e6);
  o.scheduler.prompt_cache_bytes = static_cast<std::size_t>(o.prompt_cache_mb * 1e6);
  serve::Scheduler scheduler(engine::ModelText(md), sessions, o.scheduler);
  serve::HttpServer server(scheduler, o.server);
  const int port = server.bind();
  const std::string engine = chosen.run ? o.device : chosen.weights + " weights";
  std::fprintf(stderr, "serve: %s (%s%s) on http://%s:%d/ : POST /v1/chat/completions, /v1/completions; GET /v1/models, "
               "/health; the chat page at /. %d requests at once, %d more queued. Ctrl-C stops.\n",
               o.model_dir.c_str(), engine.c_str(), chosen.lora.empty() ? "" : (", " + chosen.lora).c_str(),
               o.server.host.c_str(), port, o.scheduler.max_active, o.scheduler.max_queue);
  if (!loopback(o.server.host) && o.server.api_key.empty())
    std::fprintf(stderr, "serve: warning: listening on %s without --api-key: anyone who reaches this address can use the "
                 "model\n", o.server.host.c_str());
  std::fflush(stderr);
  g_server = &server;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  server.listen();
  g_server = nullptr;
  std::fprintf(stderr, "serve: stopped\n");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOpts>();
  auto* cmd = app.add_subcommand("serve", "Serve a model over OpenAI's HTTP API, with streaming and a chat page");
  cmd->add_option("-m,--model", o->model_dir, "Model folder, or a GGUF file")->required();
  cmd->add_option("--host", o->server.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", o->server.port, "Port (0: any free one, printed)")->check(CLI::Range(0, 65535))->capture_default_str();
  cmd->add_option("--device", o->device,
                  "Device: cpu (the fast engine; concurrent requests decode together), ane-sim (the emulator) or ane (the "
                  "Neural Engine: macOS on Apple silicon), whose concurrent requests decode together in a decode_batch program of "
                  "--max-active slots, at most 4 (--ane-batch N sets it; 1: one at a time)")
      ->check(CLI::IsMember({"cpu", "ane-sim", "ane"}))->capture_default_str();
  add_device_run_options(cmd, o->ane);
  cmd->add_option("--weights", o->weights, "The fast engine's weight format: f32, f16 or q8 (default: the folder's own)")
      ->check(CLI::IsMember({"f32", "f16", "q8"}));
  cmd->add_option("--lora", o->lora, "LoRA adapter folder, merged into the weights");
  cmd->add_flag("--pipeline", o->pipeline,
                "Under mpirun: split the model's layers over the ranks, each holding only its own; rank 0 serves (the fast "
                "CPU engine, Llama family)");
  cmd->add_option("--threads", o->threads, "Threads of each request's session (0: one per hardware thread)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--max-active,--max-concurrent", o->scheduler.max_active, "Requests generating at once")->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_option("--max-queue", o->scheduler.max_queue, "Requests waiting beyond them (more get 503)")
      ->check(CLI::Range(0, 100000))->capture_default_str();
  cmd->add_option("--max-prompt-tokens", o->scheduler.max_prompt_tokens, "Longest prompt taken (0: the context less one)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--max-total-tokens", o->scheduler.max_total_tokens, "Prompt and answer of a request together (0: the context)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--max-tokens-limit", o->scheduler.max_tokens_limit,
                  "Tokens a request may generate: a larger max_tokens gets 400, and a request without one stops there "
                  "(0: only the context limits it)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--prompt-cache-mb", o->prompt_cache_mb,
                  "KV cache idle sessions keep of earlier requests for prompts that start the same way (a shared system "
                  "prompt, a chat's next turn), MB; 0: none")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--max-body-mb", o->max_body_mb, "Largest request body, MB (more gets 413)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--model-name", o->server.model_name, "The model's name in /v1/models and answers (default: the folder's name)");
  cmd->add_flag("--quiet", o->server.quiet, "No log line per request");
  cmd->add_option("--api-key", o->server.api_key, "A key clients must send as Authorization: Bearer KEY (GET /health and the "
                  "chat page stay open)");
  cmd->add_option("--api-key-file", o->api_key_file, "The key's file (its first line), so that it is not on the command line");
  cmd->callback([o] { serve_command(*o); });
}

}  // namespace orion::cli
