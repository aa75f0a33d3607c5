#pragma once
// A split of a record dataset (JSONL training data, train/data/jsonl_records.h): records one
// after another, each with a per-token loss mask. mask[i] is 1 when token i is a target the
// loss covers (an answer's token under --mask-prompt, every token of plain text), 0 when it is
// context only; a record's first token is never a target. Record r is tokens [starts[r],
// starts[r + 1]) (the last runs to the end).
#include <cstdint>
#include <span>
#include <vector>

namespace orion::train {

struct Records {
  using size_type = std::uint64_t;
  std::vector<std::int32_t> tokens;
  std::vector<std::uint8_t> mask;
  std::vector<std::uint64_t> starts;

  std::size_t count() const { return starts.size(); }
  std::uint64_t begin_of(std::size_t r) const { return starts[r]; }
  std::uint64_t end_of(std::size_t r) const { return r + 1 < starts.size() ? starts[r + 1] : tokens.size(); }
  std::uint64_t length(std::size_t r) const { return end_of(r) - begin_of(r); }
  std::span<const std::int32_t> tokens_of(std::size_t r) const {
    return std::span<const std::int32_t>(tokens).subspan(begin_of(r), length(r));
  }
  std::span<const std::uint8_t> mask_of(std::size_t r) const {
    return std::span<const std::uint8_t>(mask).subspan(begin_of(r), length(r));
  }
  // Appends one record; `mask` is as long as `tokens`.
  void add(std::span<const std::int32_t> record, std::span<const std::uint8_t> record_mask) {
    starts.push_back(tokens.size());
    tokens.insert(tokens.end(), record.begin(), record.end());
    mask.insert(mask.end(), record_mask.begin(), record_mask.end());
  }
  // Tokens the loss covers (the first of each record never counts).
  std::uint64_t trained_tokens() const {
    std::uint64_t n = 0;
    for (std::size_t r = 0; r < count(); ++r)
      for (std::uint64_t i = begin_of(r) + 1; i < end_of(r); ++i) n += mask[i] != 0;
    return n;
  }
};

}  // namespace orion::train
