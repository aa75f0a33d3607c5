#pragma once
// A whole training run as `orion train` does it: the model folder and token file in, a folder of
// checkpoints and metrics out. It owns the policy around the trainer: starting afresh or
// resuming from the newest checkpoint that verifies, evaluating and saving every so many steps,
// always saving the last step, and logging every step to OUT/metrics.jsonl. Printing is the
// caller's (events), so the CLI, the demo and the tests share one loop.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "model/lora/lora_config.h"
#include "train/data/record_loader.h"
#include "train/trainer.h"

namespace orion::train {

// `--lora RANK`: the base model frozen, only a LoRA adapter trained (model/lora/). The
// checkpoints are adapter folders in PEFT's layout.
struct LoraOptions {
  int rank = 8;
  std::optional<double> alpha;  // default: the rank (scale 1)
  std::string targets;          // model::lora_targets' list; empty: every linear layer of the blocks
  bool rslora = false;
};

struct RunOptions {
  std::string model_dir;  // a model folder (config.json, model.safetensors, tokenizer files)
  std::string data;       // a token file (`orion data prepare`), or JSONL data (a folder or a .jsonl file)
  bool mask_prompt = false;  // JSONL: train on the answers only (train/data/record_encoder.h)
  std::string out;        // checkpoints OUT/step-NNNNNNNN/ and OUT/metrics.jsonl
  TrainConfig config;
  std::int64_t save_every = 0;  // 0: only the last step
  int keep = 3;                 // checkpoints kept
  bool resume = false;          // continue from the newest checkpoint in `out` (none: start afresh)
  std::int64_t eval_every = 0;  // 0: only after the last step
  std::int64_t eval_batches = 0;  // 0: the whole validation split of record data, 8 of a token stream
  bool test = false;              // the test split's loss after the last step
  std::optional<LoraOptions> lora;
  // Where the forward and backward pass runs (null: the CPU executor). It is handed a function
  // that saves the run's state as a checkpoint, for a device that must restart the process to
  // compile (runtime/supervisor.h).
  std::function<GradientRunnerFactory(std::function<void()> checkpoint)> gradients;
  // Data parallelism (Trainer::distribute): this process's job; null or one rank: alone. Rank 0
  // alone writes checkpoints and metrics; every rank reads `out` to resume.
  std::shared_ptr<dist::Collective> collective;
  // Asked after each step (and its event): true ends the run there, after a checkpoint of that
  // step, which --resume continues from (an embedding program's user pressing Ctrl-C).
  std::function<bool()> stop;
};

struct RunEvents {
  // Once, after JSONL data is tokenized into OUT/data.tok, with its summary.
  std::function<void(const struct DataSummary&)> on_data;
  // Once, after the model, data and any checkpoint are loaded.
  std::function<void(const Trainer&, std::int64_t resumed_from)> on_start;
  std::function<void(const StepStats&, std::optional<double> val_loss)> on_step;
  std::function<void(const std::string& checkpoint_dir)> on_save;
};

// What training draws from a record file: records used, cut and dropped, and the padding the
// bucketed batches add (one epoch).
struct DataSummary {
  std::string file;  // the token file trained on
  bool records = false;
  RecordLoaderStats train;
  std::vector<std::int64_t> buckets;
};

struct RunResult {
  std::int64_t steps = 0;         // steps done in all, resumed ones included
  std::int64_t resumed_from = 0;  // 0: started afresh
  bool already_complete = false;  // the newest checkpoint had all the steps: nothing was run
  bool stopped = false;           // RunOptions::stop ended it before the last step
  std::optional<double> first_loss, last_loss, val_loss;
  std::int64_t skipped_steps = 0, clamped_values = 0;
  std::string final_checkpoint;  // its folder is a model folder, or with LoRA an adapter folder
  std::optional<model::LoraConfig> lora;  // the adapter trained
  std::int64_t trained_values = 0;       // numbers the optimizer updates (all weights, or the adapter's)
  double seconds = 0;
  std::int64_t trained_tokens = 0, tokens = 0;  // this process's steps: targets trained, positions run
  double peak_mb = 0;                           // peak resident memory
  std::optional<EvalResult> test;               // --test
  DataSummary data;
  int ranks = 1;                     // the job's processes
  std::int64_t reduced_bytes = 0;    // each rank's bytes in a step's sum
  double reduce_seconds = 0;         // this process's time in the sums
  // This process's kernels, compiles and reloads, when the gradients ran on a device.
  std::optional<runtime::DeviceGraphStats> device;
};

RunResult run_training(const RunOptions& options, const RunEvents& events = {});

// OUT/summary.json, written atomically: the run's device, steps, trained_tokens, tokens and
// trained_tokens_per_s (this process's steps), peak_mb, test_loss (null without --test), the
// padding fraction of record data, this process's kernels,
// compiles, reloads and `restarts` (0 on the cpu), ms_per_step (the steps this process ran),
// final_loss and final_val_loss (null when absent), and on a device the per-step split
// (device, host and weight-write ms, weight bytes written, evaluations and surface bytes) and
// `projection`: what the step's kernels would take on each chip by the cost model
// (device/ane_cost_model.h; weights-as-inputs kernels). A projection, not a measurement. For
// scripts and the demo.
void write_run_summary(const std::string& out, const std::string& device, const RunResult& result, int restarts);

}  // namespace orion::train
