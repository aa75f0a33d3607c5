#pragma once
// Chat templates: the Jinja template a Hugging Face model folder ships in
// tokenizer_config.json ("chat_template"), rendered with a conversation as transformers'
// apply_chat_template renders it (jinja/jinja_render.h), so that the prompt a model sees is
// the one it was trained on.
#include <string>

#include <nlohmann/json.hpp>

#include "text/jinja/jinja_ast.h"

namespace orion::text {

struct ChatRenderOptions {
  // Ends the prompt with the header of an assistant turn, for the model to continue.
  bool add_generation_prompt = true;
  // Further template variables, as apply_chat_template's keyword arguments: "tools",
  // "enable_thinking", "documents"... (a JSON object, its keys in the caller's order as the
  // template's tojson prints them; null: none).
  nlohmann::ordered_json extra;
};

class ChatTemplate {
 public:
  // tokenizer_config.json's "chat_template" (a string, or a list of {"name", "template"} from
  // which "default" is taken) and its special tokens (bos_token, eos_token... as strings or
  // {"content": ...} objects), which the template sees by name. Throws orion::Error naming the
  // file: no chat_template, a template with syntax Orion's renderer does not cover (by name).
  static ChatTemplate from_tokenizer_config(const std::string& path);
  // A template given as text; `special_tokens` is an object of name -> string.
  static ChatTemplate from_text(const std::string& text, const std::string& name,
                                const nlohmann::json& special_tokens = nlohmann::json::object());

  // The prompt for `messages` (a JSON array of {"role", "content", ...} objects, passed to the
  // template as they are). Throws orion::Error for a template error or a raise_exception.
  std::string render(const nlohmann::json& messages, const ChatRenderOptions& options = {}) const;

  const std::string& name() const { return template_.name; }
  // The template's text (what a server reads the model family's tool-call syntax from).
  const std::string& source() const { return source_; }

 private:
  jinja::Template template_;
  std::string source_;
  nlohmann::json special_tokens_ = nlohmann::json::object();
};

// A JSON value as a template value (objects keep their key order: sorted for nlohmann::json,
// as given for ordered_json).
jinja::Value json_to_value(const nlohmann::json& j);
jinja::Value json_to_value(const nlohmann::ordered_json& j);

}  // namespace orion::text
