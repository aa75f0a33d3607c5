#include "engine/model_text.h"

#include <nlohmann/json.hpp>

#include "model/model_folder.h"

namespace orion::engine {

const text::Tokenizer& ModelText::tokenizer() const { return *folder_.tokenizer; }

const std::vector<std::int32_t>& ModelText::stop_ids() const { return folder_.stop_ids; }

std::vector<std::int32_t> ModelText::text_ids(std::string_view text) const { return folder_.text_ids(text); }

std::vector<std::int32_t> ModelText::chat_ids(const nlohmann::json& messages) const {
  text::ChatRenderOptions o;
  o.add_generation_prompt = true;
  return folder_.chat_ids(folder_.chat_template().render(messages, o));
}

}  // namespace orion::engine
