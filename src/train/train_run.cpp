#include "train/train_run.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "device/ane_cost_model.h"
#include "model/any_model.h"
#include "model/formats/gguf.h"
#include "model/lora/lora_adapter.h"
#include "model/formats/config_json.h"
#include "model/model_folder.h"
#include "train/checkpoint.h"
#include "train/model_loss.h"
#include "train/metrics_log.h"
#include "core/process_memory.h"
#include "train/data/jsonl_records.h"
#include "train/data/token_file.h"
#include "train/train_data.h"

namespace orion::train {

namespace fs = std::filesystem;

namespace {

// The files of a model folder that are neither its config nor its weights: the tokenizer's
// (vocab.json and merges.txt, or SentencePiece's tokenizer.model), which every checkpoint
// carries so that it is a model folder of its own. A checkpoint's own manifest is not one:
// training may start from a checkpoint folder.
std::vector<std::string> tokenizer_files(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name == model::kConfigFile || name == "checkpoint.json" || name.ends_with(".safetensors") ||
        name.starts_with("."))
      continue;
    files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The LoRA config of `o` for `lm`, and the adapter a run starts from.
model::LoraConfig lora_config(const LoraOptions& o, const model::CausalLm& lm) {
  model::LoraConfig c;
  c.rank = o.rank;
  c.alpha = o.alpha.value_or(static_cast<double>(o.rank));
  c.rslora = o.rslora;
  c.targets = model::lora_targets(lm.arch(), o.targets);
  if (c.rank < 1) throw Error("--lora: the rank must be at least 1");
  return c;
}

// A resumed run must have the LoRA options (or none) its checkpoint was made with.
void check_same_lora(const LoadedCheckpoint& c, const std::optional<model::LoraConfig>& lora) {
  const nlohmann::json have = c.state.value("lora", nlohmann::json()), want = lora ? lora->identity() : nlohmann::json();
  if (have == want) return;
  const auto say = [](const nlohmann::json& j) { return j.is_null() ? std::string("no LoRA (all weights trained)") : "LoRA " + j.dump(); };
  throw Error::in_file(c.dir, "was made with " + say(have) + "; this run asks for " + say(want) +
                                  ": resume with the same --lora options, or choose another --out");
}

}  // namespace

RunResult run_training(const RunOptions& o, const RunEvents& events) {
  Stopwatch total;
  RunResult result;
  const bool writer = !o.collective || o.collective->rank() == 0;
  const fs::path out(o.out);
  if (!o.resume && has_checkpoint_folders(o.out))
    throw Error::in_file(o.out, "has checkpoints already: --resume continues from the newest, or choose another --out");

  std::optional<LoadedCheckpoint> checkpoint;
  if (o.resume) checkpoint = load_latest_checkpoint(o.out);
  if (checkpoint && checkpoint->step >= o.config.steps) {
    result.already_complete = true;
    result.steps = result.resumed_from = checkpoint->step;
    result.final_checkpoint = checkpoint->dir;
    return result;
  }

  if (model::is_gguf_file(o.model_dir))
    throw Error::in_file(o.model_dir, "is a GGUF file; training starts from a model folder (GGUF files are read for "
                                      "generate, chat, serve, perplexity and data prepare)");
  const model::AnyModel model = model::load_any_model(o.model_dir);
  const model::CausalLm& lm = model::causal_lm(model);
  const std::string config_json = model::read_config_text(model::model_config_path(o.model_dir));
  const std::vector<std::string> model_files = tokenizer_files(o.model_dir);
  RunOptions run = o;
  if (is_jsonl_data(o.data)) {
    // Tokenized afresh at every start (a resumed run too): the records and their order are a
    // pure function of the files and options.
    std::error_code ec;
    fs::create_directories(out, ec);
    // Each rank of a data-parallel job tokenizes for itself (the ranks may not share a disk).
    run.data = (out / (writer ? std::string("data.tok") : "data.rank" + std::to_string(o.collective->rank()) + ".tok")).string();
    prepare_jsonl(o.model_dir, o.data, o.mask_prompt, run.data);
  } else if (o.mask_prompt) {
    throw Error::in_file(o.data, "is a token file: --mask-prompt applies to JSONL data (its mask is made when it is tokenized)");
  }
  auto data = std::make_shared<const TokenFile>(TokenFile::open(run.data));
  if (data->has_records() && run.config.buckets.empty()) run.config.buckets = run_buckets(run.config, static_cast<bool>(o.gradients));
  if (run.eval_batches <= 0 && !data->has_records()) run.eval_batches = 8;
  if (o.test && data->size(Split::test) == 0)
    throw Error::in_file(o.data, "has no test split (a dataset folder's test.jsonl) for --test");
  if (data->vocab_size() > static_cast<std::uint64_t>(lm.vocab_size()))
    throw Error::in_file(run.data, "was tokenized for a vocabulary of " + std::to_string(data->vocab_size()) +
                                     " tokens; the model " + o.model_dir + " has " + std::to_string(lm.vocab_size()));
  if (o.config.seq > lm.context())
    throw Error("--seq " + std::to_string(o.config.seq) + " is longer than the model's context of " +
                std::to_string(lm.context()));

  std::function<void()> save_now;  // set below, once there is a trainer to save
  GradientRunnerFactory gradients;
  LossGraphFn loss = model_loss_graph(model), ane_loss = model_ane_loss_graph(model);
  TensorMap initial;
  if (o.lora) {
    // The base weights become constants of the graphs: the adapter is all the trainer sees (a
    // 4-bit base stays in its words).
    result.lora = lora_config(*o.lora, lm);
    initial = model::init_lora_adapter(lm.decoding_graph(1, 0, false), *result.lora, o.config.seed).weights;
    loss = lora_loss_graph(loss, frozen_base(model), *result.lora);
    // A device's kernels bake the base (fp16 on the ANE) and lower no product with a computed
    // weight: they take it widened, once for every bucket's graph (the model keeps it).
    if (o.gradients) ane_loss = lora_loss_graph(ane_loss, FrozenBase{lm.weights(), {}}, *result.lora);
  } else {
    initial = lm.weights();
  }
  if (checkpoint) check_same_lora(*checkpoint, result.lora);
  if (o.gradients) {
    // A device differentiates the model's loss in its ANE form, one window at a time.
    gradients = [device = o.gradients([&save_now] { save_now(); }), ane_loss](
                    const LossGraphFn&, std::span<const std::string> wrt, const TrainConfig& c) { return device(ane_loss, wrt, c); };
  }
  result.data.file = run.data;
  result.data.records = data->has_records();
  result.data.buckets = run.config.buckets;
  TrainData batches = make_train_data(data, run.config, &result.data.train);
  if (events.on_data) events.on_data(result.data);
  Trainer trainer(loss, initial, run.config, std::move(batches), gradients);
  if (o.collective) {
    trainer.distribute(o.collective);
    result.ranks = o.collective->size();
  }
  for (const auto& [name, t] : trainer.params()) result.trained_values += t.numel();
  if (checkpoint) {
    const TensorMap params = result.lora ? model::from_peft_names(checkpoint->params, lm.arch(), checkpoint->dir)
                                         : checkpoint->params;
    trainer.restore(params, checkpoint->optimizer, checkpoint->state, checkpoint->dir);
    result.resumed_from = checkpoint->step;
  }
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw Error::in_file(o.out, "cannot be created: " + ec.message());
  const std::string metrics_path = (out / "metrics.jsonl").string();
  // Rank 0 alone writes the metrics and the checkpoints.
  std::optional<MetricsLog> metrics;
  if (writer) metrics = checkpoint ? MetricsLog::resume(metrics_path, result.resumed_from) : MetricsLog::create(metrics_path);
  if (events.on_start) events.on_start(trainer, result.resumed_from);

  const auto save = [&] {
    if (!writer) return;
    CheckpointData d;
    d.step = trainer.steps_done();
    d.optimizer = trainer.optimizer_state();
    d.state = trainer.state();
    TensorMap peft;
    if (result.lora) {
      // An adapter folder: what generate --lora, merge-lora and PEFT read.
      d.config_file = model::kAdapterConfigFile;
      d.weights_file = model::kAdapterWeightsFile;
      d.config_json = model::lora_adapter_config_json(*result.lora, lm.arch(), o.model_dir);
      peft = model::to_peft_names(trainer.params(), lm.arch());
      d.params = &peft;
      d.state["lora"] = result.lora->identity();
    } else {
      d.config_json = config_json;
      d.params = &trainer.params();
      d.model_files = model_files;
    }
    save_checkpoint(o.out, d, o.keep);
    result.final_checkpoint = (out / checkpoint_folder_name(d.step)).string();
    if (events.on_save) events.on_save(result.final_checkpoint);
  };
  save_now = save;

  while (trainer.steps_done() < o.config.steps) {
    const StepStats s = trainer.step();
    const bool last = s.step == o.config.steps;
    std::optional<double> val;
    if (trainer.has_validation() && (last || (o.eval_every > 0 && s.step % o.eval_every == 0)))
      val = trainer.evaluate(run.eval_batches);
    if (!result.first_loss) result.first_loss = s.loss;
    result.last_loss = s.loss;
    if (val) result.val_loss = val;
    MetricsRecord r;
    r.step = s.step;
    r.loss = s.loss;
    r.lr = s.lr;
    r.tokens_per_s = static_cast<double>(s.tokens) / s.seconds;
    r.val_loss = val;
    r.grad_norm = s.grad_norm;
    r.loss_scale = s.loss_scale;
    r.skipped = trainer.skipped_steps();
    r.clamped = trainer.clamped_values();
    r.time_s = total.seconds();
    r.trained_tokens = s.trained_tokens;
    r.trained_tokens_per_s = static_cast<double>(s.trained_tokens) / s.seconds;
    r.peak_mb = peak_resident_mb();
    result.trained_tokens += s.trained_tokens;
    result.tokens += s.tokens;
    result.reduced_bytes = s.reduced_bytes;
    result.reduce_seconds += s.reduce_seconds;
    if (metrics) metrics->append(r);
    if (events.on_step) events.on_step(s, val);
    const bool stop = !last && o.stop && o.stop();
    if (last || stop || (o.save_every > 0 && s.step % o.save_every == 0)) save();
    if (stop) {
      result.stopped = true;
      break;
    }
  }
  if (o.test && !result.stopped) result.test = trainer.evaluate_test();
  result.steps = trainer.steps_done();
  result.peak_mb = peak_resident_mb();
  result.skipped_steps = trainer.skipped_steps();
  result.clamped_values = trainer.clamped_values();
  if (const runtime::DeviceGraphStats* d = trainer.device_stats()) result.device = *d;
  result.seconds = total.seconds();
  return result;
}

void write_run_summary(const std::string& out, const std::string& device, const RunResult& r, int restarts) {
  const auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  const std::int64_t ran = r.steps - r.resumed_from;
  nlohmann::json j = {{"device", device},
                      {"steps", r.steps},
                      {"resumed_from", r.resumed_from},
                      {"kernels", r.device ? r.device->kernels : 0},
                      {"programs", r.device ? r.device->programs : 0},
                      {"compiles", r.device ? r.device->compiles : 0},
                      {"reloads", r.device ? r.device->reloads : 0},
                      {"restarts", restarts},
                      {"ms_per_step", ran > 0 ? 1000.0 * r.seconds / static_cast<double>(ran) : 0.0},
                      {"final_loss", opt(r.last_loss)},
                      {"final_val_loss", opt(r.val_loss)},
                      {"trained_values", r.trained_values},
                      {"trained_tokens", r.trained_tokens},
                      {"tokens", r.tokens},
                      {"trained_tokens_per_s", r.seconds > 0 ? static_cast<double>(r.trained_tokens) / r.seconds : 0.0},
                      {"peak_mb", r.peak_mb},
                      {"test_loss", r.test ? nlohmann::json(r.test->loss) : nlohmann::json(nullptr)},
                      {"test_tokens", r.test ? nlohmann::json(r.test->tokens) : nlohmann::json(nullptr)},
                      {"lora", r.lora ? r.lora->identity() : nlohmann::json(nullptr)},
                      {"ranks", r.ranks},
                      {"reduced_bytes_per_step", r.reduced_bytes},
                      {"reduce_seconds", r.reduce_seconds}};
  if (r.data.records) {
    const RecordLoaderStats& d = r.data.train;
    j["data"] = {{"records", d.records},
                 {"truncated", d.truncated},
                 {"skipped", d.skipped},
                 {"dropped", d.dropped},
                 {"buckets", r.data.buckets},
                 {"trained_tokens_per_epoch", d.trained_tokens},
                 {"padding_fraction", d.padding_fraction()}};
  }
  if (r.device) {
    const runtime::DeviceGraphStats& d = *r.device;
    const double v = std::max(d.versions, 1);
    j["weights"] = d.weights_inputs ? "inputs" : "baked";
    j["per_step"] = {{"device_ms", d.device_ms / v},
                     {"host_ms", d.host_ms / v},
                     {"weight_write_ms", d.weight_ms / v},
                     {"weight_bytes", static_cast<double>(d.weight_bytes) / v},
                     {"lower_ms", d.lower_ms / v},
                     {"install_ms", d.install_ms / v},
                     {"evaluations", static_cast<double>(d.evaluations) / v},
                     {"surface_bytes", static_cast<double>(d.surface_bytes) / v}};
    if (!d.kernel_works.empty()) {
      // Each kernel runs once per sequence of a step: evaluations / kernels runs of the set.
      const double runs = static_cast<double>(d.evaluations) / v / static_cast<double>(d.kernel_works.size());
      nlohmann::json per_chip;
      for (const device::AneChip& chip : device::ane_chips()) {
        double ms = 0;
        for (const device::KernelWork& w : d.kernel_works) ms += device::projected_ms(chip, w);
        per_chip[chip.name] = ms * runs;
      }
      j["projection"] = {{"what", "the step's kernels on the device by Orion's cost model (docs/ane/COST_MODEL.md): a projection, "
                                  "not a measurement; the host's share (optimizer, host segments) not included"},
                         {"device_ms_per_step", per_chip}};
    }
  }
  write_file_atomic((fs::path(out) / "summary.json").string(), j.dump(2) + "\n");
}

}  // namespace orion::train
