// orion bench serve: the aggregate decode rate of 1, 2, 4 and 8 concurrent requests on one
// model instance through the server's scheduler (serve/scheduler.h: their tokens run together
// in one pass over the weights), against the single request's rate measured in the same run.
// GPT-2 124M's shape with random weights by default (a model folder written to a temporary
// folder; with --tokenizer GPT-2's vocabulary and its 50257-row head), or the folder -m names.
#include <algorithm>
#include <cstdio>
#include <thread>

#include "bench_commands.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "core/temp_folder.h"
#include "engine/decoder_factory.h"
#include "engine/model_text.h"
#include "exec/cpu/machine_limits.h"
#include "model/model_folder.h"
#include "model/model_init.h"
#include "serve/scheduler.h"

namespace orion::cli {

namespace {

struct BenchServeOpts {
  std::string model_dir, tokenizer;
  std::vector<int> streams = {1, 2, 4, 8};
  int tokens = 64, threads = 0;
  bool json = false;
};

struct StreamsRun {
  std::int64_t generated = 0;
  double in_all = 0;     // tokens a second from the first submit to the last token
  double decoding = 0;   // tokens a second while every stream decodes (from the last first token)
  double first_token = 0;  // mean seconds from submit to a request's first token
};

// `n` requests submitted together, watched every half millisecond: the decoding rate counts the
// tokens generated after every request has its first one (the steady state of n streams, as
// llama.cpp's batched-bench separates generation from prompt processing).
StreamsRun run_streams(serve::Scheduler& s, int n, int tokens) {
  serve::CompletionRequest r;
  r.prompt = "In the beginning God created the heaven and the earth.";
  r.max_tokens = tokens;
  r.temperature = 0;
  r.ignore_eos = true;  // random weights may well pick end-of-text first
  Stopwatch sw;
  std::vector<std::shared_ptr<serve::Job>> jobs;
  for (int i = 0; i < n; ++i) jobs.push_back(s.submit(r));
  std::vector<double> first(static_cast<std::size_t>(n), -1);
  std::vector<bool> done(static_cast<std::size_t>(n), false);
  double t0 = -1, t1 = 0;
  std::int64_t g0 = 0;
  StreamsRun out;
  for (int left = n; left > 0;) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    const double now = sw.seconds();
    std::int64_t g = 0;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      g += jobs[i]->generated();
      if (first[i] < 0 && jobs[i]->generated() > 0) first[i] = now;
      while (!done[i]) {
        const std::optional<serve::JobEvent> e = jobs[i]->next(std::chrono::milliseconds(0));
        if (!e) break;
        if (!e->done) continue;
        if (!e->error.empty()) throw Error("bench serve: " + e->error);
        done[i] = true;
        --left;
        out.generated += e->usage.completion_tokens;
      }
    }
    if (t0 < 0 && std::all_of(first.begin(), first.end(), [](double f) { return f >= 0; })) {
      t0 = now;
      g0 = g;
    }
    t1 = now;
  }
  out.in_all = static_cast<double>(out.generated) / t1;
  out.decoding = t1 > t0 ? static_cast<double>(out.generated - g0) / (t1 - t0) : 0;
  for (double f : first) out.first_token += f / n;
  return out;
}

void bench_serve(const BenchServeOpts& o) {
  std::optional<TempFolder> tmp;
  std::string dir = o.model_dir;
  if (dir.empty()) {
    tmp.emplace("orion-bench-serve");
    model::InitOptions init;
    init.out = dir = tmp->path() + "/gpt2-124m";
    init.preset = "gpt2";
    init.seed = 1;
    init.tokenizer = o.tokenizer;
    if (o.tokenizer.empty()) init.vocab = 257;  // the byte-level vocabulary: every sampled id spellable
    model::init_model(init);
  }
  const model::ModelFolder md = model::ModelFolder::load(dir);
  engine::DecoderOptions d;
  d.threads = o.threads;
  const engine::ChosenDecoder chosen = engine::make_decoder(md, d, [](const std::string&) {});
  serve::SchedulerOptions so;
  for (int n : o.streams) so.max_active = std::max(so.max_active, n);
  serve::Scheduler scheduler(engine::ModelText(md), chosen.new_session, so);
  // Every session the runs will use allocated and touched, and the pool and caches warm, as in a
  // server that has been up a while.
  run_streams(scheduler, so.max_active, 8);
  double single = 0;
  if (!o.json) std::printf("bench serve: %s, %s weights, %d tokens a request, greedy\n", dir.c_str(), chosen.weights.c_str(), o.tokens);
  // How far batching pays depends on how memory-bound one stream is: the machine's read
  // bandwidth is probed before each run (a shared VM's moves by 2x within a minute).
  ThreadPool probe_pool(o.threads);
  std::string json = "[";
  for (int n : o.streams) {
    const double read_gbps = exec::cpu::measure_read_bandwidth_gbps(probe_pool, std::size_t{256} << 20, 3);
    const StreamsRun run = run_streams(scheduler, n, o.tokens);
    if (single == 0) single = run.decoding / n;
    if (o.json) {
      json += (json.size() > 1 ? ", " : "") + std::string("{\"streams\": ") + std::to_string(n) + ", \"tokens\": " +
              std::to_string(run.generated) + ", \"decode_tok_per_s\": " + std::to_string(run.decoding) +
              ", \"vs_one\": " + std::to_string(run.decoding / single) + ", \"in_all_tok_per_s\": " +
              std::to_string(run.in_all) + ", \"first_token_s\": " + std::to_string(run.first_token) +
              ", \"read_gbps_before\": " + std::to_string(read_gbps) + "}";
    } else {
      std::printf("  %d stream%s: %5.1f tok/s decoding (%.2fx one stream's), %5.1f tok/s in all, first token %.0f ms; read bandwidth before %.1f GB/s\n",
                  n, n == 1 ? " " : "s", run.decoding, run.decoding / single, run.in_all, run.first_token * 1e3, read_gbps);
    }
  }
  if (o.json) std::printf("%s]\n", json.c_str());
}

}  // namespace

void add_bench_serve_command(CLI::App& bench) {
  auto o = std::make_shared<BenchServeOpts>();
  auto* cmd = bench.add_subcommand("serve", "Aggregate decode tok/s of concurrent requests on one model (the server's scheduler)");
  cmd->add_option("-m,--model", o->model_dir, "Model folder (default: GPT-2 124M's shape, random weights)");
  cmd->add_option("--tokenizer", o->tokenizer,
                  "The default model's tokenizer folder (GPT-2's vocab.json and merges.txt, or encoder.json and vocab.bpe); "
                  "without one a byte-level vocabulary of 257 tokens, and a head that small");
  cmd->add_option("--streams", o->streams, "Concurrent requests, one run each")->delimiter(',')->capture_default_str();
  cmd->add_option("--tokens", o->tokens, "Tokens each request generates")->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (0: one per hardware thread)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON list");
  cmd->callback([o] { bench_serve(*o); });
}

}  // namespace orion::cli
