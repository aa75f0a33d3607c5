// model.generate and model.chat: the loop `orion generate` and `orion chat` run
// (engine/generation.h), a token a step, with the GIL released while the model runs. A stream
// (orion.Stream) is that loop driven from Python: each next() runs steps until a piece of text
// is whole (stop strings held back as the server holds them: serve/stop_strings.h).
#include <pybind11/stl.h>

#include "engine/generation.h"
#include "py_generation.h"
#include "serve/stop_strings.h"
#include "serve/tool_calls.h"
#include "text/sampler.h"

namespace orion::python {

namespace {

struct SamplingArgs {
  int max_tokens = 64;
  text::SamplerOptions sampler;
  std::vector<std::string> stop;
};

// One generation on a session of its own, which goes back to the model when it ends.
class Stream {
 public:
  Stream(ModelRef model, std::vector<std::int32_t> prompt, SamplingArgs args)
      : model_(std::move(model)), ids_(std::move(prompt)), args_(std::move(args)), sampler_(args_.sampler),
        stops_(args_.stop) {}
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { finish(); }

  // Prefills the prompt (the GIL released by the caller).
  void start() {
    const model::ModelFolder& md = model_->folder();
    if (static_cast<std::int64_t>(ids_.size()) >= md.lm().context())
      throw Error("the prompt has " + std::to_string(ids_.size()) + " tokens; the context holds " +
                  std::to_string(md.lm().context()));
    session_ = model_->take_session();
    prompt_tokens_ = ids_.size();
    std::vector<float> logits = session_->prefill(ids_);
    generation_.emplace(*session_, sampler_, *md.tokenizer, std::move(logits), ids_,
                        engine::GenerationLimits{args_.max_tokens, md.stop_ids});
  }

  // The next piece's bytes, or with `all` the rest; "" once it has ended (the GIL released by
  // the caller). A piece may end inside a UTF-8 character (a byte token).
  std::string advance(bool all) {
    std::lock_guard lock(mutex_);
    std::string out;
    const bool stops = !args_.stop.empty();
    while (generation_ && !generation_->done()) {
      // Without stop strings the pieces go out as the tokenizer spells them, as `orion generate`
      // prints them: Python's decoder (the caller's) then makes the same text of them.
      const bool more = generation_->step([&](std::string_view piece) {
        if (stops) out += stops_.push(piece);
        else out += piece;
      });
      if (stops_.stopped()) generation_->stop("reached a stop string");
      if (!more || stops_.stopped()) {
        if (stops) out += stops_.flush();
        finish();
        break;
      }
      if (!all && !out.empty()) break;
    }
    text_ += out;
    return out;
  }

  bool done() const { return !generation_ || generation_->done(); }
  std::vector<std::int32_t> generated() const {
    return {ids_.begin() + static_cast<std::ptrdiff_t>(std::min(prompt_tokens_, ids_.size())), ids_.end()};
  }
  std::string stop_reason() const { return generation_ ? generation_->outcome().stop : ""; }
  std::size_t prompt_tokens() const { return prompt_tokens_; }
  const std::string& text() const { return text_; }
  const PyModel& model() const { return *model_; }
  // The stream's UTF-8 decoder (with the GIL).
  py::object& decoder() {
    if (!decoder_) decoder_ = py::module_::import("codecs").attr("getincrementaldecoder")("utf-8")("replace");
    return decoder_;
  }

  // Gives the session back (the generation's outcome stays readable).
  void finish() {
    if (session_) model_->give_back(std::move(session_));
  }

