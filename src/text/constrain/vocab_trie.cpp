#include "text/constrain/vocab_trie.h"

#include <algorithm>
#include <numeric>

namespace orion::text::constrain {

namespace {

// Code points of `s` when it is plain JSON string text, -1 otherwise.
std::int32_t plain_length(const std::string& s) {
  std::int32_t n = 0;
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t len = 1;
    if (b == '"' || b == '\\' || b < 0x20) return -1;
    if (b >= 0x80) {
      unsigned char lo = 0x80, hi = 0xBF;
      if (b >= 0xC2 && b <= 0xDF) len = 2;
      else if (b >= 0xE0 && b <= 0xEF) len = 3, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
      else if (b >= 0xF0 && b <= 0xF4) len = 4, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
      else return -1;
      if (i + len > s.size()) return -1;
      for (std::size_t k = 1; k < len; ++k) {
        const auto c = static_cast<unsigned char>(s[i + k]);
        if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return -1;
      }
    }
    i += len;
    ++n;
  }
  return n;
}

}  // namespace

VocabTrie::VocabTrie(const Tokenizer& tokenizer) {
  const int vocab = tokenizer.vocab_size();
  pieces_.resize(static_cast<std::size_t>(vocab));
  std::vector<std::int32_t> all, other;
  std::vector<std::pair<std::int32_t, std::int32_t>> plain;  // (length, id)
  for (std::int32_t id = 0; id < vocab; ++id) {
    if (tokenizer.is_special(id)) continue;
    std::string p = tokenizer.piece(id);
    if (p.empty()) continue;
    const std::int32_t len = plain_length(p);
    pieces_[static_cast<std::size_t>(id)] = std::move(p);
    all.push_back(id);
    if (len >= 0) plain.emplace_back(len, id);
    else other.push_back(id);
  }
  std::sort(plain.begin(), plain.end());
  for (const auto& [len, id] : plain) {
    plain_lengths_.push_back(len);
    plain_ids_.push_back(id);
  }
  all_root_ = build(all);
  other_root_ = build(other);
}

std::int32_t VocabTrie::build(std::vector<std::int32_t>& ids) {
  std::sort(ids.begin(), ids.end(), [&](std::int32_t a, std::int32_t b) { return piece(a) < piece(b); });
  const auto root = static_cast<std::int32_t>(nodes_.size());
  nodes_.emplace_back();
  build_node(root, ids, 0, ids.size(), 0);
  return root;
}

void VocabTrie::build_node(std::int32_t node, const std::vector<std::int32_t>& ids, std::size_t lo, std::size_t hi,
                           std::size_t depth) {
  // The pieces that end here sort first.
  std::size_t k = lo;
  nodes_[static_cast<std::size_t>(node)].tokens_begin = static_cast<std::int32_t>(tokens_.size());
  for (; k < hi && piece(ids[k]).size() == depth; ++k) tokens_.push_back(ids[k]);
  nodes_[static_cast<std::size_t>(node)].tokens_end = static_cast<std::int32_t>(tokens_.size());
  // One child per next byte, allocated side by side, then filled.
  std::vector<std::pair<std::size_t, std::size_t>> groups;
  for (std::size_t i = k; i < hi;) {
    const char b = piece(ids[i])[depth];
    std::size_t j = i;
    while (j < hi && piece(ids[j])[depth] == b) ++j;
    groups.emplace_back(i, j);
    i = j;
  }
  const auto first = static_cast<std::int32_t>(nodes_.size());
  nodes_.resize(nodes_.size() + groups.size());
  nodes_[static_cast<std::size_t>(node)].children_begin = first;
  nodes_[static_cast<std::size_t>(node)].children_end = first + static_cast<std::int32_t>(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto child = first + static_cast<std::int32_t>(g);
    nodes_[static_cast<std::size_t>(child)].byte = static_cast<unsigned char>(piece(ids[groups[g].first])[depth]);
    build_node(child, ids, groups[g].first, groups[g].second, depth + 1);
  }
}

}  // namespace orion::text::constrain
