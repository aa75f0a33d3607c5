// orion train: trains a model folder on a token file or JSONL data (text, prompt/completion or
// chat records, the prompt masked with --mask-prompt), on the CPU in the ANE's fp16 numerics or
// in f32, or on an ANE device, with checkpoints a killed run resumes from bit for bit
// (train/train_run.h). Shows a live progress line (step, loss, trained tokens/s, peak memory,
// ETA) and writes OUT/metrics.jsonl, which `orion plot` draws, and OUT/summary.json.
#include <algorithm>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include <filesystem>

#include "commands.h"
#include "core/error.h"
#include "core/process_memory.h"
#include "dist/collective.h"
#include "model/model_folder.h"
#include "architecture_options.h"
#include "runtime/device_factory.h"
#include "train/checkpoint.h"
#include "train/train_device.h"
#include "train/train_run.h"
#include "train/train_setup.h"

namespace orion::cli {

namespace {

// The device options of `train --device ane-sim`; returns their group, whose count_all() says
// whether any was given.
CLI::App* add_train_device_options(CLI::App* cmd, train::TrainDeviceOptions& o) {
  auto* g = cmd->add_option_group("ane-sim", "The emulator's settings (--device ane-sim), to exercise the runtime's bookkeeping");
  g->add_flag("--ane-faithful", o.faithful, "Past its compile budget the emulator returns garbage silently, as the ANE does");
  g->add_option("--ane-compile-budget", o.compile_budget, "Compiles the emulated device takes per process (ANE030)")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  g->add_flag("--ane-stale-reload", o.stale_reload,
              "Unload + load keeps the compiled weights (as on some machines): every step recompiles, and a spent "
              "budget restarts the process");
  cmd->add_option("--ane-weights", o.weights,
                  "ane-sim and ane: weights as kernel inputs written each step, each kernel compiled once (inputs), or "
                  "baked into the kernels and reloaded or recompiled each step (baked)")
      ->check(CLI::IsMember({"inputs", "baked"}))
      ->capture_default_str();
  return g;
}


std::string clock_duration(double seconds) {
  const long s = std::lround(std::max(seconds, 0.0));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s / 60 % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

struct TrainOpts {
  train::RunOptions run;
  bool init = false;  // --init: a new model from the architecture options, in OUT/init
  model::InitOptions model;
  std::string precision, device = "cpu";  // precision: f32 on the cpu, f16 on an ANE device
  train::TrainDeviceOptions ane;
  double weight_decay = 0.1, clip = 1.0;
  bool no_loss_scaling = false;
  int lora_rank = 0;  // --lora RANK; 0: train every weight
  train::LoraOptions lora;
  double rank_timeout = dist::kDefaultRankTimeout;  // under mpirun
};

// --init: OUT/init is the run's initial model, a pure function of the architecture options and
// --seed. A resumed run with checkpoints leaves it alone (they hold the weights, and rewriting
// 100M weights at every restart would be waste); otherwise it is written afresh, so a run never
// starts from an initial model made with other options.
void start_from_scratch(TrainOpts& o) {
  o.model.out = (std::filesystem::path(o.run.out) / "init").string();
  o.run.model_dir = o.model.out;
  if (o.run.resume && train::has_checkpoint_folders(o.run.out) && std::filesystem::exists(model::model_config_path(o.model.out)))
    return;
  o.model.seed = o.run.config.seed;
  o.model.force = true;
  // Rank 0 writes it; the other ranks of a data-parallel job read it once it is whole.
  if (o.run.collective->rank() == 0) {
    std::filesystem::create_directories(o.run.out);
    std::printf("%s\n", model::init_model(o.model).c_str());
  }
  o.run.collective->barrier();
}

void train_command(TrainOpts& o, const std::vector<std::string>& argv, bool sim_options_given) {
  if (sim_options_given && runtime::device_kind(o.device) != runtime::DeviceKind::ane_sim)
    throw Error("--ane-faithful, --ane-compile-budget and --ane-stale-reload set up the emulator: they need --device ane-sim");
  o.run.config.precision = train::train_precision(o.device, o.precision);
  o.precision = o.run.config.precision == exec::Numerics::f16 ? "f16" : "f32";
  o.run.config.adamw.weight_decay = o.weight_decay;
  o.run.config.adamw.clip_norm = o.clip;
  if (o.no_loss_scaling) o.run.config.loss_scaling = false;
  if (o.init == !o.run.model_dir.empty())
    throw Error(o.init ? "give -m DIR or --init, not both" : "give -m DIR (a model folder) or --init (a new model)");
  // Under mpirun, one rank of a data-parallel job (train/trainer.h, distribute): rank 0 prints
  // and writes; the others train in silence.
  o.run.collective = dist::job_collective(o.rank_timeout);
  const int rank = o.run.collective->rank(), ranks = o.run.collective->size();
  if (o.init) start_from_scratch(o);
  if (o.lora_rank > 0) {
    o.lora.rank = o.lora_rank;
    o.run.lora = o.lora;
  }
  const std::unique_ptr<train::TrainDevice> device = train::attach_train_device(o.run, o.device, o.ane, argv);
  const std::int64_t total = o.run.config.steps;
  const bool tty = isatty(fileno(stderr));
  double window_tokens = 0, window_seconds = 0, window_steps = 0;  // trained tokens/s over the recent steps
  std::int64_t started_at = 0;
  double elapsed = 0;

  train::RunEvents events;
  events.on_data = [&](const train::DataSummary& d) {
    if (!d.records) return;
    const train::RecordLoaderStats& s = d.train;
    std::string buckets;
    for (std::int64_t b : d.buckets) buckets += (buckets.empty() ? "" : ",") + std::to_string(b);
    std::fprintf(stderr, "train: %s: %zu records, %llu trained tokens an epoch, padded to buckets %s: %.1f%% padding\n",
                 d.file.c_str(), s.records, static_cast<unsigned long long>(s.trained_tokens), buckets.c_str(),
                 100.0 * s.padding_fraction());
    if (s.truncated > 0)
      std::fprintf(stderr, "train: warning: %zu record%s longer than --seq %lld + 1 tokens cut to it (--skip-long skips them)\n",
                   s.truncated, s.truncated == 1 ? "" : "s", static_cast<long long>(o.run.config.seq));
    if (s.skipped > 0) std::fprintf(stderr, "train: %zu record%s longer than --seq skipped\n", s.skipped, s.skipped == 1 ? "" : "s");
    if (s.dropped > 0)
      std::fprintf(stderr, "train: warning: %zu record%s with no trained token left dropped\n", s.dropped, s.dropped == 1 ? "" : "s");
  };
  events.on_start = [&](const train::Trainer& t, std::int64_t resumed) {
    started_at = resumed;
    std::fprintf(stderr, "train: %s on %s, %lld steps of %lld x %lld tokens%s, %s, %s\n", o.run.model_dir.c_str(),
                 o.run.data.c_str(), static_cast<long long>(total), static_cast<long long>(t.config().batch * t.config().accum),
                 static_cast<long long>(t.config().seq),
                 t.config().accum > 1 ? (" (" + std::to_string(t.config().accum) + " micro-batches)").c_str() : "",
                 o.precision.c_str(), t.config().scaling() ? "dynamic loss scaling" : "no loss scaling");
    if (resumed > 0) std::fprintf(stderr, "train: resumed from step %lld\n", static_cast<long long>(resumed));
    if (ranks > 1)
      std::fprintf(stderr, "train: data-parallel over %s: each rank runs %lld of a step's %lld micro-batches, the gradients "
                   "summed in rank order\n", o.run.collective->describe().c_str(),
                   static_cast<long long>(t.config().accum / ranks), static_cast<long long>(t.config().accum));
    if (device)
      std::fprintf(stderr, "train: forward and backward kernels on %s; validation on the host in fp16\n",
                   device->describe().c_str());
  };
  events.on_step = [&](const train::StepStats& s, std::optional<double> val) {
    // Trained tokens a second over the recent steps (an exponential average), and the time
    // left at the recent steps' pace.
    window_tokens = 0.9 * window_tokens + static_cast<double>(s.trained_tokens);
    window_seconds = 0.9 * window_seconds + s.seconds;
    window_steps = 0.9 * window_steps + 1.0;
    elapsed += s.seconds;
    const double tok_s = window_tokens / window_seconds;
    const double eta = static_cast<double>(total - s.step) * window_seconds / window_steps;
    char line[256];
    std::snprintf(line, sizeof line, "step %lld/%lld  loss %.4f  lr %.2e  %.0f tok/s  peak %.0f MB  ETA %s%s",
                  static_cast<long long>(s.step), static_cast<long long>(total), s.loss, s.lr, tok_s, peak_resident_mb(),
                  clock_duration(eta).c_str(), s.skipped ? "  (skipped: gradients not finite)" : "");
    if (val) {
      std::fprintf(stderr, "%s%s  val %.4f\n", tty ? "\r\033[K" : "", line, *val);
    } else if (tty) {
      std::fprintf(stderr, "\r\033[K%s", line);
    } else if (s.step == started_at + 1 || s.step % 10 == 0) {
      std::fprintf(stderr, "%s\n", line);
    }
    std::fflush(stderr);
  };
  events.on_save = [&](const std::string& dir) {
    if (tty) std::fprintf(stderr, "\r\033[K");
    std::fprintf(stderr, "train: saved %s\n", dir.c_str());
  };

  if (rank > 0) events = train::RunEvents{};
  const train::RunResult r = train::run_training(o.run, events);
  if (rank > 0) return;
  if (r.already_complete) {
    std::printf("the run in %s is complete: %lld steps (checkpoint %s); nothing to do\n", o.run.out.c_str(),
                static_cast<long long>(r.steps), r.final_checkpoint.c_str());
    return;
  }
  train::write_run_summary(o.run.out, o.device, r, device ? device->restarts() : 0);
  std::printf("trained %lld steps in %s: loss %.4f -> %.4f", static_cast<long long>(r.steps - r.resumed_from),
              clock_duration(r.seconds).c_str(), r.first_loss.value_or(NAN), r.last_loss.value_or(NAN));
  if (r.val_loss) std::printf(", validation loss %.4f", *r.val_loss);
  if (r.test) std::printf(", test loss %.4f (perplexity %.3f over %lld tokens)", r.test->loss, std::exp(r.test->loss),
                          static_cast<long long>(r.test->tokens));
  std::printf("\n  %lld trained tokens, %.0f a second; peak memory %.0f MB", static_cast<long long>(r.trained_tokens),
              r.seconds > 0 ? static_cast<double>(r.trained_tokens) / r.seconds : 0.0, r.peak_mb);
  if (r.ranks > 1)
    std::printf("\n  %d ranks; each put %.1f MB a step into the sum, %.1f s in all spent summing", r.ranks,
                static_cast<double>(r.reduced_bytes) / 1e6, r.reduce_seconds);
  std::printf("\n  skipped steps %lld, clamped weights %lld\n  %s: %s\n", static_cast<long long>(r.skipped_steps),
              static_cast<long long>(r.clamped_values), r.lora ? "adapter" : "model", r.final_checkpoint.c_str());
  if (r.lora)
    std::printf("  LoRA rank %d, alpha %g on %zu kinds of layer: %lld values trained, the base model untouched\n",
                r.lora->rank, r.lora->alpha, r.lora->targets.size(), static_cast<long long>(r.trained_values));
  if (r.device) {
    const runtime::DeviceGraphStats& d = *r.device;
    const double v = std::max(d.versions, 1);
    std::printf("  %s, weights %s, this process: %d kernels (%d programs) and %d host segments, %d compiles, %d reloads, "
                "%d restarts\n"
                "  per step: %.0f ms on the device, %.0f ms on the host (%d host segment runs beside the other "
                "sequence's kernels), %.1f ms writing %.0f KB of weights, %.0f ms lowering and %.0f ms installing in the "
                "background (%.0f ms of it all waited for)\n",
                o.device.c_str(), d.weights_inputs ? "inputs" : "baked", d.kernels, d.programs, d.host_segments, d.compiles, d.reloads,
                device ? device->restarts() : 0, d.device_ms / v, d.host_ms / v, d.host_beside_device, d.weight_ms / v,
                static_cast<double>(d.weight_bytes) / v / 1024.0, d.lower_ms / v, d.install_ms / v, d.wait_ms / v);
  }
}

}  // namespace

void add_train_command(CLI::App& app, std::vector<std::string> argv) {
  auto o = std::make_shared<TrainOpts>();
  train::RunOptions& r = o->run;
  train::TrainConfig& c = r.config;
  auto* cmd = app.add_subcommand("train", "Train a model on a token file or JSONL data, with resumable checkpoints");
  cmd->add_option("-m,--model", r.model_dir, "Model folder to start from (`orion init` makes one), or --init");
  cmd->add_option("--data", r.data,
                  "Token file (`orion data prepare`), or JSONL data: a folder with train.jsonl, valid.jsonl and "
                  "optionally test.jsonl, or one .jsonl file; records {\"text\"}, {\"prompt\", \"completion\"} or "
                  "{\"messages\"}")
      ->required();
  cmd->add_flag("--mask-prompt", r.mask_prompt,
                "JSONL: train on the answers only (the assistant's turns, the completion); the prompt is context");
  cmd->add_flag("--skip-long", c.skip_long, "JSONL: skip records longer than --seq + 1 tokens instead of cutting them");
  cmd->add_option("--buckets", c.buckets,
                  "JSONL: the sequence lengths batches are padded to, increasing, ending at --seq (default: every "
                  "16, 32, 64... on the cpu, 32, 64, 128... on an ANE device, where each compiles its kernels once)")
      ->delimiter(',');
  cmd->add_flag("--test", r.test, "JSONL: after the last step, the loss and perplexity on test.jsonl");
  cmd->add_option("--out", r.out, "Folder of checkpoints (step-NNNNNNNN, each a model folder) and metrics.jsonl")->required();
  cmd->add_option("--steps", c.steps, "Optimizer steps in all")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--batch", c.batch, "Sequences per micro-batch")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seq", c.seq, "Tokens per sequence")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--accum", c.accum, "Micro-batches per optimizer step (gradient accumulation)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--lr", c.lr, "Peak learning rate")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--min-lr-fraction", c.min_lr_fraction, "Where the cosine ends, as a fraction of the peak")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--warmup", c.warmup, "Warm-up steps (linear from 0)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--weight-decay", o->weight_decay, "AdamW's decoupled weight decay (matrices only)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--clip", o->clip, "Global gradient-norm clipping (0: none)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--precision", o->precision,
                  "f32, or f16: the ANE's numerics, every tensor rounded to fp16, with dynamic loss scaling "
                  "(default: f32 on the cpu, f16 on ane-sim and ane, which have no other)")
      ->check(CLI::IsMember({"f32", "f16"}));
  cmd->add_flag("--no-loss-scaling", o->no_loss_scaling, "Turn dynamic loss scaling off in f16");
  cmd->add_option("--device", o->device,
                  "Device to train on: cpu, or ane-sim / ane (forward and backward kernels on the device, the weight "
                  "gradients' sums, the loss and AdamW on the host; --seq a multiple of 32)")
      ->check(CLI::IsMember({"cpu", "ane-sim", "ane"}))
      ->capture_default_str();
  CLI::App* sim = add_train_device_options(cmd, o->ane);
  cmd->add_option("--threads", c.threads, "Threads (0: one per hardware thread); a resumed run is bit-identical with the same count")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--seed", c.seed, "Seed of the data order, and of the weights with --init")->capture_default_str();
  cmd->add_option("--rank-timeout", o->rank_timeout,
                  "Under mpirun: seconds a rank waits in the gradients' sum for the others before it ends the job "
                  "(a rank that hung); 0: no limit")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--save-every", r.save_every, "Save a checkpoint every N steps (0: only the last)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--keep", r.keep, "Checkpoints kept")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--resume", r.resume, "Continue from the newest checkpoint in --out (none: start afresh; a complete run: do nothing)");
  cmd->add_option("--eval-every", r.eval_every, "Validation loss every N steps (0: only after the last)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--eval-batches", r.eval_batches,
                  "Validation batches per evaluation (0: the whole validation split of JSONL data, 8 of a token file)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  auto* lora = cmd->add_option_group("LoRA", "Freeze the model and train a low-rank adapter (PEFT's layout)");
  CLI::Option* rank = lora->add_option("--lora", o->lora_rank,
                                       "Train a LoRA adapter of this rank instead of the weights; checkpoints are "
                                       "adapter folders (generate --lora, merge-lora)")
                          ->check(CLI::Range(1, 4096));
  lora->add_option("--lora-alpha", o->lora.alpha, "The adapter's alpha: its product is scaled by alpha / rank (default: the rank)")
      ->check(CLI::PositiveNumber)
      ->needs(rank);
  lora->add_option("--lora-targets", o->lora.targets,
                   "Layers adapted: q,k,v,o,gate,up,down or Hugging Face's module names (GPT-2: q,k,v together, o, up, "
                   "down); default: all of them")
      ->needs(rank);
  auto* scratch = cmd->add_option_group("New model (--init)", "With --init, the model trained is a new one, written to OUT/init");
  scratch->add_flag("--init", o->init, "Start from a new model made from the options below (as orion init makes it)");
  CLI::Option* arch = add_architecture_options(*scratch, o->model);
  cmd->callback([o, arch, scratch, sim, argv = std::move(argv)] {
    o->model.arch_given = arch->count() > 0;
    for (const CLI::Option* opt : scratch->get_options())
      if (opt->count() > 0) o->model.given.insert(opt->get_name());
    train_command(*o, argv, sim->count_all() > 0);
  });
}

}  // namespace orion::cli
