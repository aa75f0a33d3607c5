#include "text/jinja/jinja_render.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <map>
#include <optional>

#include "core/error.h"

namespace orion::text::jinja {

namespace {

using K = Value::Kind;

// Unwinds a loop body for {% break %} and {% continue %}.
struct LoopControl {
  bool is_break;
};

// The functions every template may call (Renderer::call).
constexpr const char* kGlobals[] = {"raise_exception", "namespace", "dict", "range", "strftime_now"};

struct Macro {
  const Stmt* def;
};

class Renderer {
 public:
  Renderer(const Template& t, const Dict& vars) : t_(t) {
    scopes_.emplace_back();
    for (const auto& [k, v] : vars) scopes_.back()[k] = v;
  }

  std::string run() {
    std::string out;
    exec_outside_loops(t_.body, out, Pos{1, 1});
    return out;
  }

 private:
  [[noreturn]] void fail(const Pos& p, const std::string& what) const {
    throw Error::at_line(t_.name, p.line, p.column, what);
  }

  // ---- names and scopes: a for loop's body and a macro's are scopes of their own; if is not.
  const Value* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      const auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }

  // ---- statements
  // A body no loop of its own encloses (the template's, a macro's): a {% break %} or
  // {% continue %} reaching it is an error, as jinja2 refuses it, not an unwinding past the
  // renderer.
  void exec_outside_loops(const Body& body, std::string& out, const Pos& where) {
    try {
      exec(body, out);
    } catch (const LoopControl& c) {
      fail(where, std::string("'{% ") + (c.is_break ? "break" : "continue") + " %}' outside a for loop");
    }
  }

  void exec(const Body& body, std::string& out) {
    for (const auto& s : body) exec(*s, out);
  }

  void exec(const Stmt& s, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::text: out += s.text; return;
      case Stmt::Kind::output: {
        const Value v = eval(*s.expr);
        out += to_str(v);
        return;
      }
      case Stmt::Kind::if_:
        for (const auto& [cond, body] : s.branches)
          if (truthy(eval(*cond))) return exec(body, out);
        return exec(s.else_body, out);
      case Stmt::Kind::for_: return exec_for(s, out);
      case Stmt::Kind::set: {
        Value v = eval(*s.expr);
        if (s.attr.empty()) {
          scopes_.back()[s.text] = std::move(v);
          return;
        }
        const Value* ns = lookup(s.text);
        if (!ns || ns->kind != K::ns) fail(s.pos, "'" + s.text + "' is not a namespace: only namespace() objects take attributes");
        Value target = *ns;  // shares the namespace's items
        target.set(s.attr, std::move(v));
        return;
      }
      case Stmt::Kind::set_block: {
        std::string captured;
        exec(s.body, captured);
        scopes_.back()[s.text] = Value::string(std::move(captured));
        return;
      }
      case Stmt::Kind::macro:
        macros_[s.text] = Macro{&s};
        return;
      case Stmt::Kind::break_: throw LoopControl{true};
      case Stmt::Kind::continue_: throw LoopControl{false};
      case Stmt::Kind::generation: return exec(s.body, out);
      case Stmt::Kind::call_block: fail(s.pos, "call blocks are not supported");
    }
  }

  List iterate(const Value& v, const Pos& p) {
    switch (v.kind) {
      case K::undefined: return {};
      case K::list: return *v.list;
      case K::dict: {
        List keys;
        for (const auto& [k, _] : *v.dict) keys.push_back(Value::string(k));
        return keys;
      }
      case K::string: {
        List chars;
        for (const std::string& c : utf8_chars(v.s)) chars.push_back(Value::string(c));
        return chars;
      }
      default: fail(p, std::string("a ") + std::string(kind_name(v.kind)) + " cannot be iterated");
    }
  }

