#include "text/chat_template.h"

#include "core/error.h"
#include "core/json_parse.h"
#include "core/mapped_file.h"
#include "text/jinja/jinja_parser.h"
#include "text/jinja/jinja_render.h"

namespace orion::text {

namespace {

template <class Json>
jinja::Value to_value(const Json& j) {
  using jinja::Value;
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(j.template get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return Value::integer(static_cast<std::int64_t>(j.template get<std::uint64_t>()));
    case nlohmann::json::value_t::number_float: return Value::floating(j.template get<double>());
    case nlohmann::json::value_t::string: return Value::string(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      jinja::List l;
      for (const auto& x : j) l.push_back(to_value(x));
      return Value::of_list(std::move(l));
    }
    case nlohmann::json::value_t::object: {
      Value d = Value::of_dict();
      for (const auto& [k, x] : j.items()) d.set(k, to_value(x));
      return d;
    }
    default: return Value{};
  }
}

}  // namespace

jinja::Value json_to_value(const nlohmann::json& j) { return to_value(j); }
jinja::Value json_to_value(const nlohmann::ordered_json& j) { return to_value(j); }

ChatTemplate ChatTemplate::from_text(const std::string& text, const std::string& name,
                                     const nlohmann::json& special_tokens) {
  ChatTemplate t;
  t.template_ = jinja::parse_template(text, name);
  t.source_ = text;
  t.special_tokens_ = special_tokens;
  return t;
}

ChatTemplate ChatTemplate::from_tokenizer_config(const std::string& path) {
  const auto file = MappedFile::open(path);
  const nlohmann::json config =
      parse_json(std::string_view(reinterpret_cast<const char*>(file->bytes().data()), file->size()), path);
  if (!config.is_object()) throw Error::in_file(path, "tokenizer_config.json is not a JSON object");
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null())
    throw Error::in_file(path, "no \"chat_template\": the model ships no chat template (a base model?)");
  std::string text;
  if (it->is_string()) {
    text = it->get<std::string>();
  } else if (it->is_array()) {
    for (const auto& t : *it)
      if (t.is_object() && t.value("name", "") == "default" && t.contains("template") && t["template"].is_string())
        text = t["template"].get<std::string>();
    if (text.empty()) throw Error::in_file(path, "\"chat_template\" is a list without a \"default\" template");
  } else {
    throw Error::in_file(path, "\"chat_template\" is neither a string nor a list of named templates");
  }
  // The special tokens the template may name, as transformers passes them: their text.
  nlohmann::json special = nlohmann::json::object();
  for (const auto& [k, v] : config.items()) {
    if (k.size() < 6 || k.compare(k.size() - 6, 6, "_token") != 0) continue;
    if (v.is_string()) special[k] = v;
    else if (v.is_object() && v.contains("content") && v["content"].is_string()) special[k] = v["content"];
  }
  return from_text(text, path + " (chat_template)", special);
}

std::string ChatTemplate::render(const nlohmann::json& messages, const ChatRenderOptions& options) const {
  if (!messages.is_array()) throw Error(template_.name + ": the messages are not a list");
  jinja::Dict vars;
  for (const auto& [k, v] : special_tokens_.items()) vars.emplace_back(k, json_to_value(v));
  vars.emplace_back("messages", json_to_value(messages));
  // As transformers passes them: None unless the caller gives some.
  vars.emplace_back("tools", jinja::Value::none());
  vars.emplace_back("documents", jinja::Value::none());
  vars.emplace_back("add_generation_prompt", jinja::Value::boolean(options.add_generation_prompt));
  if (options.extra.is_object())
    for (const auto& [k, v] : options.extra.items()) vars.emplace_back(k, json_to_value(v));
  return jinja::render(template_, vars);
}

}  // namespace orion::text
