// orion.train: a training run as `orion train` runs it (train/train_run.h), the GIL released
// while it trains and taken for the callback after each step. Ctrl-C (or any exception the
// callback raises) ends the run after the step under way, with a checkpoint of that step that
// resume=True (or `orion train --resume`) continues; the exception is then raised again.
#include <pybind11/stl.h>

#include "bindings.h"
#include "core/process_memory.h"
#include "train/train_setup.h"

namespace orion::python {

namespace {

// What the callback is given after each step.
struct StepInfo {
  std::int64_t step = 0, steps = 0;
  double loss = 0, lr = 0, grad_norm = 0, seconds = 0;
  std::int64_t trained_tokens = 0;
  double tokens_per_s = 0;  // trained tokens (the loss's targets) a second in this step
  double resident_mb = 0, peak_mb = 0;
  std::optional<double> val_loss;
  bool skipped = false;
};

py::dict result_of(const train::RunResult& r) {
  py::dict d;
  d["steps"] = r.steps;
  d["resumed_from"] = r.resumed_from;
  d["stopped"] = r.stopped;
  d["already_complete"] = r.already_complete;
  d["first_loss"] = r.first_loss;
  d["last_loss"] = r.last_loss;
  d["val_loss"] = r.val_loss;
  d["test_loss"] = r.test ? std::optional<double>(r.test->loss) : std::nullopt;
  d["final_checkpoint"] = r.final_checkpoint;
  d["seconds"] = r.seconds;
  d["trained_tokens"] = r.trained_tokens;
  d["peak_mb"] = r.peak_mb;
  d["skipped_steps"] = r.skipped_steps;
  return d;
}

}  // namespace

void bind_train(py::module_& m) {
  py::class_<StepInfo>(m, "TrainStep", "One training step, as the callback of orion.train receives it.")
      .def_readonly("step", &StepInfo::step, "Steps done, this one included.")
      .def_readonly("steps", &StepInfo::steps, "Steps of the whole run.")
      .def_readonly("loss", &StepInfo::loss, "The step's mean loss (nats).")
      .def_readonly("lr", &StepInfo::lr)
      .def_readonly("grad_norm", &StepInfo::grad_norm, "The gradients' global norm before clipping.")
      .def_readonly("seconds", &StepInfo::seconds)
      .def_readonly("trained_tokens", &StepInfo::trained_tokens, "The targets the step's loss covered.")
      .def_readonly("tokens_per_s", &StepInfo::tokens_per_s, "Trained tokens a second over this step.")
      .def_readonly("resident_mb", &StepInfo::resident_mb, "The process's resident memory now, MB.")
      .def_readonly("peak_mb", &StepInfo::peak_mb, "The process's peak resident memory, MB.")
      .def_readonly("val_loss", &StepInfo::val_loss, "The validation loss when the step evaluated, else None.")
      .def_readonly("skipped", &StepInfo::skipped, "The gradients were not finite: the weights were left alone.")
      .def("__repr__", [](const StepInfo& s) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "<orion.TrainStep %lld/%lld loss %.4f, %.0f tok/s, peak %.0f MB>",
                      static_cast<long long>(s.step), static_cast<long long>(s.steps), s.loss, s.tokens_per_s, s.peak_mb);
        return std::string(buf);
      });

  const train::TrainConfig defaults;
  m.def(
      "train",
      [](const std::string& model_path, const std::string& data, const std::string& out, std::int64_t steps,
         std::optional<int> lora, const std::string& device, const py::object& on_step, std::int64_t batch,
         std::int64_t seq, std::int64_t accum, double lr, std::int64_t warmup, double weight_decay, double clip,
         const std::optional<std::string>& precision, int threads, std::uint64_t seed, std::int64_t save_every, int keep,
         bool resume, std::int64_t eval_every, std::int64_t eval_batches, bool mask_prompt, bool test,
         std::optional<double> lora_alpha, const std::optional<std::string>& lora_targets) {
        for (const auto& [name, v] : {std::pair{"steps", steps}, {"batch", batch}, {"seq", seq}, {"accum", accum}})
          if (v < 1) throw ArgumentError(std::string(name) + " must be 1 or more, not " + std::to_string(v));
        if (lora && *lora < 1) throw ArgumentError("lora is the adapter's rank: 1 or more, or None to train every weight");
        if (!on_step.is_none() && !PyCallable_Check(on_step.ptr())) throw ArgumentError("on_step must be callable or None");
        train::RunOptions run;
        run.model_dir = model_path;
        run.data = data;
        run.out = out;
        run.mask_prompt = mask_prompt;
        run.save_every = save_every;
        run.keep = keep;
        run.resume = resume;
        run.eval_every = eval_every;
        run.eval_batches = eval_batches;
        run.test = test;
        train::TrainConfig& c = run.config;
        c.steps = steps;
        c.batch = batch;
        c.seq = seq;
        c.accum = accum;
        c.lr = lr;
        c.warmup = warmup;
        c.adamw.weight_decay = weight_decay;
        c.adamw.clip_norm = clip;
        c.threads = threads;
        c.seed = seed;
        try {
          c.precision = train::train_precision(device, precision.value_or(""));
        } catch (const Error& e) {
          throw ArgumentError(e.what());
        }
        if (lora) run.lora = train::LoraOptions{.rank = *lora, .alpha = lora_alpha, .targets = lora_targets.value_or("")};

        // The callback's exception (KeyboardInterrupt from Ctrl-C too), raised again after the
        // checkpoint; `stop` ends the run at it.
        std::optional<py::error_already_set> raised;
        train::RunEvents events;
        events.on_step = [&](const train::StepStats& s, std::optional<double> val) {
          py::gil_scoped_acquire gil;
          if (raised) return;
          try {
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
            if (on_step.is_none()) return;
            on_step(StepInfo{.step = s.step, .steps = steps, .loss = s.loss, .lr = s.lr, .grad_norm = s.grad_norm,
                             .seconds = s.seconds, .trained_tokens = s.trained_tokens,
                             .tokens_per_s = s.seconds > 0 ? static_cast<double>(s.trained_tokens) / s.seconds : 0.0,
                             .resident_mb = resident_mb(), .peak_mb = peak_resident_mb(), .val_loss = val,
                             .skipped = s.skipped});
            // Ctrl-C during the callback, whose handler Python runs at its next chance.
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
          } catch (py::error_already_set& e) {
            raised.emplace(std::move(e));
          }
        };
        run.stop = [&] { return raised.has_value(); };
        train::RunResult r;
        {
          py::gil_scoped_release nogil;
          const std::unique_ptr<train::TrainDevice> on_device = train::attach_train_device(run, device, {}, {});
          r = train::run_training(run, events);
          if (!r.already_complete) train::write_run_summary(out, device, r, on_device ? on_device->restarts() : 0);
        }
        if (raised) {
          raised->restore();
          throw py::error_already_set();
        }
        return result_of(r);
      },
      py::arg("model_path"), py::kw_only(), py::arg("data"), py::arg("out"), py::arg("steps") = defaults.steps,
      py::arg("lora") = py::none(), py::arg("device") = "cpu", py::arg("on_step") = py::none(),
      py::arg("batch") = defaults.batch, py::arg("seq") = defaults.seq, py::arg("accum") = defaults.accum,
      py::arg("lr") = defaults.lr, py::arg("warmup") = defaults.warmup,
      py::arg("weight_decay") = defaults.adamw.weight_decay, py::arg("clip") = defaults.adamw.clip_norm,
      py::arg("precision") = py::none(), py::arg("threads") = 0, py::arg("seed") = 0, py::arg("save_every") = 0,
      py::arg("keep") = 3, py::arg("resume") = false, py::arg("eval_every") = 0, py::arg("eval_batches") = 0,
      py::arg("mask_prompt") = false, py::arg("test") = false, py::arg("lora_alpha") = py::none(),
      py::arg("lora_targets") = py::none(),
      R"(Trains the model folder `model_path` as `orion train -m MODEL_PATH` does, with the same options
under the same names (--save-every is save_every...): data is a token file (`orion data
prepare`) or JSONL data (a folder with train.jsonl and valid.jsonl, or one .jsonl file); out
the folder of checkpoints and metrics.jsonl; lora the rank of a LoRA adapter to train instead
of the weights; device "cpu", "ane-sim" or "ane".

on_step(step) is called after each step with an orion.TrainStep (loss, tokens_per_s, peak_mb,
val_loss...). Ctrl-C, or an exception raised by on_step, ends the run after the step under way
with a checkpoint of it, which resume=True continues; the exception is then raised again.
Returns a dict: steps, first_loss, last_loss, val_loss, test_loss, final_checkpoint, seconds...)");
}

}  // namespace orion::python
