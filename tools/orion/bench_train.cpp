// orion bench train: milliseconds per training step (forward, backward and AdamW) of a randomly
// initialised model on random tokens, and the achieved GFLOP/s of its matrix products against
// the f32 FMA peak measured in the same run with the same threads. GPT-2 124M with batch 4 and
// 64 tokens is the configuration llm.c quotes for its CPU reference; stories110m is the
// Llama-shaped model of `orion init --preset stories110m`.
#include <cstdio>

#include "bench_commands.h"
#include "core/error.h"
#include "core/random.h"
#include "core/stopwatch.h"
#include "core/temp_folder.h"
#include "core/thread_pool.h"
#include "exec/cpu/machine_limits.h"
#include "model/any_model.h"
#include "numerics_option.h"
#include "train/model_loss.h"
#include "train/data/token_file.h"
#include "train/trainer.h"

namespace orion::cli {

namespace {

struct BenchTrainOpts {
  std::string arch = "gpt2-124m", precision = "f32";
  std::int64_t batch = 4, seq = 64;
  int threads = 0, steps = 3;
  std::uint64_t seed = 0;
  bool json = false;
};

// A randomly initialised model of the --arch's shapes.
model::AnyModel arch_model(const std::string& arch, std::uint64_t seed) {
  if (arch == "gpt2-124m" || arch == "gpt2-tiny") {
    model::Gpt2Config c;  // GPT-2 124M: the defaults
    if (arch == "gpt2-tiny") {  // a few seconds a step less: for trying the command out
      c.n_layer = 2;
      c.n_embd = 128;
      c.n_head = 4;
      c.vocab_size = 512;
      c.eos_token_id = c.vocab_size - 1;
      c.n_positions = 256;
    }
    return model::Gpt2Model::from_weights(c, model::gpt2_init_weights(c, seed), arch);
  }
  model::LlamaConfig c = model::stories110m_config();
  if (arch == "llama-tiny") {  // gpt2-tiny's sizes, with grouped-query attention
    c.num_hidden_layers = 2;
    c.hidden_size = 128;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.intermediate_size = 352;
    c.vocab_size = 512;
    c.max_position_embeddings = 256;
  }
  return model::LlamaModel::from_weights(c, model::llama_init_weights(c, seed), arch);
}

void bench_train(const BenchTrainOpts& o) {
  const model::AnyModel m = arch_model(o.arch, o.seed);
  const model::CausalLm& lm = model::causal_lm(m);
  if (o.seq > lm.context()) throw Error("--seq must be at most the context of " + std::to_string(lm.context()));
  // Random tokens: a training step costs the same whatever they are.
  TempFolder tmp("orion-bench-train");
  const std::string data_path = tmp.path() + "/tokens.bin";
  {
    Rng rng(o.seed);
    std::vector<std::int32_t> tokens(static_cast<std::size_t>((o.seq + 1) * o.batch * 8));
    for (auto& t : tokens) t = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(lm.vocab_size())));
    train::write_token_file(data_path, static_cast<std::uint64_t>(lm.vocab_size()), std::nullopt, tokens, {});
  }
  auto data = std::make_shared<const train::TokenFile>(train::TokenFile::open(data_path));
  train::TrainConfig tc;
  tc.steps = o.steps + 1;
  tc.batch = o.batch;
  tc.seq = o.seq;
  tc.precision = parse_numerics(o.precision);
  tc.threads = o.threads;
  train::Trainer trainer(train::model_loss_graph(m), lm.weights(), tc, data);
  ThreadPool pool(o.threads);
  const double peak = exec::cpu::measure_fma_peak_gflops(pool);

  std::vector<double> ms;
  for (int s = 0; s <= o.steps; ++s) {  // step 0 warms up (first-use buffers, page faults)
    Stopwatch w;
    trainer.step();
    if (s > 0) ms.push_back(1e3 * w.seconds());
  }
  const auto [median_ms, lo, hi] = spread(ms);
  const double flops = trainer.matmul_flops_per_micro_batch();
  const double gflops = flops / (median_ms * 1e-3) / 1e9;
  const auto params = static_cast<long long>(std::visit([](const auto& x) { return x.config().parameter_count(); }, m));
  if (o.json) {
    std::printf("{\"bench\": \"train\", \"arch\": \"%s\", \"params\": %lld, \"precision\": \"%s\", \"threads\": %d, "
                "\"batch\": %lld, \"seq\": %lld, \"steps\": %d, \"ms_per_step\": %.3f, \"ms_per_step_min\": %.3f, "
                "\"ms_per_step_max\": %.3f, \"gflop_per_step\": %.4f, \"achieved_gflops\": %.3f, "
                "\"measured_peak_gflops\": %.3f, \"peak_fraction\": %.4f}\n",
                o.arch.c_str(), params, o.precision.c_str(), pool.size(), static_cast<long long>(o.batch),
                static_cast<long long>(o.seq), o.steps, median_ms, lo, hi, flops / 1e9, gflops, peak, gflops / peak);
    return;
  }
  std::printf("train %s (%.1fM params), %s, %d threads, batch %lld x %lld tokens, %d steps after a warm-up\n", o.arch.c_str(),
              static_cast<double>(params) / 1e6, o.precision.c_str(), pool.size(), static_cast<long long>(o.batch),
              static_cast<long long>(o.seq), o.steps);
  std::printf("  %.1f ms per step median (min %.1f, max %.1f); %.0f tokens/s\n", median_ms, lo, hi,
              static_cast<double>(o.batch * o.seq) / (median_ms * 1e-3));
  std::printf("  %.2f GFLOP of matrix products per step -> %.1f GFLOP/s; measured f32 FMA peak %.1f GFLOP/s: %.1f%% of it\n",
              flops / 1e9, gflops, peak, 100 * gflops / peak);
}

}  // namespace

void add_bench_train_command(CLI::App& bench) {
  auto o = std::make_shared<BenchTrainOpts>();
  auto* cmd = bench.add_subcommand("train", "ms per training step and GFLOP/s against the machine's measured FMA peak");
  cmd->add_option("--arch", o->arch, "A randomly initialised model of these shapes")
      ->check(CLI::IsMember({"gpt2-124m", "gpt2-tiny", "llama-tiny", "stories110m"}))->capture_default_str();
  cmd->add_option("--batch", o->batch, "Sequences per step")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seq", o->seq, "Tokens per sequence")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--steps", o->steps, "Timed steps after one warm-up (the median is reported)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (0: one per hardware thread)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--precision", o->precision, "f32 or f16 (the ANE's numerics)")->check(CLI::IsMember({"f32", "f16"}))->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the weights and tokens")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object: ms_per_step, achieved_gflops, measured_peak_gflops, peak_fraction");
  cmd->footer("FLOPs counted (2 per multiply-add): the matrix products of the forward and backward graphs. Layer norms, "
              "softmax, GELU, SiLU, RoPE, the loss and the optimizer count nothing, though their time is in the step.");
  cmd->callback([o] { bench_train(*o); });
}

}  // namespace orion::cli
