// orion.load and orion.Model: loading, the engine's sessions, and scoring (logits, loss) as
// NumPy arrays over Orion's own memory. Generation is generation.cpp's.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "engine/perplexity.h"
#include "model/weight_dtype.h"
#include "py_generation.h"
#include "py_model.h"
#include "runtime/device_factory.h"

namespace orion::python {

namespace {

// Runs `check`, turning its orion::Error into an ArgumentError.
template <class F>
void check_argument(F check) {
  try {
    check();
  } catch (const ArgumentError&) {
    throw;
  } catch (const Error& e) {
    throw ArgumentError(e.what());
  }
}

engine::DecoderOptions decoder_options_of(const LoadOptions& o) {
  engine::DecoderOptions d;
  check_argument([&] { d.device = runtime::device_kind(o.device); });
  if (!o.weights.empty()) check_argument([&] { (void)model::weight_dtype_from_name(o.weights); });
  if (o.engine != "fast" && o.engine != "graph") throw ArgumentError("unknown engine '" + o.engine + "' (fast or graph)");
  if (o.numerics != "f32" && o.numerics != "f16") throw ArgumentError("unknown numerics '" + o.numerics + "' (f32 or f16)");
  if (o.threads < 0) throw ArgumentError("threads must be 0 (one per hardware thread) or more");
  d.graph = o.engine == "graph";
  d.numerics = o.numerics == "f16" ? exec::Numerics::f16 : exec::Numerics::f32;
  d.weights = o.weights;
  d.threads = o.threads;
  d.run.package = o.package;
  d.lora = o.lora;
  return d;
}

// A NumPy array over `t`'s memory, which the array keeps alive: no copy.
py::array_t<float> array_of(const Tensor& t) {
  auto* kept = new Tensor(t.is_contiguous() ? t : t.contiguous());
  const py::capsule owner(kept, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape(kept->shape().begin(), kept->shape().end()), strides;
  for (const std::int64_t s : contiguous_strides(kept->shape())) strides.push_back(static_cast<py::ssize_t>(s * 4));
  return py::array_t<float>(shape, strides, kept->data<float>(), owner);
}

// The token ids `what` stands for: a str is tokenized as the model runs a text (BOS first where
// the model has one), a sequence of ints taken as it is.
std::vector<std::int32_t> ids_or_text(const PyModel& m, const py::handle& what, const char* name) {
  if (py::isinstance<py::str>(what)) {
    const std::string text = what.cast<std::string>();
    py::gil_scoped_release nogil;
    return m.folder().text_ids(text);
  }
  return ids_of(what, name);
}

}  // namespace

PyModel::PyModel(const std::string& path, const LoadOptions& o)
    : options_(o), decoder_options_(decoder_options_of(o)), md_(model::ModelFolder::load(path)) {
  tokenizer_.tokenizer = md_.tokenizer;
  tokenizer_.dir = path;
  try {
    tokenizer_.chat_template = std::make_shared<const text::ChatTemplate>(md_.chat_template());
  } catch (const Error&) {
    // No template: chat() and apply_chat_template() say so when asked.
  }
  chosen_ = engine::make_decoder(md_, decoder_options_, [](const std::string&) {});
  idle_.push_back(std::move(chosen_.decoder));
}

PyModel::~PyModel() = default;

std::unique_ptr<engine::Decoder> PyModel::take_session() {
  std::unique_lock lock(sessions_mutex_);
  if (idle_.empty() && chosen_.new_session) return chosen_.new_session();
  session_returned_.wait(lock, [&] { return !idle_.empty(); });
  std::unique_ptr<engine::Decoder> s = std::move(idle_.back());
  idle_.pop_back();
  return s;
}

void PyModel::give_back(std::unique_ptr<engine::Decoder> session) {
  session->reset();
  {
    std::lock_guard lock(sessions_mutex_);
    idle_.push_back(std::move(session));
  }
  session_returned_.notify_one();
}

Tensor PyModel::window_logits(std::span<const std::int32_t> ids) {
  std::lock_guard lock(score_mutex_);
  if (chosen_.run) {
    if (static_cast<std::int64_t>(ids.size()) > chosen_.run->max_window())
      throw Error("a window of " + std::to_string(ids.size()) + " tokens is longer than the package's " +
                  std::to_string(chosen_.run->max_window()));
    return chosen_.run->window_logits()(ids);
  }
  if (!scorer_) {
    engine::DecoderOptions d = decoder_options_;
    d.graph = true;
    scorer_ = engine::make_decoder(md_, d, [](const std::string&) {});
  }
  return static_cast<engine::GraphSession&>(*scorer_->decoder).window_logits(ids);
}

std::string PyModel::describe() const {
  if (chosen_.run) return options_.device + ", prefill and decode on the device";
  if (chosen_.kind == engine::EngineKind::graph) return options_.device + ", graph engine, " + options_.numerics + " numerics";
  return options_.device + ", fast engine, " + chosen_.weights + " weights";
}

void bind_model(py::module_& m) {
  py::class_<PyModel, ModelRef> model(m, "Model", R"(A model folder loaded to run (orion.load).

generate() and chat() produce text (stream=True: an iterator of pieces as they come);
logits() and loss() score token ids; .config is the folder's config.json, .tokenizer its
tokenizer. Every computation runs with the GIL released: threads generating on one model each
get a session of their own where the engine allows it (the fast CPU engine), and otherwise
wait for it in turn.)");
  m.def(
      "load",
      [](const std::string& path, const std::string& device, const std::optional<std::string>& weights,
         const std::string& engine, const std::string& numerics, const std::optional<std::string>& lora, int threads,
         const std::optional<std::string>& package) {
        LoadOptions o{.device = device, .weights = weights.value_or(""), .engine = engine, .numerics = numerics,
                      .lora = lora.value_or(""), .package = package.value_or(""), .threads = threads};
        py::gil_scoped_release nogil;
        return std::make_shared<PyModel>(path, o);
      },
      py::arg("path"), py::arg("device") = "cpu", py::arg("weights") = py::none(), py::arg("engine") = "fast",
      py::arg("numerics") = "f32", py::arg("lora") = py::none(), py::arg("threads") = 0, py::arg("package") = py::none(),
      R"(Loads the model folder or GGUF file `path` to run, as `orion generate -m PATH` does.

device: "cpu", "ane-sim" (the Neural Engine's emulator: the model compiled into the package
cache on first use) or "ane" (macOS on Apple silicon).
weights: the fast CPU engine's weight format, "f32", "f16", "q8" or "q4" (None: the folder's own).
engine: "fast" (hand-scheduled decoding) or "graph" (the reference executor, any numerics).
numerics: "f32", or "f16" to round every stored value as the ANE does (graph engine).
lora: a LoRA adapter folder to apply. threads: 0 for one per hardware thread.
package: on a device, a package from orion.compile() instead of the package cache's.
Raises orion.Error naming the file for a missing or malformed folder, orion.ArgumentError
for an unknown device, weights, engine or numerics.)");
  model
      .def_property_readonly(
          "config", [](const PyModel& self) { return python_of(nlohmann::json::parse(self.folder().lm().config_json())); },
          "The model's configuration as config.json holds it (a dict).")
      .def_property_readonly("tokenizer", [](const PyModel& self) { return self.tokenizer(); }, "The folder's orion.Tokenizer.")
      .def_property_readonly("path", [](const PyModel& self) { return self.folder().dir; })
      .def_property_readonly("arch", [](const PyModel& self) { return std::string(self.folder().lm().arch()); })
      .def_property_readonly("context", [](const PyModel& self) { return self.folder().lm().context(); },
                             "Positions the model attends over.")
      .def_property_readonly("vocab_size", [](const PyModel& self) { return self.folder().lm().vocab_size(); })
      .def_property_readonly("stop_ids", [](const PyModel& self) { return self.folder().stop_ids; },
                             "The ids generation stops at (config.json's and generation_config.json's eos_token_id).")
      .def_property_readonly("engine", &PyModel::describe, "What runs the model: the device, engine and weights.")
      .def(
          "encode",
          [](const PyModel& self, const std::string& text) {
            py::gil_scoped_release nogil;
            return self.folder().text_ids(text);
          },
          py::arg("text"), "The ids a text runs as: BOS first where the model has one, as generate and perplexity run it.")
      .def(
          "logits",
          [](PyModel& self, const py::handle& ids) {
            const std::vector<std::int32_t> v = ids_or_text(self, ids, "ids");
            Tensor t;
            {
              py::gil_scoped_release nogil;
              t = self.window_logits(v);
            }
            return array_of(t);
          },
          py::arg("ids"),
          R"(The logits of every position, a float32 NumPy array [len(ids), vocab_size] over Orion's own
memory (no copy), computed as `orion perplexity` computes them (the graph executor on the cpu,
the package on a device). `ids`: token ids, or a str run as model.encode(str).)")
      .def(
          "loss",
          [](PyModel& self, const py::handle& ids) {
            const std::vector<std::int32_t> v = ids_or_text(self, ids, "ids");
            if (v.size() < 2) throw ArgumentError("loss needs two or more ids: each position's loss is of the next id");
            auto* nll = new std::vector<double>(v.size() - 1);
            const py::capsule owner(nll, [](void* p) { delete static_cast<std::vector<double>*>(p); });
            {
              py::gil_scoped_release nogil;
              const Tensor t = self.window_logits(v);
              const auto vocab = static_cast<std::size_t>(t.dim(1));
              const std::span<const float> all = t.span<float>();
              for (std::size_t i = 0; i + 1 < v.size(); ++i) (*nll)[i] = engine::token_nll(all.subspan(i * vocab, vocab), v[i + 1]);
            }
            return py::array_t<double>({static_cast<py::ssize_t>(nll->size())}, {sizeof(double)}, nll->data(), owner);
          },
          py::arg("ids"),
          R"(Each position's next-token loss, -log softmax(logits[i])[ids[i + 1]] in nats, a float64 NumPy
array of len(ids) - 1; its mean is the loss `orion perplexity` reports for a text that fits one
window.)")
      .def("__repr__", [](const PyModel& self) {
        return "<orion.Model " + std::string(self.folder().lm().arch()) + " from " + self.folder().dir + " (" +
               self.describe() + ")>";
      });
  bind_generation(m, model);
}

}  // namespace orion::python
