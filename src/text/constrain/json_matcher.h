#pragma once
// Where an answer under way stands in a grammar (text/constrain/json_grammar.h): a pushdown
// automaton over bytes, one frame per open object, array, string, number or literal, that says
// whether a byte may come next. Deterministic (a grammar's alternatives differ in their first
// byte), and its frames are plain values in a fixed array, so that a copy is a memcpy of the
// open ones: the token mask (text/constrain/token_constraint.h) copies it at every node of the
// vocabulary's trie.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "text/constrain/json_grammar.h"

namespace orion::text::constrain {

class JsonMatcher {
 public:
  // `grammar` must outlive the matcher.
  explicit JsonMatcher(const Grammar& grammar);
  JsonMatcher(const JsonMatcher& other) { *this = other; }
  JsonMatcher& operator=(const JsonMatcher& other);

  // Takes one byte; false when the grammar has no place for it, and the matcher is then left
  // as it may be (feed a copy to try).
  bool feed(unsigned char byte);
  // Takes the bytes one by one; false at the first that has no place.
  bool feed(std::string_view bytes);
  // Whether the answer may end here (the value and the suffix are whole).
  bool can_end() const;
  // Whether nothing more may come at all.
  bool complete() const;
  // Inside a string's text (no escape or character half done): how many more code points it
  // may take (INT64_MAX when unbounded); nullopt elsewhere.
  std::optional<std::int64_t> string_room() const;

 private:
  enum class Kind : std::uint8_t { root, object, any_object, array, string, number, literal, tagged };
  struct Frame {
    std::int32_t node = -1;
    Kind kind = Kind::root;
    std::uint8_t phase = 0;
    std::uint8_t ws = 0;      // the gap so far (gap())
    std::uint8_t utf8 = 0;    // string: continuation bytes due; number: 1 when negative
    std::uint8_t second = 0;  // string: the range the next continuation byte must be in
    std::int32_t trie = 0;    // object, tagged: the key's trie node; literal: the trie node
    std::int32_t digits = 0;  // number: integer digits, then fraction digits
    std::int64_t count = 0;   // object: the property; array: items; string: code points; number: magnitude
  };
  enum class Step : std::uint8_t { reject, consumed, done, pass, pushed };

  Step step(Frame& f, unsigned char b);
  Step step_root(Frame& f, unsigned char b);
  Step step_object(Frame& f, unsigned char b);
  Step step_array(Frame& f, unsigned char b);
  Step step_string(Frame& f, unsigned char b);
  Step step_number(Frame& f, unsigned char b);
  Step step_literal(Frame& f, unsigned char b);
  Step step_tagged(Frame& f, unsigned char b);
  // Opens a value of `node` whose first byte is `b` (alternatives resolved by it).
  Step push_value(std::int32_t node, unsigned char b);
  bool push(Frame f);
  // The top frame finished: its parent moves on.
  void child_done();
  // A gap's whitespace: consumed while the gap has room.
  static Step gap(Frame& f, unsigned char b);
  // A byte that moves the frame to `phase`, a new gap.
  static Step next_phase(Frame& f, std::uint8_t phase);
  // Whether the frame could end here without another byte (a number, a literal that is whole).
  bool may_stop(const Frame& f) const;
  std::uint64_t key_window(const Node& n, std::int64_t next) const;
  bool key_byte(Frame& f, const Node& n, unsigned char b);

  const Grammar* g_;
  std::array<Frame, kMaxDepth + 2> frames_{};
  int size_ = 0;
};

}  // namespace orion::text::constrain
