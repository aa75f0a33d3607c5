#include "text/constrain/json_constraint.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace orion::text::constrain {

JsonConstraint::JsonConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabTrie> vocab,
                               std::vector<std::int32_t> end_ids)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), end_ids_(std::move(end_ids)), matcher_(*grammar_),
      levels_(1, matcher_) {}

void JsonConstraint::walk(std::int32_t node, std::size_t depth) {
  const std::vector<VocabTrie::Node>& nodes = vocab_->nodes();
  const VocabTrie::Node& n = nodes[static_cast<std::size_t>(node)];
  if (levels_.size() <= depth + 1) levels_.resize(depth + 2, matcher_);
  for (std::int32_t c = n.children_begin; c < n.children_end; ++c) {
    const VocabTrie::Node& child = nodes[static_cast<std::size_t>(c)];
    JsonMatcher& m = levels_[depth + 1];
    m = levels_[depth];
    if (!m.feed(child.byte)) continue;
    for (std::int32_t t = child.tokens_begin; t < child.tokens_end; ++t)
      allowed_[static_cast<std::size_t>(vocab_->tokens()[static_cast<std::size_t>(t)])] = 1;
    if (child.children_begin < child.children_end) walk(c, depth + 1);
  }
}

void JsonConstraint::compute_allowed() {
  allowed_.assign(static_cast<std::size_t>(vocab_->vocab_size()), 0);
  levels_[0] = matcher_;
  if (!matcher_.complete()) {
    if (const std::optional<std::int64_t> room = matcher_.string_room()) {
      // Plain text fits while its code points do; the rest goes through the walk.
      const std::vector<std::int32_t>& lengths = vocab_->plain_lengths();
      const auto end = std::upper_bound(lengths.begin(), lengths.end(),
                                        static_cast<std::int32_t>(std::min<std::int64_t>(*room, std::numeric_limits<std::int32_t>::max())));
      const std::vector<std::int32_t>& ids = vocab_->plain_ids();
      for (std::size_t i = 0, e = static_cast<std::size_t>(end - lengths.begin()); i < e; ++i)
        allowed_[static_cast<std::size_t>(ids[i])] = 1;
      walk(vocab_->other_root(), 0);
    } else {
      walk(vocab_->all_root(), 0);
    }
  }
  const bool end = matcher_.can_end();
  for (const std::int32_t id : end_ids_)
    if (id >= 0 && id < vocab_->vocab_size()) allowed_[static_cast<std::size_t>(id)] = end ? 1 : 0;
}

void JsonConstraint::mask(std::span<float> logits) {
  compute_allowed();
  const std::size_t n = std::min(logits.size(), allowed_.size());
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (!allowed_[i]) logits[i] = -std::numeric_limits<float>::infinity();
    else any = true;
  }
  for (std::size_t i = n; i < logits.size(); ++i) logits[i] = -std::numeric_limits<float>::infinity();
  if (!any) throw Error("constrained decoding: no token of the vocabulary can continue the answer here");
}

void JsonConstraint::accept(std::int32_t token) {
  if (token < 0 || token >= vocab_->vocab_size() || vocab_->piece(token).empty())
    throw Error("constrained decoding: token " + std::to_string(token) + " spells no text the grammar can take");
  JsonMatcher next = matcher_;
  if (!next.feed(vocab_->piece(token)))
    throw Error("constrained decoding: token " + std::to_string(token) + " (" + in_quotes(vocab_->piece(token)) +
                ") does not fit the grammar here");
  matcher_ = next;
}

}  // namespace orion::text::constrain
