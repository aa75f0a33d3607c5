#pragma once
// Constrained decoding to a JSON grammar (text/constrain/json_grammar.h): the mask of each step
// is the set of tokens whose bytes the matcher takes from where the answer stands, found by
// walking the vocabulary's trie (text/constrain/vocab_trie.h) with a copy of the matcher per
// depth; inside a string, the plain tokens that fit its room pass by their length and only the
// others are walked. The model's end tokens are allowed exactly where the answer may end.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "text/constrain/json_grammar.h"
#include "text/constrain/json_matcher.h"
#include "text/constrain/token_constraint.h"
#include "text/constrain/vocab_trie.h"

namespace orion::text::constrain {

class JsonConstraint : public TokenConstraint {
 public:
  JsonConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabTrie> vocab,
                 std::vector<std::int32_t> end_ids);

  void mask(std::span<float> logits) override;
  void accept(std::int32_t token) override;
  bool complete() const override { return matcher_.complete(); }

  // The tokens the last mask() let through (1: allowed), for tests and benchmarks.
  const std::vector<std::uint8_t>& allowed() const { return allowed_; }
  // Fills allowed() for where the answer stands, without logits.
  void compute_allowed();

 private:
  void walk(std::int32_t node, std::size_t depth);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const VocabTrie> vocab_;
  std::vector<std::int32_t> end_ids_;
  JsonMatcher matcher_;
  std::vector<JsonMatcher> levels_;  // the walk's matcher at each depth
  std::vector<std::uint8_t> allowed_;
};

}  // namespace orion::text::constrain