 private:
  ModelRef model_;
  std::vector<std::int32_t> ids_;
  SamplingArgs args_;
  text::Sampler sampler_;
  serve::StopStrings stops_;
  std::unique_ptr<engine::Decoder> session_;
  std::optional<engine::Generation> generation_;  // after session_ and ids_, which it refers to
  std::size_t prompt_tokens_ = 0;
  std::string text_;
  std::mutex mutex_;
  py::object decoder_;
};

SamplingArgs sampling_of(int max_tokens, float temperature, int top_k, float top_p, float repetition_penalty,
                         std::uint64_t seed, const py::handle& stop) {
  SamplingArgs a;
  if (max_tokens < 0) throw ArgumentError("max_tokens must be 0 or more");
  a.max_tokens = max_tokens;
  a.sampler.temperature = temperature;
  a.sampler.top_k = top_k;
  a.sampler.top_p = top_p;
  a.sampler.repetition_penalty = repetition_penalty;
  a.sampler.seed = seed;
  try {
    text::Sampler check(a.sampler);
  } catch (const Error& e) {
    throw ArgumentError(e.what());
  }
  if (py::isinstance<py::str>(stop)) {
    a.stop.push_back(stop.cast<std::string>());
  } else if (!stop.is_none()) {
    try {
      a.stop = stop.cast<std::vector<std::string>>();
    } catch (const py::cast_error&) {
      throw ArgumentError("stop must be a str, a list of str, or None");
    }
  }
  for (const std::string& s : a.stop)
    if (s.empty()) throw ArgumentError("stop: an empty stop string would stop before the first token");
  return a;
}

// Starts a generation; with `stream` hands it out, else runs it to the end and returns its text.
py::object run(ModelRef model, std::vector<std::int32_t> prompt, SamplingArgs args, bool stream) {
  auto s = std::make_shared<Stream>(std::move(model), std::move(prompt), std::move(args));
  {
    py::gil_scoped_release nogil;
    s->start();
  }
  if (stream) return py::cast(s);
  // A piece at a time, so that Ctrl-C ends a long generation between two tokens.
  std::string text;
  while (!s->done()) {
    {
      py::gil_scoped_release nogil;
      text += s->advance(false);
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
  return text_of(text);
}

// A chat answer as OpenAI's API returns a message: content, reasoning (a <think> block) and
// tool calls in the model's syntax, read as the server reads them.
py::dict message_of(const std::string& answer, const text::ChatTemplate& t, bool tools) {
  serve::AnswerSplitter split(tools ? serve::tool_syntax_of(t.source()) : serve::ToolSyntax::none,
                              serve::template_thinks(t.source()));
  serve::AnswerSplitter::Delta all = split.push(answer);
  const serve::AnswerSplitter::Delta last = split.finish();
  all.reasoning += last.reasoning;
  all.content += last.content;
  all.calls.insert(all.calls.end(), last.calls.begin(), last.calls.end());
  py::dict message;
  message["role"] = "assistant";
  message["content"] = text_of(all.content);
  if (!all.reasoning.empty()) message["reasoning_content"] = text_of(all.reasoning);
  if (!all.calls.empty()) {
    py::list calls;
    for (const serve::ToolCall& c : all.calls) {
      py::dict function;
      function["name"] = c.name;
      function["arguments"] = text_of(c.arguments);
      py::dict call;
      call["id"] = c.id;
      call["type"] = "function";
      call["function"] = function;
      calls.append(call);
    }
    message["tool_calls"] = calls;
  }
  return message;
}

}  // namespace

void bind_generation(py::module_& m, py::class_<PyModel, ModelRef>& model) {
  py::class_<Stream, std::shared_ptr<Stream>>(m, "Stream", R"(A generation under way (generate(..., stream=True),
chat(..., stream=True)): iterate it for the pieces of text as they come, each a whole number of
characters. Once it has ended, .ids holds the generated token ids and .stop_reason says why it
stopped. Each step runs with the GIL released.)")
      .def("__iter__", [](const std::shared_ptr<Stream>& s) { return s; })
      .def("__next__",
           [](Stream& s) {
             // Python's incremental decoder: the pieces' text is the text's, a character split over
             // byte tokens whole in one piece, bad bytes replaced as bytes.decode replaces them.
             for (;;) {
               std::string piece;
               {
                 py::gil_scoped_release nogil;
                 piece = s.advance(false);
               }
               const bool end = s.done();
               const py::str text = s.decoder().attr("decode")(py::bytes(piece), end);
               if (py::len(text) > 0) return text;
               if (end) throw py::stop_iteration();
             }
           })
      .def(
          "close",
          [](Stream& s) {
            py::gil_scoped_release nogil;
            s.finish();
          },
          "Ends the generation here and gives its session back to the model.")
      .def_property_readonly("ids", &Stream::generated, "The token ids generated so far.")
      .def_property_readonly("text", [](const Stream& s) { return text_of(s.text()); }, "The text handed out so far.")
      .def_property_readonly("stop_reason", &Stream::stop_reason, "Why the generation ended, as a sentence.")
      .def_property_readonly("prompt_tokens", &Stream::prompt_tokens)
      .def_property_readonly("done", &Stream::done);

  model.def(
      "generate",
      [](const ModelRef& self, const py::handle& prompt, int max_tokens, float temperature, int top_k, float top_p,
         float repetition_penalty, std::uint64_t seed, const py::handle& stop, bool stream) {
        SamplingArgs args = sampling_of(max_tokens, temperature, top_k, top_p, repetition_penalty, seed, stop);
        std::vector<std::int32_t> ids;
        if (py::isinstance<py::str>(prompt)) {
          const std::string text = prompt.cast<std::string>();
          py::gil_scoped_release nogil;
          ids = self->folder().text_ids(text);
        } else {
          ids = ids_of(prompt, "prompt");
          if (ids.empty()) throw ArgumentError("prompt: no token ids");
        }
        return run(self, std::move(ids), std::move(args), stream);
      },
      py::arg("prompt"), py::arg("max_tokens") = 64, py::arg("temperature") = text::SamplerOptions{}.temperature,
      py::arg("top_k") = text::SamplerOptions{}.top_k, py::arg("top_p") = text::SamplerOptions{}.top_p,
      py::arg("repetition_penalty") = 1.0f, py::arg("seed") = 0, py::arg("stop") = py::none(), py::arg("stream") = false,
      R"(The continuation of `prompt` (a str, run as `orion generate -p` runs it, or token ids), as
`orion generate` samples it with the same options (temperature 0: greedy). It ends after
max_tokens tokens, at an end-of-text id of the folder, or at a stop string (`stop`: a str or a
list; the stop string is left out). Returns the text; stream=True returns an orion.Stream that
yields the pieces as they come.)");

  model.def(
      "chat",
      [](const ModelRef& self, const py::handle& messages, const py::handle& tools, int max_tokens, float temperature,
         int top_k, float top_p, float repetition_penalty, std::uint64_t seed, const py::handle& stop,
         bool stream) -> py::object {
        SamplingArgs args = sampling_of(max_tokens, temperature, top_k, top_p, repetition_penalty, seed, stop);
        const text::ChatTemplate& t = self->tokenizer().require_template();
        const std::string rendered = render_chat(t, messages, tools, true);
        std::vector<std::int32_t> ids;
        {
          py::gil_scoped_release nogil;
          ids = self->folder().chat_ids(rendered);
        }
        py::object out = run(self, std::move(ids), std::move(args), stream);
        if (stream) return out;
        return message_of(out.cast<std::string>(), t, !tools.is_none());
      },
      py::arg("messages"), py::arg("tools") = py::none(), py::arg("max_tokens") = 512,
      py::arg("temperature") = text::SamplerOptions{}.temperature, py::arg("top_k") = text::SamplerOptions{}.top_k,
      py::arg("top_p") = text::SamplerOptions{}.top_p, py::arg("repetition_penalty") = 1.0f, py::arg("seed") = 0,
      py::arg("stop") = py::none(), py::arg("stream") = false,
      R"(The assistant's answer to `messages` (a list of {"role", "content"} dicts, as OpenAI's API
takes them), through the folder's chat template as `orion chat` renders it; `tools`: OpenAI's
function tools, handed to the template. Returns the answer as a message dict: {"role":
"assistant", "content", and where the model wrote them "reasoning_content" (a <think> block)
and "tool_calls"}. stream=True returns an orion.Stream of the answer's raw text instead.
Raises orion.ArgumentError for a malformed message list.)");
}

}  // namespace orion::python
