#include "text/constrain/json_grammar.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace orion::text::constrain {

using json = nlohmann::ordered_json;

std::int32_t LiteralTrie::add(const std::string& text, std::int32_t value) {
  std::int32_t n = 0;
  const std::uint64_t bit = value >= 0 && value < 64 ? std::uint64_t{1} << value : 0;
  nodes[0].below |= bit;
  for (const char ch : text) {
    const auto b = static_cast<unsigned char>(ch);
    std::int32_t next = child(n, b);
    if (next < 0) {
      next = static_cast<std::int32_t>(nodes.size());
      nodes[static_cast<std::size_t>(n)].children.emplace_back(b, next);
      nodes.emplace_back();
    }
    n = next;
    nodes[static_cast<std::size_t>(n)].below |= bit;
  }
  nodes[static_cast<std::size_t>(n)].value = value;
  return n;
}

std::int32_t LiteralTrie::child(std::int32_t node, unsigned char byte) const {
  for (const auto& [b, c] : nodes[static_cast<std::size_t>(node)].children)
    if (b == byte) return c;
  return -1;
}

namespace {

constexpr std::int64_t kMaxMagnitude = 999'999'999'999'999;  // kMaxIntegerDigits nines

// Keywords that say nothing an answer must meet.
const std::set<std::string> kAnnotations = {"title", "description", "$schema", "$id", "$comment", "default",
                                            "examples", "deprecated", "readOnly", "writeOnly"};

class Compiler {
 public:
  explicit Compiler(const json& root) : root_(root) {}

  Grammar run() {
    g_.root = compile(root_, "#");
    return std::move(g_);
  }

 private:
  [[noreturn]] static void refuse(const std::string& path, const std::string& what) {
    throw Error("the schema's " + path + ": " + what);
  }

  std::int32_t add(Node n) {
    g_.nodes.push_back(std::move(n));
    return static_cast<std::int32_t>(g_.nodes.size() - 1);
  }

  // The first bytes an answer of node `n` can start with.
  std::set<unsigned char> first_bytes(std::int32_t n) const {
    const Node& node = g_.nodes[static_cast<std::size_t>(n)];
    switch (node.kind) {
      case NodeKind::object:
      case NodeKind::any_object:
      case NodeKind::tagged: return {'{'};
      case NodeKind::array: return {'['};
      case NodeKind::string: return {'"'};
      case NodeKind::number:
      case NodeKind::integer: {
        std::set<unsigned char> s = {'-'};
        for (unsigned char c = '0'; c <= '9'; ++c) s.insert(c);
        return s;
      }
      case NodeKind::literal: {
        std::set<unsigned char> s;
        for (const auto& [b, c] : node.trie.nodes[0].children) s.insert(b);
        return s;
      }
      case NodeKind::alternatives: {
        std::set<unsigned char> s;
        for (int b = 0; b < 256; ++b)
          if (node.options[static_cast<std::size_t>(b)] >= 0) s.insert(static_cast<unsigned char>(b));
        return s;
      }
    }
    return {};
  }

  std::int32_t literal(const std::vector<json>& values) {
    Node n;
    n.kind = NodeKind::literal;
    for (std::size_t i = 0; i < values.size(); ++i) n.trie.add(values[i].dump(), static_cast<std::int32_t>(i));
    return add(std::move(n));
  }

  static std::int64_t count_in(const json& s, const char* key, const std::string& path) {
    const json& v = s.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
      refuse(path + "/" + key, "must be a non-negative integer, not " + v.dump());
    return v.get<std::int64_t>();
  }

  static double number_at(const json& s, const char* key, const std::string& path) {
    const json& v = s.at(key);
    if (!v.is_number()) refuse(path + "/" + key, "must be a number, not " + v.dump());
    return v.get<double>();
  }

  const json& resolve_ref(const std::string& ref, const std::string& path) {
    for (const char* base : {"#/$defs/", "#/definitions/"}) {
      const std::string b = base;
      if (ref.compare(0, b.size(), b) != 0) continue;
      const std::string name = ref.substr(b.size());
      const auto defs = root_.find(b.substr(2, b.size() - 3));
      if (defs == root_.end() || !defs->is_object() || !defs->contains(name))
        refuse(path + "/$ref", "'" + ref + "' names no definition");
      return defs->at(name);
    }
    refuse(path + "/$ref", "'" + ref + "': only references to #/$defs/NAME or #/definitions/NAME are followed");
  }