  void exec_for(const Stmt& s, std::string& out) {
    List items = iterate(eval(*s.expr), s.expr->pos);
    // The loop's filter runs before `loop` counts, as Jinja's does.
    if (s.filter) {
      List kept;
      for (Value& item : items) {
        scopes_.emplace_back();
        bind_targets(s, item);
        if (truthy(eval(*s.filter))) kept.push_back(std::move(item));
        scopes_.pop_back();
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec(s.else_body, out);
    const auto n = static_cast<std::int64_t>(items.size());
    for (std::int64_t i = 0; i < n; ++i) {
      step(s.pos, out);
      scopes_.emplace_back();
      bind_targets(s, items[static_cast<std::size_t>(i)]);
      Dict loop = {{"index", Value::integer(i + 1)},
                   {"index0", Value::integer(i)},
                   {"revindex", Value::integer(n - i)},
                   {"revindex0", Value::integer(n - i - 1)},
                   {"first", Value::boolean(i == 0)},
                   {"last", Value::boolean(i == n - 1)},
                   {"length", Value::integer(n)},
                   {"previtem", i > 0 ? items[static_cast<std::size_t>(i - 1)] : Value{}},
                   {"nextitem", i + 1 < n ? items[static_cast<std::size_t>(i + 1)] : Value{}}};
      scopes_.back()["loop"] = Value::of_dict(std::move(loop));
      bool stop = false;
      try {
        exec(s.body, out);
      } catch (const LoopControl& c) {
        stop = c.is_break;
      }
      scopes_.pop_back();
      if (stop) break;
    }
  }

  void bind_targets(const Stmt& s, const Value& item) {
    if (s.targets.size() == 1) {
      scopes_.back()[s.targets[0]] = item;
      return;
    }
    if (item.kind != K::list || item.list->size() != s.targets.size())
      fail(s.pos, "cannot unpack a " + std::string(kind_name(item.kind)) + " into " + std::to_string(s.targets.size()) +
                      " loop variables");
    for (std::size_t k = 0; k < s.targets.size(); ++k) scopes_.back()[s.targets[k]] = (*item.list)[k];
  }

  // ---- expressions
  Value eval(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::literal: return e.value;
      case Expr::Kind::name: {
        const Value* v = lookup(e.name);
        if (v) return *v;
        for (const char* f : kGlobals)
          if (e.name == f) return Value::function(e.name);
        return Value{};
      }
      case Expr::Kind::attr: return get_attr(eval(*e.a), e.name, e);
      case Expr::Kind::item: return get_item(eval(*e.a), eval(*e.b), e);
      case Expr::Kind::slice: return slice(e);
      case Expr::Kind::call: return call(e);
      case Expr::Kind::filter: return filter(e);
      case Expr::Kind::test: {
        const bool r = test(e);
        return Value::boolean(e.negated ? !r : r);
      }
      case Expr::Kind::unary: {
        const Value v = eval(*e.a);
        if (e.name == "not") return Value::boolean(!truthy(v));
        if (!v.is_number()) fail(e.pos, "unary " + e.name + " of a " + std::string(kind_name(v.kind)));
        if (e.name == "+") return v;
        return v.kind == K::floating ? Value::floating(-v.f) : Value::integer(-static_cast<std::int64_t>(v.number()));
      }
      case Expr::Kind::binary: return binary(e);
      case Expr::Kind::cond:
        if (truthy(eval(*e.a))) return eval(*e.b);
        return e.c ? eval(*e.c) : Value{};
      case Expr::Kind::list: {
        List l;
        for (const auto& a : e.args) l.push_back(eval(*a));
        return Value::of_list(std::move(l));
      }
      case Expr::Kind::dict: {
        Value d = Value::of_dict();
        for (std::size_t k = 0; k + 1 < e.args.size(); k += 2) {
          const Value key = eval(*e.args[k]);
          if (key.kind != K::string) fail(e.args[k]->pos, "dict keys must be strings here");
          d.set(key.s, eval(*e.args[k + 1]));
        }
        return d;
      }
    }
    return {};
  }

  [[noreturn]] void undefined_use(const Expr& e, const std::string& what) const {
    fail(e.pos, describe_expr(e) + " is undefined" + (what.empty() ? "" : " (" + what + ")"));
  }

  static std::string describe_expr(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::name: return "'" + e.name + "'";
      case Expr::Kind::attr: return describe_expr(*e.a) + "." + e.name;
      case Expr::Kind::item: return describe_expr(*e.a) + "[...]";
      default: return "the value";
    }
  }

  Value get_attr(const Value& obj, const std::string& name, const Expr& e) {
    if (obj.is_undefined()) undefined_use(*e.a, "reading ." + name);
    if (obj.is_mapping()) {
      const Value* v = obj.find(name);
      return v ? *v : Value{};
    }
    return Value{};  // methods are looked up by call(); other attributes are undefined
  }

  static std::int64_t index_of(std::int64_t i, std::size_t size) {
    return i < 0 ? i + static_cast<std::int64_t>(size) : i;
  }

  Value get_item(const Value& obj, const Value& key, const Expr& e) {
    if (obj.is_undefined()) undefined_use(*e.a, "indexing it");
    if (obj.is_mapping()) {
      if (key.kind != K::string) return Value{};
      const Value* v = obj.find(key.s);
      return v ? *v : Value{};
    }
    if (obj.kind == K::list || obj.kind == K::string) {
      if (key.kind != K::integer && key.kind != K::boolean)
        fail(e.pos, "a " + std::string(kind_name(obj.kind)) + " index must be an integer, not a " +
                        std::string(kind_name(key.kind)));
      if (obj.kind == K::list) {
        const std::int64_t i = index_of(static_cast<std::int64_t>(key.number()), obj.list->size());
        if (i < 0 || i >= static_cast<std::int64_t>(obj.list->size())) return Value{};
        return (*obj.list)[static_cast<std::size_t>(i)];
      }
      const std::vector<std::string> chars = utf8_chars(obj.s);
      const std::int64_t i = index_of(static_cast<std::int64_t>(key.number()), chars.size());
      if (i < 0 || i >= static_cast<std::int64_t>(chars.size())) return Value{};
      return Value::string(chars[static_cast<std::size_t>(i)]);
    }
    return Value{};
  }

