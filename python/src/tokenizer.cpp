// orion.Tokenizer: encode, decode and chat templates of a model folder's tokenizer, the GIL
// released while it works.
#include <pybind11/stl.h>

#include "model/model_folder.h"
#include "py_tokenizer.h"
#include "serve/chat_messages.h"

namespace orion::python {

PyTokenizer PyTokenizer::from_folder(const std::string& dir) {
  PyTokenizer t;
  t.dir = dir;
  t.tokenizer = model::load_tokenizer(dir);
  if (std::optional<text::ChatTemplate> c = model::find_chat_template(dir))
    t.chat_template = std::make_shared<const text::ChatTemplate>(std::move(*c));
  return t;
}

const text::ChatTemplate& PyTokenizer::require_template() const {
  if (!chat_template)
    throw Error::in_file(dir, "has no chat template (tokenizer_config.json's chat_template, or a GGUF file's "
                              "tokenizer.chat_template)");
  return *chat_template;
}

std::string render_chat(const text::ChatTemplate& t, const py::handle& messages, const py::handle& tools,
                        bool add_generation_prompt) {
  if (!py::isinstance<py::list>(messages) && !py::isinstance<py::tuple>(messages))
    throw ArgumentError("messages must be a list of {\"role\", \"content\"} dicts, not " +
                        std::string(py::str(messages.get_type().attr("__name__"))));
  const nlohmann::json read = serve::read_messages(json_of(messages, "messages"));
  if (read.empty()) throw ArgumentError("messages is empty: a conversation needs at least one message");
  text::ChatRenderOptions o;
  o.add_generation_prompt = add_generation_prompt;
  if (!tools.is_none()) {
    if (!py::isinstance<py::list>(tools)) throw ArgumentError("tools must be a list of OpenAI function tools, or None");
    o.extra = nlohmann::ordered_json::object();
    o.extra["tools"] = ordered_json_of(tools, "tools");
  }
  py::gil_scoped_release nogil;
  return t.render(read, o);
}

void bind_tokenizer(py::module_& m) {
  py::class_<PyTokenizer>(m, "Tokenizer", R"(A model folder's tokenizer and chat template.

Tokenizer.from_pretrained(path) reads tokenizer.json (Hugging Face's format), tokenizer.model
(SentencePiece) or vocab.json + merges.txt (GPT-2's byte-level BPE) from a model folder, or
the tokenizer of a GGUF file; a loaded model's is model.tokenizer.)")
      .def_static(
          "from_pretrained",
          [](const std::string& path) {
            py::gil_scoped_release nogil;
            return PyTokenizer::from_folder(path);
          },
          py::arg("path"), "The tokenizer (and chat template, when there is one) of the model folder or GGUF file `path`.")
      .def(
          "encode",
          [](const PyTokenizer& t, const std::string& text) {
            py::gil_scoped_release nogil;
            return t.tokenizer->encode(text);
          },
          py::arg("text"),
          "The token ids of `text`, with no beginning-of-text token added (Model.encode adds the model's).")
      .def(
          "encode_batch",
          [](const PyTokenizer& t, const std::vector<std::string>& texts) {
            py::gil_scoped_release nogil;
            std::vector<std::vector<std::int32_t>> out;
            out.reserve(texts.size());
            for (const std::string& s : texts) out.push_back(t.tokenizer->encode(s));
            return out;
          },
          py::arg("texts"), "encode() of each of `texts`, the GIL released once for all.")
      .def(
          "decode",
          [](const PyTokenizer& t, const py::handle& ids) {
            const std::vector<std::int32_t> v = ids_of(ids, "ids");
            std::string s;
            {
              py::gil_scoped_release nogil;
              s = t.tokenizer->decode(v);
            }
            return text_of(s);
          },
          py::arg("ids"), "The text of token ids (bytes that are not UTF-8 replaced by U+FFFD).")
      .def(
          "apply_chat_template",
          [](const PyTokenizer& t, const py::handle& messages, bool add_generation_prompt, bool tokenize,
             const py::handle& tools) -> py::object {
            const std::string rendered = render_chat(t.require_template(), messages, tools, add_generation_prompt);
            if (!tokenize) return text_of(rendered);
            py::gil_scoped_release nogil;
            std::vector<std::int32_t> ids = t.tokenizer->encode(rendered);
            py::gil_scoped_acquire gil;
            return py::cast(ids);
          },
          py::arg("messages"), py::arg("add_generation_prompt") = true, py::arg("tokenize") = false,
          py::arg("tools") = py::none(),
          R"(The prompt the folder's chat template makes of `messages` (a list of {"role", "content"}
dicts, as OpenAI's API takes them; tool calls and tool results too), as transformers'
apply_chat_template renders it; with tokenize=True its token ids. Raises orion.ArgumentError
for a malformed message list, orion.Error when the folder has no template.)")
      .def_property_readonly("vocab_size", [](const PyTokenizer& t) { return t.tokenizer->vocab_size(); },
                             "One more than the largest token id.")
      .def_property_readonly("bos_id", [](const PyTokenizer& t) { return t.tokenizer->bos_id(); },
                             "The beginning-of-text token, or None.")
      .def_property_readonly("eos_id", [](const PyTokenizer& t) { return t.tokenizer->eos_id(); },
                             "The end-of-text token, or None.")
      .def_property_readonly("kind", [](const PyTokenizer& t) { return std::string(t.tokenizer->kind()); },
                             "\"bpe\", \"sentencepiece\" or \"tokenizer.json\".")
      .def_property_readonly("has_chat_template", [](const PyTokenizer& t) { return t.chat_template != nullptr; })
      .def("__repr__", [](const PyTokenizer& t) {
        return "<orion.Tokenizer " + std::string(t.tokenizer->kind()) + ", " + std::to_string(t.tokenizer->vocab_size()) +
               " tokens, from " + t.dir + ">";
      });
}

}  // namespace orion::python
