#pragma once
// orion.Tokenizer: a model folder's tokenizer and chat template, standing alone
// (Tokenizer.from_pretrained) or a loaded model's (model.tokenizer).
#include <memory>
#include <optional>
#include <string>

#include "bindings.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace orion::python {

struct PyTokenizer {
  std::shared_ptr<const text::Tokenizer> tokenizer;
  std::shared_ptr<const text::ChatTemplate> chat_template;  // null: the folder has none
  std::string dir;

  static PyTokenizer from_folder(const std::string& dir);
  // The template, or orion.Error saying that the folder has none.
  const text::ChatTemplate& require_template() const;
};

// The prompt for a conversation: `messages` checked as the server checks a request's (roles,
// content, tool calls; ArgumentError naming the message), `tools` (None or a list of OpenAI's
// function tools) handed to the template as apply_chat_template does.
std::string render_chat(const text::ChatTemplate& t, const py::handle& messages, const py::handle& tools,
                        bool add_generation_prompt);

}  // namespace orion::python