  // Python's slice semantics (negative bounds and steps).
  Value slice(const Expr& e) {
    const Value obj = eval(*e.a);
    if (obj.is_undefined()) undefined_use(*e.a, "slicing it");
    const auto bound = [&](const ExprPtr& x) -> std::optional<std::int64_t> {
      if (!x) return std::nullopt;
      const Value v = eval(*x);
      if (v.kind == K::none) return std::nullopt;
      if (v.kind != K::integer) fail(x->pos, "slice bounds must be integers");
      return v.i;
    };
    const std::optional<std::int64_t> b = bound(e.b), c = bound(e.c), d = bound(e.d);
    const std::int64_t step = d.value_or(1);
    if (step == 0) fail(e.pos, "slice step cannot be zero");
    std::vector<std::size_t> picked;
    std::vector<std::string> chars;
    std::size_t size = 0;
    if (obj.kind == K::list) size = obj.list->size();
    else if (obj.kind == K::string) size = (chars = utf8_chars(obj.s)).size();
    else fail(e.pos, "a " + std::string(kind_name(obj.kind)) + " cannot be sliced");
    const auto n = static_cast<std::int64_t>(size);
    const auto clampi = [&](std::optional<std::int64_t> v, std::int64_t dflt, std::int64_t lo, std::int64_t hi) {
      if (!v) return dflt;
      std::int64_t x = *v < 0 ? *v + n : *v;
      return std::clamp(x, lo, hi);
    };
    if (step > 0) {
      for (std::int64_t i = clampi(b, 0, 0, n), end = clampi(c, n, 0, n); i < end; i += step)
        picked.push_back(static_cast<std::size_t>(i));
    } else {
      for (std::int64_t i = clampi(b, n - 1, -1, n - 1), end = clampi(c, -1, -1, n - 1); i > end; i += step)
        picked.push_back(static_cast<std::size_t>(i));
    }
    if (obj.kind == K::list) {
      List l;
      for (std::size_t i : picked) l.push_back((*obj.list)[i]);
      return Value::of_list(std::move(l));
    }
    std::string s;
    for (std::size_t i : picked) s += chars[i];
    return Value::string(std::move(s));
  }

