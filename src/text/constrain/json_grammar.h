#pragma once
// A JSON Schema compiled into the grammar that constrained decoding follows
// (text/constrain/json_matcher.h): a table of nodes, one per schema, whose every answer parses
// as JSON and validates under the schema, and whose length is bounded when the schema bounds it
// (strings by maxLength, arrays by maxItems; numbers always, whitespace between tokens always).
// Only what the grammar can honour is taken: any other keyword is refused by name, so that a
// request never gets an answer the schema's validator would reject.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace orion::text::constrain {

// A gap between tokens of the JSON text holds nothing, one space, or a newline and up to
// kMaxIndent spaces: what pretty-printed JSON needs, and a bound on a model that favours blanks.
inline constexpr int kMaxIndent = 16;
// Digits of a number's integer part when the schema does not bound it, and of its fraction.
inline constexpr int kMaxIntegerDigits = 15;
inline constexpr int kMaxFractionDigits = 6;
// Objects, arrays and strings nested in one another (a generic JSON object's depth).
inline constexpr int kMaxDepth = 24;

// Literal texts (a key with its quotes, an enum's values as JSON) as a byte trie: a node's
// children, whether a literal ends there (`value`: its index among the literals, -1: none) and
// which literals pass through it (`below`, a bit each, for an object's first 64 keys).
struct LiteralTrie {
  struct Node {
    std::vector<std::pair<unsigned char, std::int32_t>> children;
    std::int32_t value = -1;
    std::uint64_t below = 0;
  };
  std::vector<Node> nodes;  // nodes[0] is the root
  std::int32_t add(const std::string& text, std::int32_t value);  // returns the leaf
  std::int32_t child(std::int32_t node, unsigned char byte) const;
  LiteralTrie() : nodes(1) {}
};

enum class NodeKind : std::uint8_t {
  object,        // the properties in order; the required ones always, the others optional
  any_object,    // any keys (strings), any values
  array,         // items of one node, min_items..max_items
  string,        // min_length..max_length code points
  number,        // integer part in [lo, hi]; a fraction where every value it can give stays in
  integer,       //   range (numbers); integers: lo..hi
  literal,       // one of the texts of `trie` (enum, const, true, false, null)
  alternatives,  // one of `options`, chosen by the answer's first byte
  tagged,        // objects told apart by their first property's constant string (`tag_key`)
};

struct Property {
  std::int32_t value = -1;  // its node
  bool required = false;
};

struct Node {
  NodeKind kind = NodeKind::literal;
  // object: `properties` in the schema's order, their quoted keys in `trie` (values = index).
  std::vector<Property> properties;
  // object, literal: the texts; tagged: the tag values (value = the branch's index).
  LiteralTrie trie;
  // tagged: the first key's quoted text, and the branches (object nodes whose property 0 it is).
  LiteralTrie tag_key;
  std::vector<std::int32_t> branches;
  // array: the items' node.
  std::int32_t items = -1;
  std::int64_t min_count = 0, max_count = -1;  // array items, string code points; -1: no bound
  std::int64_t lo = 0, hi = 0;                 // number, integer: the integer part's range
  // alternatives: the node each first byte of an answer leads to (-1: none).
  std::vector<std::int32_t> options;
};

struct Grammar {
  std::vector<Node> nodes;
  std::int32_t root = -1;
  // Literal text before and after the value (a tool call's markers), "" for none.
  std::string prefix, suffix;
};

// The grammar of `schema` (OpenAI's response_format json_schema.schema, a tool's parameters),
// its properties in the order given (an ordered_json, as the request's text has them).
// Throws orion::Error naming the schema path (as "#/properties/name/maxLength") and the keyword
// for anything it does not honour, for a bound it cannot meet (minimum above maximum), and for a
// schema of a type it does not know.
Grammar compile_json_schema(const nlohmann::ordered_json& schema);
// Any JSON object (response_format json_object).
Grammar any_json_object();

}  // namespace orion::text::constrain
