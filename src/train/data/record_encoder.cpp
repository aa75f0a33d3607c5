#include "train/data/record_encoder.h"

#include <filesystem>

#include "core/error.h"
#include "model/any_model.h"
#include "model/formats/gguf.h"
#include "model/model_folder.h"

namespace orion::train {

namespace {

using nlohmann::json;

std::string trimmed(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return std::string(s);
}

json first(const json& messages, std::size_t n) {
  json out = json::array();
  for (std::size_t i = 0; i < n; ++i) out.push_back(messages[i]);
  return out;
}

}  // namespace

RecordEncoder RecordEncoder::load(const std::string& dir) {
  RecordEncoder e;
  e.tokenizer_ = model::load_tokenizer(dir);
  if (!e.tokenizer_->eos_id()) throw Error::in_file(dir, "the tokenizer has no end-of-text token to end records with");
  e.eot_ = *e.tokenizer_->eos_id();
  e.vocab_size_ = static_cast<std::uint64_t>(model::read_data_vocab_size(dir, *e.tokenizer_));
  // A folder of tokenizer files alone (no config.json) has no model's BOS to add.
  std::optional<std::int64_t> bos;
  if (model::is_gguf_file(dir) || std::filesystem::exists(model::model_config_path(dir))) bos = model::read_bos_token_id(dir);
  if (const auto prefix = e.tokenizer_->text_prefix())
    e.start_ = *prefix;
  else if (bos)
    e.start_ = {static_cast<std::int32_t>(*bos)};
  else
    e.start_ = {e.eot_};  // GPT-2: a document follows end-of-text
  e.chat_ = model::find_chat_template(dir);
  if (e.chat_) {
    // The end-of-turn text: what follows an assistant's content in a probe conversation.
    try {
      const json user = {{"role", "user"}, {"content", "x"}};
      const std::string a = e.chat_->render(json::array({user}), {.add_generation_prompt = true, .extra = nullptr});
      const std::string b = e.chat_->render(json::array({user, {{"role", "assistant"}, {"content", "y"}}}),
                                            {.add_generation_prompt = false, .extra = nullptr});
      const std::size_t y = b.rfind('y');
      if (b.starts_with(a) && y != std::string::npos && y >= a.size()) e.end_of_turn_ = b.substr(y + 1);
    } catch (const Error&) {
      // A template that needs more than the probe gives: earlier turns end at their content.
    }
  }
  return e;
}

EncodedRecord RecordEncoder::text(std::string_view text) const {
  EncodedRecord r;
  r.tokens = start_;
  const std::vector<std::int32_t> body = tokenizer_->encode(text);
  r.tokens.insert(r.tokens.end(), body.begin(), body.end());
  r.tokens.push_back(eot_);
  r.mask.assign(r.tokens.size(), 1);
  r.mask[0] = 0;
  return r;
}

EncodedRecord RecordEncoder::completion(std::string_view prompt, std::string_view completion, bool mask_prompt) const {
  if (chat_)
    return chat(json::array({{{"role", "user"}, {"content", prompt}}, {{"role", "assistant"}, {"content", completion}}}),
                nullptr, mask_prompt);
  EncodedRecord r = text(std::string(prompt) + std::string(completion));
  if (mask_prompt) {
    const std::size_t answer = start_.size() + tokenizer_->encode(prompt).size();
    for (std::size_t i = 0; i < std::min(answer, r.mask.size()); ++i) r.mask[i] = 0;
  }
  return r;
}

EncodedRecord RecordEncoder::chat(const json& messages, const json& tools, bool mask_prompt) const {
  if (!chat_)
    throw Error("a chat record needs a chat template, and the model folder's tokenizer_config.json has none");
  text::ChatRenderOptions whole{.add_generation_prompt = false, .extra = nullptr};
  if (!tools.is_null()) whole.extra = {{"tools", tools}};
  text::ChatRenderOptions prompt = whole;
  prompt.add_generation_prompt = true;
  const std::string all = chat_->render(messages, whole);
  EncodedRecord r;
  r.tokens = tokenizer_->encode(all);
  if (r.tokens.size() < 2) throw Error("the conversation renders to fewer than two tokens");
  r.mask.assign(r.tokens.size(), mask_prompt ? 0 : 1);
  r.mask[0] = 0;
  if (!mask_prompt) return r;
  bool any = false;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].value("role", "") != "assistant") continue;
    any = true;
    const std::string before = chat_->render(first(messages, i), prompt);
    if (!all.starts_with(before))
      throw Error("message " + std::to_string(i) + " (assistant): the template's prompt for it is not how the whole "
                  "conversation begins, so the answer cannot be told from the prompt");
    const std::size_t start = tokenizer_->encode(before).size();
    std::size_t end = r.tokens.size();
    if (i + 1 < messages.size()) {
      const json& c = messages[i].contains("content") ? messages[i].at("content") : json();
      const std::string content = c.is_string() ? trimmed(c.get<std::string>()) : "";
      std::size_t at = content.empty() ? before.size() : all.find(content, before.size());
      if (at == std::string::npos)
        throw Error("message " + std::to_string(i) + " (assistant): its content does not appear in the rendered "
                    "conversation, so where the answer ends is unknown");
      at += content.size();
      if (!end_of_turn_.empty() && std::string_view(all).substr(at).starts_with(end_of_turn_)) at += end_of_turn_.size();
      end = tokenizer_->encode(std::string_view(all).substr(0, at)).size();
    }
    for (std::size_t t = std::max<std::size_t>(start, 1); t < std::min(end, r.tokens.size()); ++t) r.mask[t] = 1;
  }
  if (!any) throw Error("the conversation has no assistant turn to train on (--mask-prompt trains the assistant's turns only)");
  return r;
}

}  // namespace orion::train
