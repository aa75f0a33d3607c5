#pragma once
// A parsed template: statements and expressions of the Jinja subset chat templates use
// (jinja_parser.h says which). Nodes keep their line and column for messages.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/jinja_value.h"

namespace orion::text::jinja {

struct Pos {
  std::int64_t line = 1, column = 1;
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind : std::uint8_t {
    literal,    // value
    name,       // name
    attr,       // a.name
    item,       // a[b]
    slice,      // a[b:c:d]; absent parts are null
    call,       // a(args, kwargs)
    filter,     // a | name(args, kwargs)
    test,       // a is [not] name(args)
    unary,      // op a: "not", "-", "+"
    binary,     // a op b: or and == != < <= > >= in "not in" + - ~ * / // % **
    cond,       // b if a else c (a the condition)
    list,       // [args...] or (args...)
    dict,       // {kwargs...} with keys as expressions in args (key, value pairs)
  };
  Kind kind = Kind::literal;
  Pos pos;
  Value value;
  std::string name;  // name, attr, filter or test name, operator
  bool negated = false;  // test: "is not"
  ExprPtr a, b, c, d;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  enum class Kind : std::uint8_t {
    text,       // text
    output,     // {{ expr }}
    if_,        // branches: (condition, body)...; else_body
    for_,       // for targets in expr [if filter]: body [else else_body]
    set,        // set target[.attr] = expr
    set_block,  // set target %} body {% endset
    macro,      // macro name(params) body
    call_block, // not supported: refused at parse
    break_,
    continue_,
    generation,  // transformers' {% generation %} marks assistant text: rendered as its body
  };
  Kind kind = Kind::text;
  Pos pos;
  std::string text;                   // text; set's target; macro's name
  std::string attr;                   // set ns.attr: the attribute
  std::vector<std::string> targets;   // for's loop variables; macro's parameter names
  std::vector<ExprPtr> defaults;      // macro: a default per parameter (null: none)
  ExprPtr expr, filter;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body, else_body;
};

struct Template {
  std::string name;  // for messages: the file the template came from
  Body body;
};

}  // namespace orion::text::jinja
