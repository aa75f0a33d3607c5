#pragma once
// A tokenizer's vocabulary as a byte trie of the tokens' pieces, built once per model and
// shared by every constrained request: the mask of a step walks it with the grammar's matcher,
// so that the tokens that share a prefix share its work and a subtree whose prefix the grammar
// refuses is skipped whole. Tokens that are plain string text (no quote, backslash or control
// byte, whole UTF-8 characters) are also listed by their length in code points, so that inside a
// JSON string they are let through by a count instead of a walk, and the walk covers the others.
#include <cstdint>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace orion::text::constrain {

class VocabTrie {
 public:
  struct Node {
    std::int32_t children_begin = 0, children_end = 0;  // into nodes(), contiguous
    std::int32_t tokens_begin = 0, tokens_end = 0;      // into tokens(): the ids spelled up to here
    unsigned char byte = 0;                             // the byte that leads here from the parent
  };

  // Every token with a non-empty piece that is not a special token (tokenizer.h, is_special).
  explicit VocabTrie(const Tokenizer& tokenizer);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<std::int32_t>& tokens() const { return tokens_; }
  std::int32_t all_root() const { return all_root_; }
  // The trie of the tokens that are not plain string text.
  std::int32_t other_root() const { return other_root_; }
  // Plain tokens by length: plain_ids()[i] has plain_lengths()[i] code points, ascending.
  const std::vector<std::int32_t>& plain_ids() const { return plain_ids_; }
  const std::vector<std::int32_t>& plain_lengths() const { return plain_lengths_; }
  const std::string& piece(std::int32_t id) const { return pieces_[static_cast<std::size_t>(id)]; }
  int vocab_size() const { return static_cast<int>(pieces_.size()); }

 private:
  std::int32_t build(std::vector<std::int32_t>& ids);
  void build_node(std::int32_t node, const std::vector<std::int32_t>& ids, std::size_t lo, std::size_t hi, std::size_t depth);

  std::vector<std::string> pieces_;  // "" for a token left out
  std::vector<Node> nodes_;
  std::vector<std::int32_t> tokens_;
  std::int32_t all_root_ = 0, other_root_ = 0;
  std::vector<std::int32_t> plain_ids_, plain_lengths_;
};

}  // namespace orion::text::constrain
