// orion bench prefill: tokens per second of the fast engine's batched prefill (matrix
// products through the BLAS), and its achieved GFLOP/s against the f32 FMA peak measured
// around every timed run with the same number of threads (fractions_of_limit). The FLOPs counted are those of the matrix
// products performed (the sessions' batched_prefill_flops, from the model's shapes): every linear layer over all
// prompt tokens, attention's Q K^T and S V over the keys each block of 128 queries covers
// (the masked part that is computed included, the skipped part not), and the head for the
// last token; norms, rotations, softmax, GELU or SwiGLU and the f16/q8 expansion count nothing.
// GPT-2 and Llama (--arch stories110m, or a Llama folder), through engine::make_fast_engine.
#include <cstdio>
#include <memory>
#include <variant>

#include "bench_commands.h"
#include "core/emulation.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "exec/cpu/gemm.h"
#include "exec/cpu/machine_limits.h"
#include "engine/fast/fast_engine.h"
#include "engine/fast/fast_prefill.h"

namespace orion::cli {

namespace {

struct PrefillOpts {
  std::string arch = "gpt2-124m", model_dir, dtype = "f32";
  int threads = 0, prompt = 512, runs = 5;
  std::int64_t batched_min = 0;
  std::uint64_t seed = 0;
  bool json = false;
};

void bench_prefill(const PrefillOpts& o) {
  const model::WeightDType dtype = model::weight_dtype_from_name(o.dtype);
  engine::FastEngine fast;
  std::int64_t n_params = 0, context = 0, vocab = 0;
  {
    const model::AnyModel any = bench_any_model(o.arch, o.model_dir, o.seed);
    n_params = std::visit([](const auto& m) { return m.config().parameter_count(); }, any);
    context = model::causal_lm(any).context();
    vocab = model::causal_lm(any).vocab_size();
    fast = engine::make_fast_engine(any, dtype);
  }
  if (o.prompt > context) throw Error("--prompt must be at most the context of " + std::to_string(context));

  const std::int64_t batched_min = o.batched_min > 0 ? o.batched_min : engine::prefill::kDefaultBatchedMin;
  const std::unique_ptr<engine::Decoder> session = fast.prefill_session(o.threads, batched_min);
  const bool batched = o.prompt >= batched_min;
  ThreadPool pool(o.threads);

  std::vector<std::int32_t> tokens;
  for (int i = 0; i < o.prompt; ++i) tokens.push_back(static_cast<std::int32_t>((i * 7919 + 13) % vocab));
  // The token-by-token path performs other products (GEMVs, the cache's attention): no FLOP
  // figure is claimed for it.
  const double flops = batched ? fast.batched_prefill_flops(0, o.prompt) : 0;
  session->prefill(tokens);  // warms up first-use buffers and page faults
  std::vector<double> rates, achieved, peaks{exec::cpu::measure_fma_peak_gflops(pool)};
  for (int r = 0; r < o.runs; ++r) {
    session->reset();
    Stopwatch run;
    session->prefill(tokens);
    rates.push_back(o.prompt / run.seconds());
    achieved.push_back(flops * rates.back() / o.prompt / 1e9);
    peaks.push_back(exec::cpu::measure_fma_peak_gflops(pool));
  }
  const Spread tok_s = spread(rates), peak = spread(peaks);
  const double gflops = flops * tok_s.median / o.prompt / 1e9;
  // Zero for the token-by-token path, which claims no FLOPs.
  const Spread fraction = spread(fractions_of_limit(achieved, peaks));
  const std::string name = o.model_dir.empty() ? o.arch : o.model_dir;
  if (o.json) {
    std::printf("{\"bench\": \"prefill\", \"emulator\": \"%s\", \"model\": \"%s\", \"params\": %lld, \"dtype\": \"%s\", \"threads\": %d, "
                "\"batched\": %s, \"blas\": \"%s\", \"prompt\": %d, \"runs\": %d, \"tok_per_s\": %.3f, "
                "\"tok_per_s_min\": %.3f, \"tok_per_s_max\": %.3f, \"gflop_per_prefill\": %.4f, \"achieved_gflops\": %.3f, "
                "\"achieved_gflops_min\": %.3f, \"achieved_gflops_max\": %.3f, \"measured_peak_gflops\": %.3f, "
                "\"measured_peak_min_gflops\": %.3f, \"measured_peak_max_gflops\": %.3f, "
                "\"peak_fraction\": %.4f, \"peak_fraction_min\": %.4f, \"peak_fraction_max\": %.4f}\n", emulator_name().c_str(),
                name.c_str(), static_cast<long long>(n_params), o.dtype.c_str(), pool.size(), batched ? "true" : "false",
                exec::cpu::gemm_library().c_str(), o.prompt, o.runs, tok_s.median, tok_s.min, tok_s.max, flops / 1e9, gflops,
                flops * tok_s.min / o.prompt / 1e9, flops * tok_s.max / o.prompt / 1e9, peak.median, peak.min, peak.max,
                fraction.median, fraction.min, fraction.max);
    return;
  }
  std::printf("prefill %s (%.1fM params), %s weights, %d threads, %d-token prompt x %d runs, %s\n", name.c_str(),
              static_cast<double>(n_params) / 1e6, o.dtype.c_str(), pool.size(), o.prompt, o.runs,
              batched ? "batched (BLAS)" : "token by token");
  std::fputs(emulation_notice().c_str(), stdout);
  std::printf("  matrix products: %s (ORION_GEMM=%s, chosen at configure time)\n", exec::cpu::gemm_library().c_str(),
              exec::cpu::gemm_configured());
  std::printf("  %.1f tok/s median (min %.1f, max %.1f); %.1f ms per prompt\n", tok_s.median, tok_s.min, tok_s.max,
              1e3 * o.prompt / tok_s.median);
  if (batched)
    std::printf("  %.2f GFLOP per prompt -> %.1f GFLOP/s; f32 FMA peak around the runs %.1f GFLOP/s median (min %.1f, max %.1f)\n"
                "  fraction of the peak, each run against the probes around it: %.1f%% median (min %.1f%%, max %.1f%%)\n",
                flops / 1e9, gflops, peak.median, peak.min, peak.max, 100 * fraction.median, 100 * fraction.min,
                100 * fraction.max);
}

}  // namespace

void add_bench_prefill_command(CLI::App& bench) {
  auto o = std::make_shared<PrefillOpts>();
  auto* cmd = bench.add_subcommand("prefill", "Prefill tok/s of the fast engine and its GFLOP/s against the machine's measured FMA peak");
  cmd->add_option("--arch", o->arch, "A randomly initialised model of these shapes")->check(CLI::IsMember({"gpt2-124m", "stories110m"}))->capture_default_str();
  cmd->add_option("-m,--model", o->model_dir, "A model folder (GPT-2 or Llama) or a GGUF file instead of --arch");
  cmd->add_option("--dtype", o->dtype, "Weight format: f32, f16 or q8 (the products run in f32 either way)")
      ->check(CLI::IsMember({"f32", "f16", "q8"}))->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (0: one per hardware thread)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--prompt", o->prompt, "Prompt tokens per run")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--runs", o->runs, "Timed runs after one warm-up (the median is reported)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--batched-min", o->batched_min,
                  "Shortest prompt run batched (0: the engine's default; a prompt shorter than it runs token by token)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the --arch model's weights")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->footer(
      "FLOPs counted (2 per multiply-add): the matrix products performed - every linear layer over all prompt tokens, "
      "attention's Q K^T and S V over the keys each block of 128 queries covers (masked entries inside a block included), "
      "and the head for the last token. Norms, rotary embeddings, softmax, GELU or SwiGLU and expanding f16/q8 weights "
      "count nothing.");
  cmd->callback([o] { bench_prefill(*o); });
}

}  // namespace orion::cli
