#pragma once
// How one training record becomes tokens and a loss mask, for a model folder's tokenizer and
// chat template: the one place that decides what a fine-tune trains on.
//
// - text: the text after the model's start (its tokenizer's prefix, else config.json's BOS,
//   else end-of-text for GPT-2), then end-of-text; every token trained.
// - prompt/completion: with a chat template, a user turn and an assistant turn (as chat below);
//   without, the prompt's text then the completion's, then end-of-text.
// - chat (messages): the conversation rendered by the template, tokenized as rendered.
//
// With mask_prompt the loss covers only the answers, as mlx-lm's trainer does: an assistant
// turn's tokens start where the template's prompt for it ends (the turns before it rendered
// with add_generation_prompt, which must be a prefix of the whole rendering) and run to the
// end of the conversation for the last turn, or for an earlier one to the end of its content
// and the template's end-of-turn text (found by rendering a probe conversation). Every
// assistant turn is trained, everything else masked. Without mask_prompt every token is.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace orion::train {

struct EncodedRecord {
  std::vector<std::int32_t> tokens;
  std::vector<std::uint8_t> mask;  // 1: a target the loss covers
};

class RecordEncoder {
 public:
  // The tokenizer, start token and chat template (when tokenizer_config.json has one) of model
  // folder DIR; its weights are not read. Errors name the folder's files.
  static RecordEncoder load(const std::string& dir);

  bool has_chat_template() const { return chat_.has_value(); }
  std::uint64_t vocab_size() const { return vocab_size_; }
  std::int32_t eot_id() const { return eot_; }
  const text::Tokenizer& tokenizer() const { return *tokenizer_; }

  // Throw orion::Error saying what is wrong with the record (the caller adds file and line).
  EncodedRecord text(std::string_view text) const;
  EncodedRecord completion(std::string_view prompt, std::string_view completion, bool mask_prompt) const;
  // `messages`: a JSON array of {"role", "content", ...}; `tools`: null or the record's tools.
  EncodedRecord chat(const nlohmann::json& messages, const nlohmann::json& tools, bool mask_prompt) const;

 private:
  std::shared_ptr<const text::Tokenizer> tokenizer_;
  std::optional<text::ChatTemplate> chat_;
  std::vector<std::int32_t> start_;  // what every text record begins with
  std::int32_t eot_ = 0;
  std::uint64_t vocab_size_ = 0;
  std::string end_of_turn_;  // what the template writes after an assistant turn's content
};

}  // namespace orion::train
