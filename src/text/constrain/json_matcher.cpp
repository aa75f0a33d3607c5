#include "text/constrain/json_matcher.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace orion::text::constrain {

namespace {

// Phases. Root: the prefix, the value, the suffix, then nothing.
enum : std::uint8_t { kPrefix, kValue, kSuffix, kDone };
// Objects (and tagged ones, which become objects once their tag is read), arrays.
enum : std::uint8_t { kOpen, kFirst, kKey, kColon, kMember, kAfter, kNext, kTagKey, kTagColon, kTagValue, kTag };
// Strings.
enum : std::uint8_t { kQuote, kText, kEscape };
// Numbers.
enum : std::uint8_t { kStart, kSign, kZero, kInt, kDot, kFraction };

constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max();

bool is_ws(unsigned char b) { return b == ' ' || b == '\n'; }

std::int64_t pow10(int n) {
  std::int64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

}  // namespace

JsonMatcher::JsonMatcher(const Grammar& grammar) : g_(&grammar) {
  Frame root;
  root.kind = Kind::root;
  root.phase = grammar.prefix.empty() ? kValue : kPrefix;
  frames_[0] = root;
  size_ = 1;
}

JsonMatcher& JsonMatcher::operator=(const JsonMatcher& other) {
  g_ = other.g_;
  size_ = other.size_;
  std::memcpy(static_cast<void*>(frames_.data()), other.frames_.data(), sizeof(Frame) * static_cast<std::size_t>(size_));
  return *this;
}

bool JsonMatcher::push(Frame f) {
  if (size_ >= static_cast<int>(frames_.size())) return false;
  frames_[static_cast<std::size_t>(size_++)] = f;
  return true;
}

bool JsonMatcher::feed(std::string_view bytes) {
  for (const char c : bytes)
    if (!feed(static_cast<unsigned char>(c))) return false;
  return true;
}

bool JsonMatcher::feed(unsigned char b) {
  while (size_ > 0) {
    switch (step(frames_[static_cast<std::size_t>(size_ - 1)], b)) {
      case Step::reject: return false;
      case Step::consumed: return true;
      case Step::done:
        --size_;
        child_done();
        return true;
      case Step::pass:
        --size_;
        child_done();
        break;
      case Step::pushed: break;
    }
  }
  return false;
}

void JsonMatcher::child_done() {
  Frame& p = frames_[static_cast<std::size_t>(size_ - 1)];
  p.ws = 0;
  switch (p.kind) {
    case Kind::root: p.phase = g_->suffix.empty() ? kDone : kSuffix, p.count = 0; break;
    case Kind::object: p.phase = kAfter, ++p.count; break;
    case Kind::any_object: p.phase = p.phase == kKey ? kColon : kAfter; break;
    case Kind::array: p.phase = kAfter, ++p.count; break;
    default: break;  // strings, numbers, literals and tags hold no values
  }
}

JsonMatcher::Step JsonMatcher::gap(Frame& f, unsigned char b) {
  // f.ws: 0 nothing yet, 1 one space, 2 + k a newline and k spaces.
  if (b == '\n' && f.ws == 0) f.ws = 2;
  else if (b == ' ' && f.ws == 0) f.ws = 1;
  else if (b == ' ' && f.ws >= 2 && f.ws - 2 < kMaxIndent) ++f.ws;
  else return Step::reject;
  return Step::consumed;
}

JsonMatcher::Step JsonMatcher::next_phase(Frame& f, std::uint8_t phase) {
  f.phase = phase;
  f.ws = 0;
  return Step::consumed;
}

JsonMatcher::Step JsonMatcher::step(Frame& f, unsigned char b) {
  switch (f.kind) {
    case Kind::root: return step_root(f, b);
    case Kind::object: return step_object(f, b);
    case Kind::any_object: return step_object(f, b);
    case Kind::array: return step_array(f, b);
    case Kind::string: return step_string(f, b);
    case Kind::number: return step_number(f, b);
    case Kind::literal: return step_literal(f, b);
    case Kind::tagged: return step_tagged(f, b);
  }
  return Step::reject;
}

JsonMatcher::Step JsonMatcher::push_value(std::int32_t node, unsigned char b) {
  while (g_->nodes[static_cast<std::size_t>(node)].kind == NodeKind::alternatives) {
    node = g_->nodes[static_cast<std::size_t>(node)].options[b];
    if (node < 0) return Step::reject;
  }
  Frame f;
  f.node = node;
  switch (g_->nodes[static_cast<std::size_t>(node)].kind) {
    case NodeKind::object: f.kind = Kind::object; break;
    case NodeKind::any_object: f.kind = Kind::any_object; break;
    case NodeKind::array: f.kind = Kind::array; break;
    case NodeKind::string: f.kind = Kind::string; break;
    case NodeKind::number:
    case NodeKind::integer: f.kind = Kind::number; break;
    case NodeKind::literal: f.kind = Kind::literal; break;
    case NodeKind::tagged: f.kind = Kind::tagged; break;
    case NodeKind::alternatives: return Step::reject;
  }
  return push(f) ? Step::pushed : Step::reject;
}

JsonMatcher::Step JsonMatcher::step_root(Frame& f, unsigned char b) {
  const std::string& text = f.phase == kPrefix ? g_->prefix : g_->suffix;
  switch (f.phase) {
    case kPrefix:
    case kSuffix:
      if (static_cast<unsigned char>(text[static_cast<std::size_t>(f.count)]) != b) return Step::reject;
      if (++f.count == static_cast<std::int64_t>(text.size())) f.phase = f.phase == kPrefix ? kValue : kDone, f.count = 0;
      return Step::consumed;
    case kValue: {
      const Step s = push_value(g_->root, b);
      if (s == Step::pushed) f.phase = kValue;
      return s;
    }
    default: return Step::reject;
  }
}

std::uint64_t JsonMatcher::key_window(const Node& n, std::int64_t next) const {
  // The keys that may come next: each from `next` on up to the first required one.
  std::uint64_t w = 0;
  for (std::size_t i = static_cast<std::size_t>(next); i < n.properties.size(); ++i) {
    w |= std::uint64_t{1} << i;
    if (n.properties[i].required) break;
  }
  return w;
}

bool JsonMatcher::key_byte(Frame& f, const Node& n, unsigned char b) {
  const std::int32_t c = n.trie.child(f.trie, b);
  if (c < 0 || (n.trie.nodes[static_cast<std::size_t>(c)].below & key_window(n, f.count)) == 0) return false;
  f.trie = c;
  const std::int32_t key = n.trie.nodes[static_cast<std::size_t>(c)].value;
  if (key >= 0) f.count = key, f.phase = kColon, f.ws = 0;
  return true;
}

JsonMatcher::Step JsonMatcher::step_object(Frame& f, unsigned char b) {
  // A schema's object takes its keys from its trie, in order; a generic one any string key.
  const Node& n = g_->nodes[static_cast<std::size_t>(f.node)];
  const bool any = f.kind == Kind::any_object;
  const auto closable = [&] {
    for (std::size_t i = static_cast<std::size_t>(f.count); !any && i < n.properties.size(); ++i)
      if (n.properties[i].required) return false;
    return true;
  };
  switch (f.phase) {
    case kOpen: return b == '{' ? next_phase(f, kFirst) : Step::reject;
    case kFirst:
    case kNext:
      if (b == '"') {
        f.phase = kKey;
        if (any) {
          Frame key;
          key.kind = Kind::string;  // node -1: a string of any length
          return push(key) ? Step::pushed : Step::reject;
        }
        f.trie = 0;
        return key_byte(f, n, b) ? Step::consumed : Step::reject;
      }
      if (b == '}' && f.phase == kFirst) return closable() ? Step::done : Step::reject;
      return gap(f, b);
    case kKey: return !any && key_byte(f, n, b) ? Step::consumed : Step::reject;
    case kColon: return b == ':' ? next_phase(f, kMember) : gap(f, b);
    case kMember:
      if (is_ws(b)) return gap(f, b);
      return push_value(any ? n.items : n.properties[static_cast<std::size_t>(f.count)].value, b);
    case kAfter:
      if (b == ',' && (any || key_window(n, f.count) != 0)) {
        f.phase = kNext, f.ws = 0;
        return Step::consumed;
      }
      if (b == '}') return closable() ? Step::done : Step::reject;
      return gap(f, b);
    default: return Step::reject;
  }
}

JsonMatcher::Step JsonMatcher::step_array(Frame& f, unsigned char b) {
  const Node& n = g_->nodes[static_cast<std::size_t>(f.node)];
  switch (f.phase) {
    case kOpen: return b == '[' ? next_phase(f, kFirst) : Step::reject;
    case kFirst:
    case kNext:
      if (b == ']' && f.phase == kFirst) return n.min_count == 0 ? Step::done : Step::reject;
      if (is_ws(b)) return gap(f, b);
      if (n.max_count >= 0 && f.count >= n.max_count) return Step::reject;
      return push_value(n.items, b);
    case kAfter:
      if (b == ',' && (n.max_count < 0 || f.count < n.max_count)) {
        f.phase = kNext, f.ws = 0;
        return Step::consumed;
      }
      if (b == ']') return f.count >= n.min_count ? Step::done : Step::reject;
      return gap(f, b);
    default: return Step::reject;
  }
}

JsonMatcher::Step JsonMatcher::step_string(Frame& f, unsigned char b) {
  const Node* n = f.node >= 0 ? &g_->nodes[static_cast<std::size_t>(f.node)] : nullptr;
  const std::int64_t max = n ? n->max_count : -1, min = n ? n->min_count : 0;
  const bool room = max < 0 || f.count < max;
  switch (f.phase) {
    case kQuote:
      if (b != '"') return Step::reject;
      f.phase = kText;
      return Step::consumed;
    case kEscape:
      if (std::strchr("\"\\/bfnrt", b) == nullptr || b == 0) return Step::reject;
      f.phase = kText;
      ++f.count;
      return Step::consumed;
    default: break;
  }
  if (f.utf8 > 0) {
    // The second byte of E0, ED, F0 and F4 sequences is narrower: no overlong forms, no
    // surrogates, nothing past U+10FFFF (what a JSON writer would refuse to print).
    static constexpr unsigned char lo[] = {0x80, 0xA0, 0x80, 0x90, 0x80}, hi[] = {0xBF, 0xBF, 0x9F, 0xBF, 0x8F};
    if (b < lo[f.second] || b > hi[f.second]) return Step::reject;
    f.second = 0;
    --f.utf8;
    return Step::consumed;
  }
  if (b == '"') return f.count >= min ? Step::done : Step::reject;
  if (b < 0x20 || !room) return Step::reject;
  if (b == '\\') {
    f.phase = kEscape;
    return Step::consumed;
  }
  if (b >= 0x80) {
    if (b >= 0xC2 && b <= 0xDF) f.utf8 = 1;
    else if (b >= 0xE0 && b <= 0xEF) f.utf8 = 2, f.second = b == 0xE0 ? 1 : b == 0xED ? 2 : 0;
    else if (b >= 0xF0 && b <= 0xF4) f.utf8 = 3, f.second = b == 0xF0 ? 3 : b == 0xF4 ? 4 : 0;
    else return Step::reject;
  }
  ++f.count;
  return Step::consumed;
}

JsonMatcher::Step JsonMatcher::step_number(Frame& f, unsigned char b) {
  const Node& n = g_->nodes[static_cast<std::size_t>(f.node)];
  const bool neg = f.utf8 != 0;
  // The magnitudes the integer part may reach, by sign.
  const std::int64_t mlo = neg ? std::max<std::int64_t>(1, -n.hi) : std::max<std::int64_t>(0, n.lo);
  const std::int64_t mhi = neg ? -n.lo : n.hi;
  const auto reachable = [&](std::int64_t m, int k) {
    // m itself, or m followed by j more digits: [m 10^j, m 10^j + 10^j - 1].
    for (int j = 0; j + k <= kMaxIntegerDigits; ++j) {
      if (m == 0 && j > 0) break;
      const std::int64_t p = pow10(j), base = m * p, top = base + p - 1;
      if (top >= mlo && base <= mhi) return true;
    }
    return false;
  };
  const std::int64_t v = neg ? -f.count : f.count;
  const bool in_range = v >= n.lo && v <= n.hi;
  const bool fraction_ok = n.kind == NodeKind::number && in_range && (v >= 0 && !neg ? v + 1 <= n.hi : v - 1 >= n.lo);
  const bool digit = b >= '0' && b <= '9';
  switch (f.phase) {
    case kStart:
      if (b == '-') {
        if (std::max<std::int64_t>(1, -n.hi) > -n.lo) return Step::reject;  // no negative value in range
        f.utf8 = 1;
        f.phase = kSign;
        return Step::consumed;
      }
      [[fallthrough]];
    case kSign: {
      if (!digit) return Step::reject;
      const std::int64_t d = b - '0';
      if (d == 0) {
        if (neg) return Step::reject;  // no "-0"
        const bool zero_ok = 0 >= n.lo && 0 <= n.hi;
        if (!zero_ok) return Step::reject;
        f.phase = kZero;
        f.digits = 1;
        return Step::consumed;
      }
      if (!reachable(d, 1)) return Step::reject;
      f.count = d;
      f.digits = 1;
      f.phase = kInt;
      return Step::consumed;
    }
    case kZero:
    case kInt:
      if (digit && f.phase == kInt) {
        const std::int64_t m = f.count * 10 + (b - '0');
        if (f.digits >= kMaxIntegerDigits || !reachable(m, f.digits + 1)) return Step::reject;
        f.count = m;
        ++f.digits;
        return Step::consumed;
      }
      if (b == '.') {
        if (!fraction_ok) return Step::reject;
        f.phase = kDot;
        f.digits = 0;
        return Step::consumed;
      }
      return in_range ? Step::pass : Step::reject;
    case kDot:
    case kFraction:
      if (digit && f.digits < kMaxFractionDigits) {
        f.phase = kFraction;
        ++f.digits;
        return Step::consumed;
      }
      return f.phase == kFraction ? Step::pass : Step::reject;
    default: return Step::reject;
  }
}

JsonMatcher::Step JsonMatcher::step_literal(Frame& f, unsigned char b) {
  const LiteralTrie& t = g_->nodes[static_cast<std::size_t>(f.node)].trie;
  const std::int32_t c = t.child(f.trie, b);
  if (c < 0) return t.nodes[static_cast<std::size_t>(f.trie)].value >= 0 ? Step::pass : Step::reject;
  f.trie = c;
  const LiteralTrie::Node& node = t.nodes[static_cast<std::size_t>(c)];
  return node.value >= 0 && node.children.empty() ? Step::done : Step::consumed;
}

JsonMatcher::Step JsonMatcher::step_tagged(Frame& f, unsigned char b) {
  const Node& n = g_->nodes[static_cast<std::size_t>(f.node)];
  switch (f.phase) {
    case kOpen: return b == '{' ? next_phase(f, kFirst) : Step::reject;
    case kFirst:
      if (is_ws(b)) return gap(f, b);
      f.phase = kTagKey, f.trie = 0;
      [[fallthrough]];
    case kTagKey: {
      const std::int32_t c = n.tag_key.child(f.trie, b);
      if (c < 0) return Step::reject;
      f.trie = c;
      if (n.tag_key.nodes[static_cast<std::size_t>(c)].value >= 0) f.phase = kTagColon, f.ws = 0;
      return Step::consumed;
    }
    case kTagColon: return b == ':' ? next_phase(f, kTagValue) : gap(f, b);
    case kTagValue:
      if (is_ws(b)) return gap(f, b);
      f.phase = kTag, f.trie = 0;
      [[fallthrough]];
    case kTag: {
      const std::int32_t c = n.trie.child(f.trie, b);
      if (c < 0) return Step::reject;
      f.trie = c;
      const std::int32_t branch = n.trie.nodes[static_cast<std::size_t>(c)].value;
      if (branch >= 0) {
        // The tag's string is whole: the rest is that branch's object after its first property.
        f.node = n.branches[static_cast<std::size_t>(branch)];
        f.kind = Kind::object;
        f.phase = kAfter, f.ws = 0, f.count = 1;
      }
      return Step::consumed;
    }
    default: return Step::reject;
  }
}

bool JsonMatcher::may_stop(const Frame& f) const {
  if (f.kind == Kind::literal)
    return g_->nodes[static_cast<std::size_t>(f.node)].trie.nodes[static_cast<std::size_t>(f.trie)].value >= 0;
  if (f.kind != Kind::number) return false;
  const Node& n = g_->nodes[static_cast<std::size_t>(f.node)];
  const std::int64_t v = f.utf8 ? -f.count : f.count;
  return (f.phase == kZero || f.phase == kInt || f.phase == kFraction) && v >= n.lo && v <= n.hi;
}

bool JsonMatcher::can_end() const {
  JsonMatcher m(*this);
  while (m.size_ > 1 && m.may_stop(m.frames_[static_cast<std::size_t>(m.size_ - 1)])) {
    --m.size_;
    m.child_done();
  }
  return m.complete();
}

bool JsonMatcher::complete() const { return size_ == 1 && frames_[0].phase == kDone; }

std::optional<std::int64_t> JsonMatcher::string_room() const {
  const Frame& f = frames_[static_cast<std::size_t>(size_ - 1)];
  if (f.kind != Kind::string || f.phase != kText || f.utf8 != 0) return std::nullopt;
  const std::int64_t max = f.node >= 0 ? g_->nodes[static_cast<std::size_t>(f.node)].max_count : -1;
  return max < 0 ? kUnbounded : std::max<std::int64_t>(max - f.count, 0);
}

}  // namespace orion::text::constrain