  std::int32_t compile(const json& s, const std::string& path) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) refuse(path, "the schema false admits no value");
      return compile_any();
    }
    if (!s.is_object()) refuse(path, "a schema must be an object or a boolean, not " + std::string(s.type_name()));
    if (++depth_ > kMaxDepth) refuse(path, "nests deeper than " + std::to_string(kMaxDepth) + " (a recursive $ref?)");
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    if (s.contains("$ref")) {
      if (!s.at("$ref").is_string()) refuse(path + "/$ref", "must be a string");
      for (const auto& [k, v] : s.items())
        if (k != "$ref" && k != "$defs" && k != "definitions" && !kAnnotations.count(k))
          refuse(path + "/" + k, "is not taken beside $ref");
      return compile(resolve_ref(s.at("$ref").get<std::string>(), path), path);
    }
    for (const auto& [k, v] : s.items()) {
      static const std::set<std::string> taken = {"type", "properties", "required", "additionalProperties", "items",
                                                  "minItems", "maxItems", "minLength", "maxLength", "minimum",
                                                  "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum",
                                                  "const", "anyOf", "oneOf", "$defs", "definitions", "strict"};
      if (!taken.count(k) && !kAnnotations.count(k))
        refuse(path + "/" + k, "the keyword '" + k + "' is not supported by constrained decoding");
    }
    if (s.contains("uniqueItems") && s.at("uniqueItems") == true) refuse(path + "/uniqueItems", "is not supported");
    if (s.contains("const")) return literal({s.at("const")});
    if (s.contains("enum")) {
      const json& e = s.at("enum");
      if (!e.is_array() || e.empty()) refuse(path + "/enum", "must be a non-empty array");
      return literal(std::vector<json>(e.begin(), e.end()));
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (s.contains(key)) return compile_union(s, key, path);
    if (!s.contains("type")) {
      if (s.contains("properties")) return compile_type(s, "object", path);
      return compile_any();
    }
    const json& t = s.at("type");
    if (t.is_string()) return compile_type(s, t.get<std::string>(), path);
    if (!t.is_array() || t.empty()) refuse(path + "/type", "must be a type name or a non-empty array of them");
    std::vector<std::int32_t> options;
    for (const json& one : t) {
      if (!one.is_string()) refuse(path + "/type", "must hold type names, not " + one.dump());
      options.push_back(compile_type(s, one.get<std::string>(), path));
    }
    return alternatives(options, path + "/type");
  }

  // One of `options`, told apart by their first bytes.
  std::int32_t alternatives(const std::vector<std::int32_t>& options, const std::string& path) {
    if (options.size() == 1) return options[0];
    Node n;
    n.kind = NodeKind::alternatives;
    n.options.assign(256, -1);
    for (const std::int32_t o : options)
      for (const unsigned char b : first_bytes(o)) {
        if (n.options[b] >= 0)
          refuse(path, "its alternatives can start alike (both with '" + std::string(1, static_cast<char>(b)) +
                           "'): only alternatives of different types, or objects told apart by a first property "
                           "of constant value, are supported");
        n.options[b] = o;
      }
    return add(std::move(n));
  }

  std::int32_t compile_union(const json& s, const char* key, const std::string& path) {
    const json& list = s.at(key);
    const std::string where = path + "/" + key;
    if (!list.is_array() || list.empty()) refuse(where, "must be a non-empty array");
    for (const auto& [k, v] : s.items())
      if (k != key && k != "$defs" && k != "definitions" && !kAnnotations.count(k))
        refuse(path + "/" + k, "is not taken beside " + std::string(key));
    std::vector<std::int32_t> options;
    for (std::size_t i = 0; i < list.size(); ++i) options.push_back(compile(list[i], where + "/" + std::to_string(i)));
    // Objects whose first property is a constant string each (a discriminated union, as tool
    // calls are): told apart by that value.
    const auto tag_of = [&](std::int32_t o) -> const Node* {
      const Node& n = g_.nodes[static_cast<std::size_t>(o)];
      if (n.kind != NodeKind::object || n.properties.empty() || !n.properties[0].required) return nullptr;
      const Node& v = g_.nodes[static_cast<std::size_t>(n.properties[0].value)];
      return v.kind == NodeKind::literal ? &v : nullptr;
    };
    bool tagged = options.size() > 1;
    for (const std::int32_t o : options) tagged = tagged && tag_of(o) != nullptr;
    if (!tagged) return alternatives(options, where);
    Node t;
    t.kind = NodeKind::tagged;
    std::string first_key;
    for (std::size_t i = 0; i < options.size(); ++i) {
      const Node& branch = g_.nodes[static_cast<std::size_t>(options[i])];
      const LiteralTrie& keys = branch.trie;
      // The branch's first key: the trie's literal 0.
      std::string k;
      for (std::int32_t n = 0; keys.nodes[static_cast<std::size_t>(n)].value != 0;) {
        std::int32_t next = -1;
        for (const auto& [b, c] : keys.nodes[static_cast<std::size_t>(n)].children)
          if (keys.nodes[static_cast<std::size_t>(c)].below & 1) {
            k += static_cast<char>(b);
            next = c;
          }
        n = next;
      }
      if (i == 0) first_key = k;
      if (k != first_key) return alternatives(options, where);
      // Each branch's constant values lead to it.
      std::vector<std::string> texts;
      collect(tag_of(options[i])->trie, 0, "", texts);
      for (const std::string& text : texts) {
        if (t.trie.nodes[static_cast<std::size_t>(t.trie.add(text, static_cast<std::int32_t>(i)))].value !=
            static_cast<std::int32_t>(i))
          refuse(where, "two branches share the value " + text + " of their first property");
        if (text.empty() || text[0] != '"') return alternatives(options, where);
      }
      t.branches.push_back(options[i]);
    }
    // A value that ends another's text would need a look past its end: strings' quotes rule it out.
    t.tag_key.add(first_key, 0);
    return add(std::move(t));
  }

  static void collect(const LiteralTrie& trie, std::int32_t n, const std::string& prefix, std::vector<std::string>& out) {
    const LiteralTrie::Node& node = trie.nodes[static_cast<std::size_t>(n)];
    if (node.value >= 0) out.push_back(prefix);
    for (const auto& [b, c] : node.children) collect(trie, c, prefix + static_cast<char>(b), out);
  }

  std::int32_t compile_any() {
    if (any_ >= 0) return any_;
    // The generic value refers to itself through its objects and arrays: made first, filled in.
    any_ = add(Node{});
    Node obj;
    obj.kind = NodeKind::any_object;
    obj.items = any_;
    const std::int32_t o = add(std::move(obj));
    Node arr;
    arr.kind = NodeKind::array;
    arr.items = any_;
    const std::int32_t a = add(std::move(arr));
    Node str;
    str.kind = NodeKind::string;
    const std::int32_t st = add(std::move(str));
    Node num;
    num.kind = NodeKind::number;
    num.lo = -kMaxMagnitude;
    num.hi = kMaxMagnitude;
    const std::int32_t nu = add(std::move(num));
    const std::int32_t lit = literal({json(true), json(false), json(nullptr)});
    Node alt;
    alt.kind = NodeKind::alternatives;
    alt.options.assign(256, -1);
    alt.options['{'] = o;
    alt.options['['] = a;
    alt.options['"'] = st;
    alt.options['-'] = nu;
    for (unsigned char c = '0'; c <= '9'; ++c) alt.options[c] = nu;
    alt.options['t'] = alt.options['f'] = alt.options['n'] = lit;
    g_.nodes[static_cast<std::size_t>(any_)] = std::move(alt);
    return any_;
  }

  std::int32_t compile_type(const json& s, const std::string& type, const std::string& path) {
    const auto only = [&](std::initializer_list<const char*> keys) {
      static const std::set<std::string> general = {"type", "$defs", "definitions", "strict"};
      for (const auto& [k, v] : s.items()) {
        if (general.count(k) || kAnnotations.count(k)) continue;
        bool ok = false;
        for (const char* key : keys) ok = ok || k == key;
        if (!ok) refuse(path + "/" + k, "does not apply to a value of type " + type);
      }
    };
    if (type == "null" || type == "boolean") {
      // Other keywords beside a union of types apply to the other types.
      const json t = s.value("type", json());
      if (!t.is_array()) only({});
      return type == "null" ? literal({json(nullptr)}) : literal({json(true), json(false)});
    }
    const bool several = s.value("type", json()).is_array();
    if (type == "string") {
      if (!several) only({"minLength", "maxLength"});
      Node n;
      n.kind = NodeKind::string;
      if (s.contains("minLength")) n.min_count = count_in(s, "minLength", path);
      if (s.contains("maxLength")) n.max_count = count_in(s, "maxLength", path);
      if (n.max_count >= 0 && n.min_count > n.max_count) refuse(path + "/minLength", "is above maxLength");
      return add(std::move(n));
    }
    if (type == "integer" || type == "number") {
      if (!several) only({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"});
      Node n;
      n.kind = type == "integer" ? NodeKind::integer : NodeKind::number;
      double lo = -static_cast<double>(kMaxMagnitude), hi = static_cast<double>(kMaxMagnitude);
      if (s.contains("minimum")) lo = std::max(lo, std::ceil(number_at(s, "minimum", path)));
      if (s.contains("exclusiveMinimum")) lo = std::max(lo, std::floor(number_at(s, "exclusiveMinimum", path)) + 1);
      if (s.contains("maximum")) hi = std::min(hi, std::floor(number_at(s, "maximum", path)));
      if (s.contains("exclusiveMaximum")) hi = std::min(hi, std::ceil(number_at(s, "exclusiveMaximum", path)) - 1);
      if (lo > hi)
        refuse(path, "no number of at most " + std::to_string(kMaxIntegerDigits) +
                         " integer digits lies in its range (whole numbers between " + json(lo).dump() + " and " +
                         json(hi).dump() + ")");
      n.lo = static_cast<std::int64_t>(lo);
      n.hi = static_cast<std::int64_t>(hi);
      return add(std::move(n));
    }
    if (type == "array") {
      if (!several) only({"items", "minItems", "maxItems"});
      Node n;
      n.kind = NodeKind::array;
      if (s.contains("minItems")) n.min_count = count_in(s, "minItems", path);
      if (s.contains("maxItems")) n.max_count = count_in(s, "maxItems", path);
      if (n.max_count >= 0 && n.min_count > n.max_count) refuse(path + "/minItems", "is above maxItems");
      const std::int32_t items = s.contains("items") ? compile(s.at("items"), path + "/items") : compile_any();
      n.items = items;
      return add(std::move(n));
    }
    if (type == "object") {
      if (!several) only({"properties", "required", "additionalProperties"});
      const json props = s.value("properties", json::object());
      if (!props.is_object()) refuse(path + "/properties", "must be an object");
      const json additional = s.value("additionalProperties", json(true));
      if (props.empty() && additional != json(false)) {
        Node n;
        n.kind = NodeKind::any_object;
        n.items = additional.is_object() ? compile(additional, path + "/additionalProperties") : compile_any();
        return add(std::move(n));
      }
      if (props.size() > 64) refuse(path + "/properties", "has more than 64 properties");
      std::set<std::string> required;
      if (s.contains("required")) {
        const json& r = s.at("required");
        if (!r.is_array()) refuse(path + "/required", "must be an array of property names");
        for (const json& name : r) {
          if (!name.is_string() || !props.contains(name.get<std::string>()))
            refuse(path + "/required", name.dump() + " is not one of its properties");
          required.insert(name.get<std::string>());
        }
      }
      Node n;
      n.kind = NodeKind::object;
      std::int32_t i = 0;
      for (const auto& [k, v] : props.items()) {
        n.trie.add(json(k).dump(), i++);
        n.properties.push_back({compile(v, path + "/properties/" + k), required.count(k) > 0});
      }
      return add(std::move(n));
    }
    refuse(path + "/type", "'" + type + "' is not a JSON Schema type");
  }

  const json& root_;
  Grammar g_;
  std::int32_t any_ = -1;
  int depth_ = 0;
};

}  // namespace

Grammar compile_json_schema(const json& schema) { return Compiler(schema).run(); }

Grammar any_json_object() {
  return compile_json_schema(json{{"type", "object"}});
}

}  // namespace orion::text::constrain
