#include "engine/model_text.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/model_folder.h"

namespace orion::engine {

const text::Tokenizer& ModelText::tokenizer() const { return *folder_.tokenizer; }

const std::vector<std::int32_t>& ModelText::stop_ids() const { return folder_.stop_ids; }

std::vector<std::int32_t> ModelText::text_ids(std::string_view text) const { return folder_.text_ids(text); }

std::vector<std::int32_t> ModelText::chat_ids(const nlohmann::json& messages, const nlohmann::ordered_json& variables,
                                              std::string_view tail) const {
  text::ChatRenderOptions o;
  o.add_generation_prompt = true;
  o.extra = variables;
  return folder_.chat_ids(folder_.chat_template().render(messages, o) + std::string(tail));
}

std::vector<std::int32_t> ModelText::chat_ids(const nlohmann::json& messages) const {
  return chat_ids(messages, nlohmann::ordered_json());
}

std::string ModelText::chat_template_source() const {
  try {
    return folder_.chat_template().source();
  } catch (const Error&) {
    return "";  // a folder without a template: no chat, no tools
  }
}

}  // namespace orion::engine
