#include "text/hf/bpe_model.h"

#include <queue>

namespace orion::text::hf {

namespace {

// Bytes of the UTF-8 character starting at `s[i]` (1 for a byte that starts none: the input
// was made valid before, so this only guards the bounds).
std::size_t char_len(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  return i + n <= s.size() ? n : 1;
}

struct Symbol {
  std::int32_t id;
  std::int32_t prev, next;  // -1 at the ends
  bool alive;
};

struct Candidate {
  std::int32_t rank, left;  // the pair (left, symbols[left].next)
  std::int32_t left_id, right_id;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
};

}  // namespace

void BpeModel::encode_word(std::string_view word, std::vector<std::int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges)
    if (auto it = vocab.find(std::string(word)); it != vocab.end()) {
      out.push_back(it->second);
      return;
    }
  std::vector<Symbol> sym;
  bool last_unk = false;
  for (std::size_t i = 0; i < word.size();) {
    const std::size_t n = char_len(word, i);
    const std::string ch(word.substr(i, n));
    i += n;
    if (auto it = vocab.find(ch); it != vocab.end()) {
      sym.push_back({it->second, 0, 0, true});
      last_unk = false;
    } else if (byte_fallback) {
      for (char b : ch) sym.push_back({byte_ids[static_cast<unsigned char>(b)], 0, 0, true});
      last_unk = false;
    } else if (unk_id) {
      if (!(fuse_unk && last_unk)) sym.push_back({*unk_id, 0, 0, true});
      last_unk = true;
    }
    // No unknown token and no fallback: the character is dropped, as Hugging Face's BPE does.
  }
  const auto n = static_cast<std::int32_t>(sym.size());
  for (std::int32_t i = 0; i < n; ++i) {
    sym[static_cast<std::size_t>(i)].prev = i - 1;
    sym[static_cast<std::size_t>(i)].next = i + 1 < n ? i + 1 : -1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](std::int32_t left) {
    if (left < 0) return;
    const std::int32_t right = sym[static_cast<std::size_t>(left)].next;
    if (right < 0) return;
    const std::int32_t a = sym[static_cast<std::size_t>(left)].id, b = sym[static_cast<std::size_t>(right)].id;
    auto it = merges.find(static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32 | static_cast<std::uint32_t>(b));
    if (it != merges.end()) heap.push({it->second.first, left, a, b});
  };
  for (std::int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = sym[static_cast<std::size_t>(c.left)];
    // Stale: the left symbol was merged away, or either side changed since the pair was seen.
    if (!l.alive || l.id != c.left_id || l.next < 0 || sym[static_cast<std::size_t>(l.next)].id != c.right_id) continue;
    Symbol& r = sym[static_cast<std::size_t>(l.next)];
    const auto& m = merges.at(static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.left_id)) << 32 |
                              static_cast<std::uint32_t>(c.right_id));
    l.id = m.second;
    r.alive = false;
    l.next = r.next;
    if (r.next >= 0) sym[static_cast<std::size_t>(r.next)].prev = c.left;
    consider(l.prev);
    consider(c.left);
  }
  for (const Symbol& s : sym)
    if (s.alive) out.push_back(s.id);
}

}  // namespace orion::text::hf
