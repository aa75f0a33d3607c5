#pragma once
// A model folder's text as a server needs it, apart from the folder: a prompt (a text, or a
// conversation through the folder's chat template) as the ids it runs as, the tokenizer that
// spells the answer, and the ids generation stops at. What the folder knows
// (model/model_folder.h) reached through the engine layer, so that `serve` depends on `engine`
// alone (docs/ARCHITECTURE.md).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "text/tokenizer.h"

namespace orion::model {
struct ModelFolder;
}

namespace orion::engine {

class ModelText {
 public:
  // `folder` must outlive this.
  explicit ModelText(const model::ModelFolder& folder) : folder_(folder) {}

  const text::Tokenizer& tokenizer() const;
  // config.json's and generation_config.json's end-of-text ids.
  const std::vector<std::int32_t>& stop_ids() const;
  // The ids a text runs as (ModelFolder::text_ids: BOS first where the model has one).
  std::vector<std::int32_t> text_ids(std::string_view text) const;
  // `messages` (OpenAI's array of {"role", "content"}) rendered by the folder's chat template
  // with the assistant's turn opened, as ids. Throws orion::Error when the folder has no
  // template or the template refuses the conversation.
  // `variables`: the template's further variables (tools, enable_thinking...; null for none);
  // `tail`: text the answer is made to start with, after the assistant's turn opens.
  std::vector<std::int32_t> chat_ids(const nlohmann::json& messages, const nlohmann::ordered_json& variables,
                                     std::string_view tail = {}) const;
  std::vector<std::int32_t> chat_ids(const nlohmann::json& messages) const;
  // The chat template's text ("" when the folder has none).
  std::string chat_template_source() const;

 private:
  const model::ModelFolder& folder_;
};

}  // namespace orion::engine
