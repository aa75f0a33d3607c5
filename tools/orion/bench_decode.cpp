// orion bench decode: tokens per second of the fast decoder, and how close its weight
// streaming comes to the machine's read bandwidth, measured in the same run with the same
// threads. With f16 or q8 weights it also reports what the format costs in accuracy: the
// relative error of the logits and the top-1 agreement against f32 weights.
#include <malloc.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "bench_commands.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "exec/cpu/machine_limits.h"
#include "model/gpt2_fast.h"
#include "model_dir.h"

namespace orion::cli {

namespace {

struct DecodeOpts {
  std::string arch = "gpt2-124m", model_dir, dtype = "f16";
  int threads = 0, tokens = 256, runs = 5;
  std::uint64_t seed = 0;
  bool json = false;
};

double resident_mb() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  if (!(f >> pages >> resident)) return 0;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e6;
}

model::Gpt2Model bench_model(const DecodeOpts& o) {
  if (!o.model_dir.empty()) return load_model_dir(o.model_dir).model;
  model::Gpt2Config c;  // GPT-2 124M: the defaults
  return model::Gpt2Model::from_weights(c, model::gpt2_init_weights(c, o.seed), o.arch);
}

std::vector<std::int32_t> bench_tokens(std::int64_t n, std::int64_t vocab) {
  std::vector<std::int32_t> t;
  for (std::int64_t i = 0; i < n; ++i) t.push_back(static_cast<std::int32_t>((i * 7919 + 13) % vocab));
  return t;
}

struct FormatError {
  double rel_l2 = 0;
  double top1 = 1;
};

// Teacher-forced over `n` positions: the format's logits against f32's.
FormatError format_error(const model::Gpt2Model& m, model::WeightDType dtype, int threads, int n) {
  auto ref = std::make_shared<const model::Gpt2FastModel>(m, model::WeightDType::f32);
  auto fmt = std::make_shared<const model::Gpt2FastModel>(m, dtype);
  model::Gpt2FastSession a(ref, threads), b(fmt, threads);
  const auto tokens = bench_tokens(n, m.config().vocab_size);
  double num = 0, den = 0;
  int agree = 0;
  for (std::int32_t t : tokens) {
    const auto x = a.decode(t), y = b.decode(t);
    for (std::size_t i = 0; i < x.size(); ++i) {
      num += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
      den += static_cast<double>(x[i]) * x[i];
    }
    agree += std::max_element(x.begin(), x.end()) - x.begin() == std::max_element(y.begin(), y.end()) - y.begin();
  }
  return {std::sqrt(num / den), static_cast<double>(agree) / n};
}

void bench_decode(const DecodeOpts& o) {
  const model::WeightDType dtype = model::weight_dtype_from_name(o.dtype);
  Stopwatch sw;
  std::shared_ptr<const model::Gpt2FastModel> fast;
  FormatError err;
  std::int64_t n_params = 0;
  {
    const model::Gpt2Model m = bench_model(o);
    n_params = m.config().parameter_count();
    if (dtype != model::WeightDType::f32) err = format_error(m, dtype, o.threads, 32);
    fast = std::make_shared<const model::Gpt2FastModel>(m, dtype);
  }  // the f32 weights are gone: what stays resident is the packed model
#if defined(__GLIBC__)
  malloc_trim(0);  // hand the freed f32 weights back, so that the resident figure is honest
#endif
  const double setup_s = sw.seconds();
  const auto& c = fast->config();
  if (o.tokens + 1 > c.n_positions) throw Error("--tokens must be below the context of " + std::to_string(c.n_positions));

  model::Gpt2FastSession session(fast, o.threads);
  ThreadPool pool(o.threads);
  const double bandwidth = exec::cpu::measure_read_bandwidth_gbps(pool);

  const auto tokens = bench_tokens(o.tokens + 1, c.vocab_size);
  std::vector<double> rates;
  for (int r = 0; r < o.runs; ++r) {
    session.reset();
    session.decode(tokens[0]);
    Stopwatch run;
    for (int i = 1; i <= o.tokens; ++i) session.decode(tokens[static_cast<std::size_t>(i)]);
    rates.push_back(o.tokens / run.seconds());
  }
  const double tok_s = median(rates);
  const double lo = *std::min_element(rates.begin(), rates.end()), hi = *std::max_element(rates.begin(), rates.end());
  const auto bytes = static_cast<double>(fast->weight_bytes_per_token());
  const double gbps = bytes * tok_s / 1e9;
  const double rss = resident_mb();
  // What decoding needs resident: the packed weights, the KV cache and one set of activations.
  const double need_mb = (bytes + static_cast<double>(c.n_positions * c.n_embd * 2 * c.n_layer * 4) +
                          static_cast<double>((8 * c.n_embd + c.hidden() + c.vocab_size + c.n_head * c.n_positions) * 4)) / 1e6;
  const char* isa = exec::cpu::isa_name(exec::cpu::best_isa()).data();
  if (o.json) {
    std::printf("{\"bench\": \"decode\", \"model\": \"%s\", \"params\": %lld, \"dtype\": \"%s\", \"threads\": %d, \"isa\": \"%s\", "
                "\"tokens\": %d, \"runs\": %d, \"tok_per_s\": %.3f, \"tok_per_s_min\": %.3f, \"tok_per_s_max\": %.3f, "
                "\"bytes_per_token\": %.0f, \"achieved_gbps\": %.3f, \"measured_bandwidth_gbps\": %.3f, "
                "\"bandwidth_fraction\": %.4f, \"logits_rel_error\": %.3g, \"top1_agreement\": %.4f, "
                "\"resident_mb\": %.1f, \"needed_mb\": %.1f}\n",
                o.model_dir.empty() ? o.arch.c_str() : o.model_dir.c_str(), static_cast<long long>(n_params), o.dtype.c_str(),
                pool.size(), isa, o.tokens, o.runs, tok_s, lo, hi, bytes, gbps, bandwidth, gbps / bandwidth, err.rel_l2, err.top1,
                rss, need_mb);
    return;
  }
  std::printf("decode %s (%.1fM params), %s weights, %d threads, %s kernels, %d tokens x %d runs (setup %.1f s)\n",
              o.model_dir.empty() ? o.arch.c_str() : o.model_dir.c_str(), static_cast<double>(n_params) / 1e6,
              o.dtype.c_str(), pool.size(), isa, o.tokens, o.runs, setup_s);
  std::printf("  %.2f tok/s median (min %.2f, max %.2f)\n", tok_s, lo, hi);
  std::printf("  %.1f MB of weights per token -> %.2f GB/s; measured read bandwidth %.2f GB/s: %.1f%% of it\n",
              bytes / 1e6, gbps, bandwidth, 100 * gbps / bandwidth);
  if (dtype != model::WeightDType::f32)
    std::printf("  %s against f32 weights over 32 positions: logits relative L2 error %.3g, top-1 agreement %.1f%%\n",
                o.dtype.c_str(), err.rel_l2, 100 * err.top1);
  std::printf("  resident %.1f MB; weights + KV cache + activations need %.1f MB\n", rss, need_mb);
}

}  // namespace

void add_bench_decode_command(CLI::App& bench) {
  auto o = std::make_shared<DecodeOpts>();
  auto* cmd = bench.add_subcommand("decode", "Decode tok/s of the fast decoder against the machine's measured read bandwidth");
  cmd->add_option("--arch", o->arch, "A randomly initialised model of these shapes")->check(CLI::IsMember({"gpt2-124m"}))->capture_default_str();
  cmd->add_option("-m,--model", o->model_dir, "A model folder instead of --arch");
  cmd->add_option("--dtype", o->dtype, "Weight format: f32, f16 or q8")->check(CLI::IsMember({"f32", "f16", "q8"}))->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (0: one per hardware thread)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--tokens", o->tokens, "Tokens decoded per run")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--runs", o->runs, "Timed runs (the median is reported)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the --arch model's weights")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] { bench_decode(*o); });
}

}  // namespace orion::cli
