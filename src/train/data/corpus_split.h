#pragma once
// How a tokenized corpus is split into training and validation tokens (`orion data prepare`):
// document by document, the last `val_fraction` of each document's tokens (rounded to the
// nearest token) is held out, and each part is followed by the end-of-text token, so that both
// splits are documents separated by end-of-text. For models whose texts start with a BOS token
// (Llama's config.json names bos_token_id; generation puts it before every prompt), each part
// also starts with it, so that the model learns what follows BOS.
// Why per document rather than the tail of the whole stream: with several inputs (books,
// years of speeches) the validation set then samples every one of them instead of being the
// last input alone; with one input the two are the same. An empty document adds nothing.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace orion::train {

struct SplitCorpus {
  std::vector<std::int32_t> train, val;
};

// Appends one document's tokens. Throws orion::Error unless 0 <= val_fraction < 1.
void add_document(SplitCorpus& corpus, std::span<const std::int32_t> tokens, std::int32_t eot_id, double val_fraction,
                  std::optional<std::int32_t> bos_id = std::nullopt);

}  // namespace orion::train
