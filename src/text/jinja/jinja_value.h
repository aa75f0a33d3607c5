#pragma once
// The values a chat template computes with, as Jinja (Python) has them: none, undefined,
// booleans, integers, floats, strings, lists, dicts (insertion-ordered, as Python's), and
// namespaces (the one mutable object templates use). Lists and dicts are shared, as Python's
// are: `set x = y` makes no copy.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace orion::text::jinja {

struct Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;  // insertion order, keys unique

struct Value {
  enum class Kind : std::uint8_t { undefined, none, boolean, integer, floating, string, list, dict, ns, function };
  Kind kind = Kind::undefined;
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  std::string s;
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;  // a dict's or a namespace's items

  static Value none() { Value v; v.kind = Kind::none; return v; }
  static Value boolean(bool x) { Value v; v.kind = Kind::boolean; v.b = x; return v; }
  static Value integer(std::int64_t x) { Value v; v.kind = Kind::integer; v.i = x; return v; }
  static Value floating(double x) { Value v; v.kind = Kind::floating; v.f = x; return v; }
  static Value string(std::string x) { Value v; v.kind = Kind::string; v.s = std::move(x); return v; }
  static Value of_list(List x = {}) { Value v; v.kind = Kind::list; v.list = std::make_shared<List>(std::move(x)); return v; }
  static Value of_dict(Dict x = {}) { Value v; v.kind = Kind::dict; v.dict = std::make_shared<Dict>(std::move(x)); return v; }
  static Value of_namespace(Dict x = {}) { Value v = of_dict(std::move(x)); v.kind = Kind::ns; return v; }
  // A global function (raise_exception, range...), named in `s`: `is defined` finds it.
  static Value function(std::string name) { Value v; v.kind = Kind::function; v.s = std::move(name); return v; }

  bool is_undefined() const { return kind == Kind::undefined; }
  bool is_number() const { return kind == Kind::integer || kind == Kind::floating || kind == Kind::boolean; }
  bool is_mapping() const { return kind == Kind::dict || kind == Kind::ns; }
  double number() const { return kind == Kind::floating ? f : kind == Kind::boolean ? (b ? 1 : 0) : static_cast<double>(i); }

  // The item `key` of a dict or namespace, or nullptr.
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value v);  // dicts and namespaces
};

// Python's truth: empty strings, lists and dicts, zero, none and undefined are false.
bool truthy(const Value& v);
// Python's ==: numbers by value (True == 1), strings, lists and dicts element by element.
bool equal(const Value& a, const Value& b);
// What {{ v }} prints: str(v) in Python (None, True, 1.5, ['a', 1], {'k': 'v'}); undefined
// prints nothing.
std::string to_str(const Value& v);
// Python's repr (strings quoted as Python quotes them).
std::string repr(const Value& v);
// json.dumps(v, ensure_ascii=False) as transformers' tojson filter calls it; `indent` < 0: none.
std::string to_json(const Value& v, int indent = -1);
// The type's name in messages: "string", "list", ...
std::string_view kind_name(Value::Kind k);

}  // namespace orion::text::jinja