  static std::vector<std::string> utf8_chars(const std::string& s) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < s.size();) {
      const auto c = static_cast<unsigned char>(s[i]);
      std::size_t n = c < 0x80 ? 1 : c >> 5 == 6 ? 2 : c >> 4 == 14 ? 3 : c >> 3 == 30 ? 4 : 1;
      n = std::min(n, s.size() - i);
      out.push_back(s.substr(i, n));
      i += n;
    }
    return out;
  }

  // ---- operators
  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Value a = eval(*e.a);
      return truthy(a) ? eval(*e.b) : a;
    }
    if (op == "or") {
      Value a = eval(*e.a);
      return truthy(a) ? a : eval(*e.b);
    }
    const Value a = eval(*e.a), b = eval(*e.b);
    if (op == "==") return Value::boolean(equal(a, b));
    if (op == "!=") return Value::boolean(!equal(a, b));
    if (op == "in" || op == "not in") {
      const bool r = contains(b, a, e);
      return Value::boolean(op == "in" ? r : !r);
    }
    if (op == "~") return bounded(Value::string(to_str(a) + to_str(b)), e);
    if (a.is_undefined()) undefined_use(*e.a, "in '" + op + "'");
    if (b.is_undefined()) undefined_use(*e.b, "in '" + op + "'");
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      int c = 0;
      if (a.is_number() && b.is_number()) c = a.number() < b.number() ? -1 : a.number() > b.number() ? 1 : 0;
      else if (a.kind == K::string && b.kind == K::string) c = a.s.compare(b.s) < 0 ? -1 : a.s == b.s ? 0 : 1;
      else type_error(e, a, b);
      return Value::boolean(op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0);
    }
    if (op == "+") {
      if (a.kind == K::string && b.kind == K::string) return bounded(Value::string(a.s + b.s), e);
      if (a.kind == K::list && b.kind == K::list) {
        if (a.list->size() + b.list->size() > kMaxOutput) fail(e.pos, "a list of more than " + std::to_string(kMaxOutput) + " items");
        List l = *a.list;
        l.insert(l.end(), b.list->begin(), b.list->end());
        return Value::of_list(std::move(l));
      }
    }
    if (op == "*") {
      if ((a.kind == K::string && b.kind == K::integer) || (a.kind == K::integer && b.kind == K::string)) {
        const Value& s = a.kind == K::string ? a : b;
        const std::int64_t times = a.kind == K::integer ? a.i : b.i;
        if (times > 0 && s.s.size() > kMaxOutput / static_cast<std::size_t>(times))
          fail(e.pos, "a string of more than " + std::to_string(kMaxOutput) + " bytes");
        std::string r;
        for (std::int64_t k = 0; k < times; ++k) r += s.s;
        return bounded(Value::string(std::move(r)), e);
      }
    }
    if (!a.is_number() || !b.is_number()) type_error(e, a, b);
    const bool ints = a.kind != K::floating && b.kind != K::floating;
    const double x = a.number(), y = b.number();
    const auto ix = static_cast<std::int64_t>(x), iy = static_cast<std::int64_t>(y);
    if (op == "+") return ints ? Value::integer(ix + iy) : Value::floating(x + y);
    if (op == "-") return ints ? Value::integer(ix - iy) : Value::floating(x - y);
    if (op == "*") return ints ? Value::integer(ix * iy) : Value::floating(x * y);
    if (op == "/") {
      if (y == 0) fail(e.pos, "division by zero");
      return Value::floating(x / y);
    }
    if (op == "//" || op == "%") {
      if (y == 0) fail(e.pos, "division by zero");
      if (ints) {
        std::int64_t q = ix / iy, r = ix % iy;
        if (r != 0 && ((r < 0) != (iy < 0))) --q, r += iy;  // Python floors
        return Value::integer(op == "//" ? q : r);
      }
      const double q = std::floor(x / y);
      return Value::floating(op == "//" ? q : x - q * y);
    }
    if (op == "**") {
      if (ints && iy >= 0) {
        std::int64_t r = 1;
        for (std::int64_t k = 0; k < iy; ++k) r *= ix;
        return Value::integer(r);
      }
      return Value::floating(std::pow(x, y));
    }
    fail(e.pos, "unknown operator " + op);
  }

  // A string past the output bound (a template doubling a string in a loop) is an error, not
  // gigabytes of memory.
  // The bytes all such strings add up to are bounded too, so that a loop of large copies ends.
  Value bounded(Value v, const Expr& e) {
    if (v.s.size() > kMaxOutput) fail(e.pos, "a string of more than " + std::to_string(kMaxOutput) + " bytes");
    if ((string_work_ += v.s.size()) > kMaxStringWork)
      fail(e.pos, "the template built more than " + std::to_string(kMaxStringWork) + " bytes of strings");
    return v;
  }
  static constexpr std::size_t kMaxStringWork = 1u << 28;
  std::size_t string_work_ = 0;

  [[noreturn]] void type_error(const Expr& e, const Value& a, const Value& b) const {
    fail(e.pos, "unsupported operand types for " + e.name + ": " + std::string(kind_name(a.kind)) + " and " +
                    std::string(kind_name(b.kind)));
  }

  bool contains(const Value& hay, const Value& needle, const Expr& e) {
    switch (hay.kind) {
      case K::string:
        if (needle.kind != K::string) fail(e.pos, "'in <string>' needs a string on the left");
        return hay.s.find(needle.s) != std::string::npos;
      case K::list:
        return std::any_of(hay.list->begin(), hay.list->end(), [&](const Value& v) { return equal(v, needle); });
      case K::dict:
      case K::ns: return needle.kind == K::string && hay.find(needle.s) != nullptr;
      case K::undefined: undefined_use(*e.b, "in 'in'");
      default: fail(e.pos, "'in' a " + std::string(kind_name(hay.kind)));
    }
  }

  // ---- calls: globals, macros and methods
  struct Args {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
    const Value* get(std::size_t i, std::string_view name) const {
      if (i < pos.size()) return &pos[i];
      for (const auto& [k, v] : kw)
        if (k == name) return &v;
      return nullptr;
    }
  };

  Args eval_args(const Expr& e) {
    Args a;
    for (const auto& x : e.args) a.pos.push_back(eval(*x));
    for (const auto& [k, x] : e.kwargs) a.kw.emplace_back(k, eval(*x));
    return a;
  }

  std::string need_string(const Value* v, const Expr& e, std::string_view what) {
    if (!v || v->kind != K::string) fail(e.pos, std::string(what) + " must be a string");
    return v->s;
  }
  std::int64_t need_int(const Value* v, const Expr& e, std::string_view what) {
    if (!v || (v->kind != K::integer && v->kind != K::boolean)) fail(e.pos, std::string(what) + " must be an integer");
    return static_cast<std::int64_t>(v->number());
  }

  Value call(const Expr& e) {
    const Expr& callee = *e.a;
    if (callee.kind == Expr::Kind::attr) {
      Value obj = eval(*callee.a);
      if (obj.is_undefined()) undefined_use(*callee.a, "calling ." + callee.name + "()");
      return method(obj, callee.name, eval_args(e), e);
    }
    if (callee.kind != Expr::Kind::name) fail(e.pos, "only functions and methods can be called");
    const std::string& f = callee.name;
    if (const auto m = macros_.find(f); m != macros_.end()) return call_macro(*m->second.def, eval_args(e), e);
    Args a = eval_args(e);
    if (f == "raise_exception") throw Error(t_.name + ": the template raised an error: " + need_string(a.get(0, "message"), e, "the message"));
    if (f == "namespace" || f == "dict") {
      Dict d;
      for (auto& [k, v] : a.kw) d.emplace_back(k, v);
      if (!a.pos.empty()) fail(e.pos, f + "() takes keyword arguments only here");
      return f == "namespace" ? Value::of_namespace(std::move(d)) : Value::of_dict(std::move(d));
    }
    if (f == "range") {
      std::int64_t start = 0, stop = 0, step = 1;
      if (a.pos.size() == 1) stop = need_int(&a.pos[0], e, "range's argument");
      else if (a.pos.size() >= 2) {
        start = need_int(&a.pos[0], e, "range's start"), stop = need_int(&a.pos[1], e, "range's stop");
        if (a.pos.size() == 3) step = need_int(&a.pos[2], e, "range's step");
      } else fail(e.pos, "range() needs 1 to 3 arguments");
      if (step == 0) fail(e.pos, "range() step cannot be zero");
      List l;
      for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        l.push_back(Value::integer(i));
        if (l.size() > 1'000'000) fail(e.pos, "range() of more than a million values");
      }
      return Value::of_list(std::move(l));
    }
    if (f == "strftime_now") {
      const std::string fmt = need_string(a.get(0, "format"), e, "strftime_now's format");
      const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
      std::tm tm{};
      localtime_r(&now, &tm);
      char buf[256];
      const std::size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
      return Value::string(std::string(buf, n));
    }
    if (lookup(f) == nullptr) fail(e.pos, "'" + f + "' is undefined (not a function Orion's renderer has)");
    fail(e.pos, "'" + f + "' is not callable");
  }

  // Templates are data from a model folder: a loop of loops or a macro calling itself must end
  // in an error, not hang or overflow the stack.
  void step(const Pos& p, const std::string& out) {
    if (++steps_ > kMaxSteps) fail(p, "the template ran more than " + std::to_string(kMaxSteps) + " loop steps");
    if (out.size() > kMaxOutput) fail(p, "the template's output passed " + std::to_string(kMaxOutput) + " bytes");
  }
  static constexpr std::int64_t kMaxSteps = 1'000'000;
  static constexpr std::size_t kMaxOutput = 64u << 20;
  static constexpr int kMaxMacroDepth = 64;

  Value call_macro(const Stmt& m, const Args& a, const Expr& e) {
    if (macro_depth_ >= kMaxMacroDepth) fail(e.pos, "macros nested more than " + std::to_string(kMaxMacroDepth) + " calls deep");
    ++macro_depth_;
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{macro_depth_};
    if (a.pos.size() > m.targets.size()) fail(e.pos, "macro " + m.text + " takes " + std::to_string(m.targets.size()) + " arguments");
    std::map<std::string, Value> frame;
    for (std::size_t k = 0; k < m.targets.size(); ++k) {
      const Value* v = a.get(k, m.targets[k]);
      frame[m.targets[k]] = v ? *v : m.defaults[k] ? eval(*m.defaults[k]) : Value{};
    }
    // A macro sees the template's top-level names and its arguments, not the caller's locals.
    std::vector<std::map<std::string, Value>> saved(scopes_.begin() + 1, scopes_.end());
    scopes_.resize(1);
    scopes_.push_back(std::move(frame));
    std::string out;
    try {
      exec_outside_loops(m.body, out, m.pos);
    } catch (...) {
      scopes_.resize(1);
      scopes_.insert(scopes_.end(), saved.begin(), saved.end());
      throw;
    }
    scopes_.resize(1);
    scopes_.insert(scopes_.end(), saved.begin(), saved.end());
    return Value::string(std::move(out));
  }

  static std::string strip_chars(const std::string& s, const std::string& chars, bool left, bool right) {
    std::size_t b = 0, e = s.size();
    const auto in = [&](char c) { return chars.find(c) != std::string::npos; };
    if (left) while (b < e && in(s[b])) ++b;
    if (right) while (e > b && in(s[e - 1])) --e;
    return s.substr(b, e - b);
  }
  static constexpr const char* kWhitespace = " \t\n\r\v\f";

  Value method(const Value& obj, const std::string& name, const Args& a, const Expr& e) {
    if (obj.kind == K::string) {
      const std::string& s = obj.s;
      if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const Value* c = a.get(0, "chars");
        const std::string chars = c && c->kind == K::string ? c->s : kWhitespace;
        return Value::string(strip_chars(s, chars, name != "rstrip", name != "lstrip"));
      }
      if (name == "startswith" || name == "endswith") {
        const Value* p = a.get(0, "prefix");
        std::vector<std::string> options;
        if (p && p->kind == K::list)
          for (const Value& v : *p->list) options.push_back(need_string(&v, e, name + "'s argument"));
        else options.push_back(need_string(p, e, name + "'s argument"));
        for (const std::string& o : options) {
          if (name == "startswith" ? s.rfind(o, 0) == 0 : (s.size() >= o.size() && s.compare(s.size() - o.size(), o.size(), o) == 0))
            return Value::boolean(true);
        }
        return Value::boolean(false);
      }
      if (name == "split") {
        const Value* sep = a.get(0, "sep");
        const Value* maxv = a.get(1, "maxsplit");
        std::int64_t maxsplit = maxv ? need_int(maxv, e, "maxsplit") : -1;
        List parts;
        if (!sep || sep->kind == K::none) {  // runs of whitespace, no empty parts
          std::size_t i = 0;
          while (true) {
            while (i < s.size() && std::string(kWhitespace).find(s[i]) != std::string::npos) ++i;
            if (i >= s.size()) break;
            if (maxsplit == 0) {
              parts.push_back(Value::string(strip_chars(s.substr(i), kWhitespace, false, true)));
              break;
            }
            std::size_t j = i;
            while (j < s.size() && std::string(kWhitespace).find(s[j]) == std::string::npos) ++j;
            parts.push_back(Value::string(s.substr(i, j - i)));
            --maxsplit;
            i = j;
          }
          return Value::of_list(std::move(parts));
        }
        const std::string d = need_string(sep, e, "split's separator");
        if (d.empty()) fail(e.pos, "empty separator");
        std::size_t i = 0;
        while (maxsplit != 0) {
          const std::size_t j = s.find(d, i);
          if (j == std::string::npos) break;
          parts.push_back(Value::string(s.substr(i, j - i)));
          i = j + d.size();
          --maxsplit;
        }
        parts.push_back(Value::string(s.substr(i)));
        return Value::of_list(std::move(parts));
      }
      if (name == "upper" || name == "lower" || name == "title" || name == "capitalize")
        return apply_case(name, s);
      if (name == "replace")
        return Value::string(replace_all(s, need_string(a.get(0, "old"), e, "replace's old"),
                                         need_string(a.get(1, "new"), e, "replace's new"),
                                         a.get(2, "count") ? need_int(a.get(2, "count"), e, "count") : -1));
      if (name == "find") {
        const std::size_t at = s.find(need_string(a.get(0, "sub"), e, "find's argument"));
        return Value::integer(at == std::string::npos ? -1 : static_cast<std::int64_t>(at));
      }
      if (name == "count") {
        const std::string sub = need_string(a.get(0, "sub"), e, "count's argument");
        std::int64_t n = 0;
        for (std::size_t at = s.find(sub); !sub.empty() && at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
        return Value::integer(n);
      }
      if (name == "join") {
        const Value* l = a.get(0, "iterable");
        if (!l || l->kind != K::list) fail(e.pos, "join's argument must be a list");
        std::string r;
        for (std::size_t k = 0; k < l->list->size(); ++k) r += (k ? s : "") + to_str((*l->list)[k]);
        return bounded(Value::string(std::move(r)), e);
      }
    } else if (obj.is_mapping()) {
      if (name == "items" || name == "keys" || name == "values") {
        List l;
        for (const auto& [k, v] : *obj.dict)
          l.push_back(name == "items"  ? Value::of_list({Value::string(k), v})
                      : name == "keys" ? Value::string(k)
                                       : v);
        return Value::of_list(std::move(l));
      }
      if (name == "get") {
        const std::string k = need_string(a.get(0, "key"), e, "get's key");
        const Value* v = obj.find(k);
        if (v) return *v;
        const Value* d = a.get(1, "default");
        return d ? *d : Value::none();
      }
    } else if (obj.kind == K::list) {
      if (name == "index") {
        const Value* x = a.get(0, "value");
        for (std::size_t k = 0; x && k < obj.list->size(); ++k)
          if (equal((*obj.list)[k], *x)) return Value::integer(static_cast<std::int64_t>(k));
        fail(e.pos, "the value is not in the list");
      }
      if (name == "count") {
        const Value* x = a.get(0, "value");
        return Value::integer(x ? std::count_if(obj.list->begin(), obj.list->end(), [&](const Value& v) { return equal(v, *x); }) : 0);
      }
      if (name == "append" || name == "pop" || name == "insert" || name == "extend")
        fail(e.pos, "list." + name + "() changes a list, which chat templates' sandbox forbids");
    }
    fail(e.pos, "a " + std::string(kind_name(obj.kind)) + " has no method ." + name + "() in Orion's renderer");
  }

  static Value apply_case(const std::string& how, const std::string& s) {
    std::string r = s;
    if (how == "upper") {
      for (char& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    } else if (how == "lower") {
      for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (how == "capitalize") {
      for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!r.empty()) r[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(r[0])));
    } else {  // title: each run of letters starts upper case
      bool start = true;
      for (char& c : r) {
        const bool alpha = std::isalpha(static_cast<unsigned char>(c)) != 0;
        c = static_cast<char>(alpha && start ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
        start = !alpha;
      }
    }
    return Value::string(std::move(r));
  }

  static std::string replace_all(const std::string& s, const std::string& from, const std::string& to, std::int64_t count) {
    if (from.empty()) return s;
    std::string r;
    std::size_t i = 0;
    while (count != 0) {
      const std::size_t j = s.find(from, i);
      if (j == std::string::npos) break;
      r += s.substr(i, j - i) + to;
      i = j + from.size();
      --count;
    }
    return r + s.substr(i);
  }

  // ---- filters
  Value filter(const Expr& e) {
    const Value v = eval(*e.a);
    const Args a = eval_args(e);
    return apply_filter(e.name, v, a, e);
  }

  Value apply_filter(const std::string& f, const Value& v, const Args& a, const Expr& e) {
    if (f == "default" || f == "d") {
      const Value* d = a.get(0, "default_value");
      const Value* boolean = a.get(1, "boolean");
      const bool use = v.is_undefined() || (boolean && truthy(*boolean) && !truthy(v));
      return use ? (d ? *d : Value::string("")) : v;
    }
    if (f == "length" || f == "count") {
      switch (v.kind) {
        case K::string: return Value::integer(static_cast<std::int64_t>(utf8_chars(v.s).size()));
        case K::list: return Value::integer(static_cast<std::int64_t>(v.list->size()));
        case K::dict:
        case K::ns: return Value::integer(static_cast<std::int64_t>(v.dict->size()));
        case K::undefined: return Value::integer(0);
        default: fail(e.pos, "a " + std::string(kind_name(v.kind)) + " has no length");
      }
    }
    if (v.is_undefined() && f != "tojson" && f != "string" && f != "list")
      undefined_use(*e.a, "filtered by " + f);
    if (f == "trim") {
      const Value* c = a.get(0, "chars");
      return Value::string(strip_chars(to_str(v), c && c->kind == K::string ? c->s : kWhitespace, true, true));
    }
    if (f == "tojson") {
      const Value* indent = a.get(0, "indent");
      return Value::string(to_json(v, indent && indent->kind == K::integer ? static_cast<int>(indent->i) : -1));
    }
    if (f == "string") return Value::string(to_str(v));
    if (f == "safe") return v;  // chat templates render without autoescaping
    if (f == "upper" || f == "lower" || f == "title" || f == "capitalize") return apply_case(f, to_str(v));
    if (f == "int") {
      if (v.is_number()) return Value::integer(static_cast<std::int64_t>(v.number()));
      try {
        return Value::integer(std::stoll(to_str(v)));
      } catch (...) {
        const Value* d = a.get(0, "default");
        return d ? *d : Value::integer(0);
      }
    }
    if (f == "float") {
      if (v.is_number()) return Value::floating(v.number());
      try {
        return Value::floating(std::stod(to_str(v)));
      } catch (...) {
        return Value::floating(0);
      }
    }
    if (f == "abs") {
      if (!v.is_number()) fail(e.pos, "abs of a " + std::string(kind_name(v.kind)));
      return v.kind == K::floating ? Value::floating(std::abs(v.f)) : Value::integer(std::abs(static_cast<std::int64_t>(v.number())));
    }
    if (f == "replace")
      return Value::string(replace_all(to_str(v), need_string(a.get(0, "old"), e, "replace's old"),
                                       need_string(a.get(1, "new"), e, "replace's new"),
                                       a.get(2, "count") ? need_int(a.get(2, "count"), e, "count") : -1));
    if (f == "indent") {
      const Value* w = a.get(0, "width");
      const std::string pad = w && w->kind == K::string ? w->s : std::string(static_cast<std::size_t>(w ? need_int(w, e, "width") : 4), ' ');
      const Value* first = a.get(1, "first");
      const Value* blank = a.get(2, "blank");
      const std::string s = to_str(v);
      std::string r;
      std::size_t i = 0;
      bool line_one = true;
      while (i <= s.size()) {
        std::size_t j = s.find('\n', i);
        const bool last = j == std::string::npos;
        const std::string line = s.substr(i, last ? std::string::npos : j - i);
        if ((!line_one || (first && truthy(*first))) && (!line.empty() || (blank && truthy(*blank)))) r += pad;
        r += line;
        if (last) break;
        r += '\n';
        i = j + 1;
        line_one = false;
      }
      return Value::string(std::move(r));
    }
    if (f == "join") {
      const Value* sep = a.get(0, "d");
      const Value* attr = a.get(1, "attribute");
      std::string r;
      const List items = iterate(v, e.pos);
      for (std::size_t k = 0; k < items.size(); ++k) {
        const Value x = attr ? attribute(items[k], *attr, e) : items[k];
        r += (k && sep ? to_str(*sep) : "") + to_str(x);
      }
      return bounded(Value::string(std::move(r)), e);
    }
    if (f == "first" || f == "last") {
      const List items = iterate(v, e.pos);
      if (items.empty()) return Value{};
      return f == "first" ? items.front() : items.back();
    }
    if (f == "list") return Value::of_list(iterate(v, e.pos));
    if (f == "reverse") {
      if (v.kind == K::string) {
        std::vector<std::string> c = utf8_chars(v.s);
        std::string r;
        for (auto it = c.rbegin(); it != c.rend(); ++it) r += *it;
        return Value::string(std::move(r));
      }
      List l = iterate(v, e.pos);
      std::reverse(l.begin(), l.end());
      return Value::of_list(std::move(l));
    }
    if (f == "items") {
      if (!v.is_mapping()) fail(e.pos, "items of a " + std::string(kind_name(v.kind)));
      return method(v, "items", {}, e);
    }
    if (f == "unique") {
      List out;
      for (const Value& x : iterate(v, e.pos))
        if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return equal(x, y); })) out.push_back(x);
      return Value::of_list(std::move(out));
    }
    if (f == "map") {
      List out;
      const Value* attr = nullptr;
      for (const auto& [k, x] : a.kw)
        if (k == "attribute") attr = &x;
      for (const Value& x : iterate(v, e.pos)) {
        if (attr) out.push_back(attribute(x, *attr, e));
        else {
          Args rest;
          rest.pos.assign(a.pos.begin() + (a.pos.empty() ? 0 : 1), a.pos.end());
          out.push_back(apply_filter(need_string(a.get(0, "filter"), e, "map's filter"), x, rest, e));
        }
      }
      return Value::of_list(std::move(out));
    }
    if (f == "selectattr" || f == "rejectattr" || f == "select" || f == "reject") {
      const bool by_attr = f == "selectattr" || f == "rejectattr";
      const bool keep = f == "selectattr" || f == "select";
      const std::size_t t = by_attr ? 1 : 0;
      List out;
      for (const Value& x : iterate(v, e.pos)) {
        const Value subject = by_attr ? attribute(x, a.pos.empty() ? Value{} : a.pos[0], e) : x;
        bool r = truthy(subject);
        if (a.pos.size() > t) {
          std::vector<Value> targs(a.pos.begin() + static_cast<std::ptrdiff_t>(t) + 1, a.pos.end());
          r = apply_test(need_string(&a.pos[t], e, f + "'s test"), subject, targs, e);
        }
        if (r == keep) out.push_back(x);
      }
      return Value::of_list(std::move(out));
    }
    if (f == "dictsort") {
      if (!v.is_mapping()) fail(e.pos, "dictsort of a " + std::string(kind_name(v.kind)));
      Dict d = *v.dict;
      std::sort(d.begin(), d.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      List out;
      for (auto& [k, x] : d) out.push_back(Value::of_list({Value::string(k), x}));
      return Value::of_list(std::move(out));
    }
    if (f == "round") {
      if (!v.is_number()) fail(e.pos, "round of a " + std::string(kind_name(v.kind)));
      const Value* p = a.get(0, "precision");
      const double m = std::pow(10.0, p ? static_cast<double>(need_int(p, e, "precision")) : 0.0);
      return Value::floating(std::nearbyint(v.number() * m) / m);
    }
    if (f == "wordcount") return Value::integer(static_cast<std::int64_t>(method(Value::string(to_str(v)), "split", {}, e).list->size()));
    fail(e.pos, "the filter '" + f + "' is not supported by Orion's chat-template renderer");
  }

  Value attribute(const Value& x, const Value& attr, const Expr& e) {
    if (attr.kind == K::integer) return x.kind == K::list ? get_item(x, attr, e) : Value{};
    const std::string path = need_string(&attr, e, "the attribute");
    Value cur = x;
    std::size_t i = 0;
    while (true) {
      const std::size_t dot = path.find('.', i);
      const std::string part = path.substr(i, dot == std::string::npos ? std::string::npos : dot - i);
      cur = cur.is_mapping() && cur.find(part) ? *cur.find(part) : Value{};
      if (dot == std::string::npos) return cur;
      i = dot + 1;
    }
  }

  // ---- tests
  bool test(const Expr& e) {
    if (e.name == "defined" || e.name == "undefined") {
      const Value v = eval_lenient(*e.a);
      return e.name == "defined" ? !v.is_undefined() : v.is_undefined();
    }
    const Value v = eval(*e.a);
    std::vector<Value> args;
    for (const auto& x : e.args) args.push_back(eval(*x));
    return apply_test(e.name, v, args, e);
  }

  // `x.y is defined` must not fail when x itself is undefined.
  Value eval_lenient(const Expr& e) {
    if (e.kind == Expr::Kind::attr) {
      const Value obj = eval_lenient(*e.a);
      if (obj.is_undefined()) return Value{};
      return get_attr(obj, e.name, e);
    }
    if (e.kind == Expr::Kind::item) {
      const Value obj = eval_lenient(*e.a);
      if (obj.is_undefined()) return Value{};
      return get_item(obj, eval(*e.b), e);
    }
    return eval(e);
  }

  bool apply_test(const std::string& t, const Value& v, const std::vector<Value>& args, const Expr& e) {
    if (t == "defined") return !v.is_undefined();
    if (t == "undefined") return v.is_undefined();
    if (t == "none") return v.kind == K::none;
    if (t == "string") return v.kind == K::string;
    if (t == "number") return v.kind == K::integer || v.kind == K::floating;
    if (t == "integer") return v.kind == K::integer;
    if (t == "float") return v.kind == K::floating;
    if (t == "boolean") return v.kind == K::boolean;
    if (t == "true") return v.kind == K::boolean && v.b;
    if (t == "false") return v.kind == K::boolean && !v.b;
    if (t == "mapping") return v.kind == K::dict;
    if (t == "sequence" || t == "iterable") return v.kind == K::list || v.kind == K::string || (t == "iterable" && v.kind == K::dict);
    if (t == "callable") return v.kind == K::function;
    if (t == "lower" || t == "upper") {
      if (v.kind != K::string) return false;
      return apply_case(t, v.s).s == v.s;
    }
    if (t == "equalto" || t == "eq" || t == "==" || t == "sameas") {
      if (args.empty()) fail(e.pos, "the test '" + t + "' needs an argument");
      return equal(v, args[0]);
    }
    if (t == "ne") return args.empty() || !equal(v, args[0]);
    if (t == "in") {
      if (args.empty()) fail(e.pos, "the test 'in' needs an argument");
      return contains(args[0], v, e);
    }
    if (t == "odd" || t == "even" || t == "divisibleby") {
      if (v.kind != K::integer) fail(e.pos, "the test '" + t + "' needs an integer");
      if (t == "divisibleby") {
        if (args.empty() || args[0].kind != K::integer || args[0].i == 0) fail(e.pos, "divisibleby needs a non-zero integer");
        return v.i % args[0].i == 0;
      }
      return (v.i % 2 != 0) == (t == "odd");
    }
    fail(e.pos, "the test '" + t + "' is not supported by Orion's chat-template renderer");
  }

  const Template& t_;
  std::vector<std::map<std::string, Value>> scopes_;
  std::map<std::string, Macro> macros_;
  std::int64_t steps_ = 0;
  int macro_depth_ = 0;
};

}  // namespace

std::string render(const Template& t, const Dict& variables) { return Renderer(t, variables).run(); }

}  // namespace orion::text::jinja
