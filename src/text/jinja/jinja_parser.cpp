#include "text/jinja/jinja_parser.h"

#include <cctype>
#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "core/error.h"

namespace orion::text::jinja {

namespace {

// One piece of the template: text between tags, or the inside of a tag.
struct Piece {
  enum class Kind : std::uint8_t { text, expr, stmt } kind;
  std::string text;
  Pos pos;  // of the text, or of the tag's first character after its opening
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

class Splitter {
 public:
  Splitter(std::string_view s, const std::string& name) : s_(s), name_(name) {}

  std::vector<Piece> run() {
    std::vector<Piece> out;
    std::size_t i = 0;
    bool trim_next_newline = false, strip_next = false;
    while (i < s_.size()) {
      const std::size_t open = find_open(i);
      std::string text(s_.substr(i, open - i));
      const Pos text_pos = pos_of(i);
      if (strip_next) {
        std::size_t k = 0;
        while (k < text.size() && is_space(text[k])) ++k;
        text.erase(0, k);
      } else if (trim_next_newline) {
        if (text.rfind("\r\n", 0) == 0) text.erase(0, 2);
        else if (!text.empty() && text[0] == '\n') text.erase(0, 1);
      }
      strip_next = trim_next_newline = false;
      if (open == s_.size()) {
        if (!text.empty()) out.push_back({Piece::Kind::text, std::move(text), text_pos});
        break;
      }
      const char kind = s_[open + 1];  // '{', '%' or '#'
      std::size_t inner = open + 2;
      const bool minus = inner < s_.size() && s_[inner] == '-';
      const bool plus = inner < s_.size() && s_[inner] == '+';
      if (minus || plus) ++inner;
      if (minus) {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (kind != '{' && !plus) {
        // lstrip_blocks: spaces and tabs from the start of the line to a block or comment tag.
        std::size_t ws = open;
        while (ws > i && (s_[ws - 1] == ' ' || s_[ws - 1] == '\t')) --ws;
        if (ws == 0 || s_[ws - 1] == '\n') text.resize(text.size() - std::min(text.size(), open - ws));
      }
      if (!text.empty()) out.push_back({Piece::Kind::text, std::move(text), text_pos});
      const std::string_view close = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
      std::size_t end = s_.find(close, inner);
      if (kind != '#') end = find_close(inner, close);
      if (end == std::string_view::npos)
        fail(open, std::string("the tag opened here is never closed with '") + std::string(close) + "'");
      std::size_t body_end = end;
      const bool close_minus = end > inner && s_[end - 1] == '-';
      if (close_minus) --body_end;
      if (kind != '#') out.push_back({kind == '{' ? Piece::Kind::expr : Piece::Kind::stmt,
                                      std::string(s_.substr(inner, body_end - inner)), pos_of(inner)});
      i = end + 2;
      strip_next = close_minus;
      trim_next_newline = !close_minus && kind != '{';
    }
    return out;
  }

  Pos pos_of(std::size_t offset) const {
    Pos p;
    for (std::size_t k = 0; k < offset && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++p.line;
        p.column = 1;
      } else {
        ++p.column;
      }
    }
    return p;
  }

 private:
  [[noreturn]] void fail(std::size_t offset, const std::string& what) const {
    const Pos p = pos_of(offset);
    throw Error::at_line(name_, p.line, p.column, what);
  }
  std::size_t find_open(std::size_t from) const {
    for (std::size_t k = from; k + 1 < s_.size(); ++k)
      if (s_[k] == '{' && (s_[k + 1] == '{' || s_[k + 1] == '%' || s_[k + 1] == '#')) return k;
    return s_.size();
  }
  // The closing delimiter outside string literals.
  std::size_t find_close(std::size_t from, std::string_view close) const {
    char quote = 0;
    for (std::size_t k = from; k + 1 < s_.size(); ++k) {
      const char c = s_[k];
      if (quote) {
        if (c == '\\') ++k;
        else if (c == quote) quote = 0;
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (s_.substr(k, 2) == close) {
        return k;
      }
    }
    return std::string_view::npos;
  }

  std::string_view s_;
  const std::string& name_;
};

struct Token {
  enum class Kind : std::uint8_t { name, string, integer, floating, op, end } kind;
  std::string text;
  Pos pos;
};

// Tokens of one tag's inside.
std::vector<Token> tokenize(const Piece& piece, const std::string& name) {
  std::vector<Token> out;
  const std::string& s = piece.text;
  Pos p = piece.pos;
  std::size_t i = 0;
  const auto advance = [&](std::size_t n) {
    for (std::size_t k = 0; k < n; ++k, ++i) {
      if (s[i] == '\n') {
        ++p.line;
        p.column = 1;
      } else {
        ++p.column;
      }
    }
  };
  while (i < s.size()) {
    if (is_space(s[i])) {
      advance(1);
      continue;
    }
    const Pos at = p;
    const char c = s[i];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t k = i;
      while (k < s.size() && (std::isalnum(static_cast<unsigned char>(s[k])) || s[k] == '_')) ++k;
      out.push_back({Token::Kind::name, s.substr(i, k - i), at});
      advance(k - i);
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t k = i;
      while (k < s.size() && (std::isdigit(static_cast<unsigned char>(s[k])) || s[k] == '_')) ++k;
      bool floating = false;
      if (k + 1 < s.size() && s[k] == '.' && std::isdigit(static_cast<unsigned char>(s[k + 1]))) {
        floating = true;
        ++k;
        while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
      }
      if (k < s.size() && (s[k] == 'e' || s[k] == 'E')) {
        std::size_t e = k + 1;
        if (e < s.size() && (s[e] == '+' || s[e] == '-')) ++e;
        if (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) {
          floating = true;
          k = e;
          while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
        }
      }
      std::string digits;
      for (std::size_t q = i; q < k; ++q)
        if (s[q] != '_') digits += s[q];
      out.push_back({floating ? Token::Kind::floating : Token::Kind::integer, digits, at});
      advance(k - i);
    } else if (c == '\'' || c == '"') {
      std::string v;
      std::size_t k = i + 1;
      for (; k < s.size() && s[k] != c; ++k) {
        if (s[k] != '\\' || k + 1 >= s.size()) {
          v += s[k];
          continue;
        }
        const char e = s[++k];
        switch (e) {
          case 'n': v += '\n'; break;
          case 't': v += '\t'; break;
          case 'r': v += '\r'; break;
          case '\\': v += '\\'; break;
          case '\'': v += '\''; break;
          case '"': v += '"'; break;
          case '\n': break;
          default: v += '\\', v += e;  // Python keeps unknown escapes as they are
        }
      }
      if (k >= s.size()) throw Error::at_line(name, at.line, at.column, "the string opened here is never closed");
      out.push_back({Token::Kind::string, std::move(v), at});
      advance(k + 1 - i);
    } else {
      static constexpr std::string_view kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                                  ">",  "(",  ")",  "[",  "]",  "{",  "}", ",", ".", ":", "|", "="};
      std::string_view op;
      for (std::string_view o : kOps)
        if (s.compare(i, o.size(), o) == 0) {
          op = o;
          break;
        }
      if (op.empty())
        throw Error::at_line(name, at.line, at.column, std::string("unexpected character '") + printable(std::string(1, c)) + "'");
      out.push_back({Token::Kind::op, std::string(op), at});
      advance(op.size());
    }
  }
  out.push_back({Token::Kind::end, "", p});
  return out;
}

// Recursive descent over one tag's tokens, with Jinja's precedence: conditional, or, and, not,
// comparisons, + -, ~, * / // %, **, unary - +, then postfix (attributes, items, calls) with
// filters and tests.
class ExprParser {
 public:
  ExprParser(std::vector<Token> tokens, const std::string& name) : t_(std::move(tokens)), name_(name) {}

  const Token& peek(std::size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  bool at_end() const { return peek().kind == Token::Kind::end; }
  bool is_op(std::string_view op, std::size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::op && peek(ahead).text == op;
  }
  bool is_name(std::string_view n, std::size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::name && peek(ahead).text == n;
  }
  Token next() { return t_[std::min(i_++, t_.size() - 1)]; }
  [[noreturn]] void fail(const Token& at, const std::string& what) const {
    throw Error::at_line(name_, at.pos.line, at.pos.column, what);
  }
  void expect_op(std::string_view op) {
    if (!is_op(op)) fail(peek(), "expected '" + std::string(op) + "', found " + describe(peek()));
    ++i_;
  }
  std::string expect_name() {
    if (peek().kind != Token::Kind::name) fail(peek(), "expected a name, found " + describe(peek()));
    return next().text;
  }
  void expect_end(std::string_view what) {
    if (!at_end()) fail(peek(), "unexpected " + describe(peek()) + " after " + std::string(what));
  }
  static std::string describe(const Token& t) {
    return t.kind == Token::Kind::end ? "the end of the tag" : "'" + printable(t.text) + "'";
  }

  ExprPtr expression() {
    ExprPtr e = or_expr();
    while (is_name("if")) {
      const Pos at = next().pos;
      auto c = node(Expr::Kind::cond, at);
      c->a = or_expr();
      c->b = std::move(e);
      if (is_name("else")) {
        next();
        c->c = expression();
      }
      e = std::move(c);
    }
    return e;
  }

  // The iterable of a for tag: no conditional, so that "for x in xs if c" filters.
  ExprPtr expression_no_cond() { return or_expr(); }

  // A tuple without brackets where statements allow one ("for a, b in ...", "set a, b = ...").
  ExprPtr expression_or_tuple() {
    ExprPtr e = expression();
    if (!is_op(",")) return e;
    auto l = node(Expr::Kind::list, e->pos);
    l->args.push_back(std::move(e));
    while (is_op(",")) {
      next();
      if (at_end()) break;
      l->args.push_back(expression());
    }
    return l;
  }

 private:
  ExprPtr node(Expr::Kind k, Pos p) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->pos = p;
    return e;
  }
  ExprPtr binary(std::string op, ExprPtr a, ExprPtr b, Pos p) {
    auto e = node(Expr::Kind::binary, p);
    e->name = std::move(op);
    e->a = std::move(a);
    e->b = std::move(b);
    return e;
  }

  // One level of left-associative binary operators (op tokens, or keywords such as "or").
  ExprPtr left(std::initializer_list<std::string_view> ops, bool keywords, ExprPtr (ExprParser::*operand)()) {
    ExprPtr e = (this->*operand)();
    while (std::any_of(ops.begin(), ops.end(), [&](std::string_view o) { return keywords ? is_name(o) : is_op(o); })) {
      const Token op = next();
      e = binary(op.text, std::move(e), (this->*operand)(), op.pos);
    }
    return e;
  }
  ExprPtr or_expr() { return left({"or"}, true, &ExprParser::and_expr); }
  ExprPtr and_expr() { return left({"and"}, true, &ExprParser::not_expr); }
  ExprPtr not_expr() {
    if (is_name("not")) {
      const Pos p = next().pos;
      auto e = node(Expr::Kind::unary, p);
      e->name = "not";
      e->a = not_expr();
      return e;
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr e = math1();
    while (true) {
      const Token& t = peek();
      std::string op;
      if (t.kind == Token::Kind::op && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" ||
                                        t.text == ">" || t.text == ">="))
        op = t.text;
      else if (is_name("in")) op = "in";
      else if (is_name("not") && is_name("in", 1)) op = "not in";
      else break;
      const Pos p = next().pos;
      if (op == "not in") next();
      e = binary(op, std::move(e), math1(), p);
    }
    return e;
  }
  ExprPtr math1() { return left({"+", "-"}, false, &ExprParser::concat); }
  ExprPtr concat() { return left({"~"}, false, &ExprParser::math2); }
  ExprPtr math2() { return left({"*", "/", "//", "%"}, false, &ExprParser::power); }
  ExprPtr power() { return left({"**"}, false, &ExprParser::unary); }

  // Nesting is bounded so that a hostile template cannot overflow the stack.
  struct Deeper {
    ExprParser& p;
    explicit Deeper(ExprParser& q) : p(q) {
      if (++p.depth_ > kMaxDepth) p.fail(p.peek(), "the expression nests more than " + std::to_string(kMaxDepth) + " levels");
    }
    ~Deeper() { --p.depth_; }
  };
  static constexpr int kMaxDepth = 200;

  ExprPtr unary() {
    const Deeper guard(*this);
    if (is_op("-") || is_op("+")) {
      const Token t = next();
      auto e = node(Expr::Kind::unary, t.pos);
      e->name = t.text;
      e->a = unary_no_filter();
      return filters(std::move(e));
    }
    return filters(postfix(primary()));
  }
  ExprPtr unary_no_filter() {
    const Deeper guard(*this);
    if (is_op("-") || is_op("+")) {
      const Token t = next();
      auto e = node(Expr::Kind::unary, t.pos);
      e->name = t.text;
      e->a = unary_no_filter();
      return e;
    }
    return postfix(primary());
  }

  void call_args(Expr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().kind == Token::Kind::name && is_op("=", 1)) {
        std::string key = next().text;
        next();
        e.kwargs.emplace_back(std::move(key), expression());
      } else {
        if (!e.kwargs.empty()) fail(peek(), "a positional argument after keyword arguments");
        e.args.push_back(expression());
      }
      if (!is_op(",")) break;
      next();
    }
    expect_op(")");
  }

  ExprPtr postfix(ExprPtr e) {
    while (true) {
      if (is_op(".")) {
        const Pos p = next().pos;
        auto a = node(Expr::Kind::attr, p);
        if (peek().kind == Token::Kind::integer) {  // x.0 is x[0] in Jinja
          a->kind = Expr::Kind::item;
          a->b = node(Expr::Kind::literal, peek().pos);
          const Token index = next();
          std::int64_t v = 0;
          const auto [end, ec] = std::from_chars(index.text.data(), index.text.data() + index.text.size(), v);
          if (ec != std::errc() || end != index.text.data() + index.text.size())
            fail(index, "index " + index.text + " is out of range");
          a->b->value = Value::integer(v);
        } else {
          a->name = expect_name();
        }
        a->a = std::move(e);
        e = std::move(a);
      } else if (is_op("[")) {
        const Pos p = next().pos;
        ExprPtr parts[3];
        int n = 0;
        bool sliced = false;
        while (true) {
          if (!is_op(":") && !is_op("]")) parts[n] = expression();
          if (is_op(":") && n < 2) {
            next();
            ++n;
            sliced = true;
            continue;
          }
          break;
        }
        expect_op("]");
        auto s = node(sliced ? Expr::Kind::slice : Expr::Kind::item, p);
        s->a = std::move(e);
        s->b = std::move(parts[0]);
        s->c = std::move(parts[1]);
        s->d = std::move(parts[2]);
        if (!sliced && !s->b) fail(peek(), "an empty subscript");
        e = std::move(s);
      } else if (is_op("(")) {
        auto c = node(Expr::Kind::call, peek().pos);
        call_args(*c);
        c->a = std::move(e);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr filters(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        next();
        auto f = node(Expr::Kind::filter, peek().pos);
        f->name = expect_name();
        if (is_op("(")) call_args(*f);
        f->a = std::move(e);
        e = std::move(f);
      } else if (is_name("is")) {
        next();
        auto t = node(Expr::Kind::test, peek().pos);
        if (is_name("not")) {
          next();
          t->negated = true;
        }
        // Tests named like keywords: none, true, false, in.
        t->name = expect_name();
        if (is_op("(")) {
          call_args(*t);
        } else if (!at_end() && (peek().kind == Token::Kind::string || peek().kind == Token::Kind::integer ||
                                 peek().kind == Token::Kind::floating)) {
          t->args.push_back(primary());  // `is divisibleby 3`, `is equalto 'x'`
        }
        t->a = std::move(e);
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  ExprPtr primary() {
    const Token t = next();
    switch (t.kind) {
      case Token::Kind::string: {
        auto e = node(Expr::Kind::literal, t.pos);
        std::string s = t.text;
        while (peek().kind == Token::Kind::string) s += next().text;  // adjacent literals join
        e->value = Value::string(std::move(s));
        return e;
      }
      case Token::Kind::integer: {
        auto e = node(Expr::Kind::literal, t.pos);
        std::int64_t v = 0;
        const auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
        if (ec != std::errc() || p != t.text.data() + t.text.size()) fail(t, "integer " + t.text + " is out of range");
        e->value = Value::integer(v);
        return e;
      }
      case Token::Kind::floating: {
        auto e = node(Expr::Kind::literal, t.pos);
        e->value = Value::floating(std::strtod(t.text.c_str(), nullptr));  // out of range: +-inf, as Python
        return e;
      }
      case Token::Kind::name: {
        auto e = node(Expr::Kind::literal, t.pos);
        if (t.text == "true" || t.text == "True") e->value = Value::boolean(true);
        else if (t.text == "false" || t.text == "False") e->value = Value::boolean(false);
        else if (t.text == "none" || t.text == "None") e->value = Value::none();
        else {
          e->kind = Expr::Kind::name;
          e->name = t.text;
        }
        return e;
      }
      case Token::Kind::op:
        if (t.text == "(") {
          ExprPtr first;
          if (is_op(")")) {
            next();
            return node(Expr::Kind::list, t.pos);
          }
          first = expression();
          if (is_op(")")) {
            next();
            return first;
          }
          auto l = node(Expr::Kind::list, t.pos);
          l->args.push_back(std::move(first));
          while (is_op(",")) {
            next();
            if (is_op(")")) break;
            l->args.push_back(expression());
          }
          expect_op(")");
          return l;
        }
        if (t.text == "[") {
          auto l = node(Expr::Kind::list, t.pos);
          while (!is_op("]")) {
            l->args.push_back(expression());
            if (!is_op(",")) break;
            next();
          }
          expect_op("]");
          return l;
        }
        if (t.text == "{") {
          auto d = node(Expr::Kind::dict, t.pos);
          while (!is_op("}")) {
            d->args.push_back(expression());
            expect_op(":");
            d->args.push_back(expression());
            if (!is_op(",")) break;
            next();
          }
          expect_op("}");
          return d;
        }
        break;
      case Token::Kind::end: break;
    }
    fail(t, "expected a value, found " + describe(t));
  }

  std::vector<Token> t_;
  std::size_t i_ = 0;
  int depth_ = 0;
  const std::string& name_;
};

class StmtParser {
 public:
  StmtParser(std::vector<Piece> pieces, const std::string& name) : p_(std::move(pieces)), name_(name) {}

  Body parse_all() {
    std::string end;
    Body b = body({}, end);
    return b;
  }

 private:
  // Statements until a tag whose keyword is one of `stops` (returned in `stopped_by`, with the
  // tag's parser left positioned after the keyword in `stop_parser_`).
  Body body(const std::vector<std::string_view>& stops, std::string& stopped_by) {
    Body out;
    while (i_ < p_.size()) {
      const Piece& piece = p_[i_++];
      if (piece.kind == Piece::Kind::text) {
        auto s = stmt(Stmt::Kind::text, piece.pos);
        s->text = piece.text;
        out.push_back(std::move(s));
        continue;
      }
      auto ep = std::make_unique<ExprParser>(tokenize(piece, name_), name_);
      if (piece.kind == Piece::Kind::expr) {
        auto s = stmt(Stmt::Kind::output, piece.pos);
        s->expr = ep->expression();
        ep->expect_end("the expression");
        out.push_back(std::move(s));
        continue;
      }
      if (ep->at_end()) ep->fail(ep->peek(), "an empty tag");
      const Token kw = ep->next();
      if (kw.kind != Token::Kind::name) ep->fail(kw, "expected a statement keyword, found " + ExprParser::describe(kw));
      for (std::string_view s : stops)
        if (kw.text == s) {
          stopped_by = kw.text;
          tag_ = std::move(ep);
          tag_pos_ = kw.pos;
          return out;
        }
      out.push_back(statement(kw, *ep));
    }
    if (!stops.empty()) {
      const Pos p = open_pos_;
      throw Error::at_line(name_, p.line, p.column,
                           "this tag is never closed: expected '{% " + std::string(stops.back()) + " %}'");
    }
    return out;
  }

  std::unique_ptr<Stmt> stmt(Stmt::Kind k, Pos p) {
    auto s = std::make_unique<Stmt>();
    s->kind = k;
    s->pos = p;
    return s;
  }

  Body block_until(const std::vector<std::string_view>& stops, std::string& stopped_by, Pos opened) {
    if (++depth_ > 200) throw Error::at_line(name_, opened.line, opened.column, "blocks nest more than 200 levels");
    const Pos saved = open_pos_;
    open_pos_ = opened;
    Body b = body(stops, stopped_by);
    open_pos_ = saved;
    --depth_;
    return b;
  }

  // After a block that stopped at `stop`: the {% else %} block up to `end` if there is one (else
  // an empty body), then the end tag.
  Body else_and_end(std::string& stop, std::string_view end, Pos opened) {
    Body b;
    if (stop == "else") {
      tag_->expect_end("else");
      b = block_until({end}, stop, opened);
    }
    tag_->expect_end(end);
    return b;
  }

  std::unique_ptr<Stmt> statement(const Token& kw, ExprParser& ep) {
    const std::string& k = kw.text;
    std::string stop;
    if (k == "if") {
      auto s = stmt(Stmt::Kind::if_, kw.pos);
      ExprPtr cond = ep.expression();
      ep.expect_end("the condition");
      while (true) {
        Body b = block_until({"elif", "else", "endif"}, stop, kw.pos);
        s->branches.emplace_back(std::move(cond), std::move(b));
        if (stop == "elif") {
          cond = tag_->expression();
          tag_->expect_end("the condition");
          continue;
        }
        s->else_body = else_and_end(stop, "endif", kw.pos);
        return s;
      }
    }
    if (k == "for") {
      auto s = stmt(Stmt::Kind::for_, kw.pos);
      s->targets.push_back(ep.expect_name());
      while (ep.is_op(",")) {
        ep.next();
        s->targets.push_back(ep.expect_name());
      }
      if (!ep.is_name("in")) ep.fail(ep.peek(), "expected 'in' in the for tag");
      ep.next();
      s->expr = ep.expression_no_cond();
      if (ep.is_name("if")) {
        ep.next();
        s->filter = ep.expression();
      }
      if (ep.is_name("recursive")) ep.fail(ep.peek(), "recursive loops are not supported");
      ep.expect_end("the loop");
      s->body = block_until({"else", "endfor"}, stop, kw.pos);
      s->else_body = else_and_end(stop, "endfor", kw.pos);
      return s;
    }
    if (k == "set") {
      const std::string target = ep.expect_name();
      std::string attr;
      if (ep.is_op(".")) {
        ep.next();
        attr = ep.expect_name();
      }
      if (ep.is_op(",")) ep.fail(ep.peek(), "assigning several names at once is not supported");
      if (ep.at_end()) {
        if (!attr.empty()) ep.fail(ep.peek(), "a set block assigns a name, not an attribute");
        auto s = stmt(Stmt::Kind::set_block, kw.pos);
        s->text = target;
        s->body = block_until({"endset"}, stop, kw.pos);
        tag_->expect_end("endset");
        return s;
      }
      if (ep.is_op("|")) ep.fail(ep.peek(), "filtered set blocks are not supported");
      ep.expect_op("=");
      auto s = stmt(Stmt::Kind::set, kw.pos);
      s->text = target;
      s->attr = attr;
      s->expr = ep.expression_or_tuple();
      ep.expect_end("the assignment");
      return s;
    }
    if (k == "macro") {
      auto s = stmt(Stmt::Kind::macro, kw.pos);
      s->text = ep.expect_name();
      ep.expect_op("(");
      while (!ep.is_op(")")) {
        s->targets.push_back(ep.expect_name());
        if (ep.is_op("=")) {
          ep.next();
          s->defaults.push_back(ep.expression());
        } else {
          s->defaults.push_back(nullptr);
        }
        if (!ep.is_op(",")) break;
        ep.next();
      }
      ep.expect_op(")");
      ep.expect_end("the macro's parameters");
      s->body = block_until({"endmacro"}, stop, kw.pos);
      tag_->expect_end("endmacro");
      return s;
    }
    if (k == "break" || k == "continue") {
      ep.expect_end(k);
      return stmt(k == "break" ? Stmt::Kind::break_ : Stmt::Kind::continue_, kw.pos);
    }
    if (k == "generation") {
      ep.expect_end(k);
      auto s = stmt(Stmt::Kind::generation, kw.pos);
      s->body = block_until({"endgeneration"}, stop, kw.pos);
      tag_->expect_end("endgeneration");
      return s;
    }
    ep.fail(kw, "'{% " + k + " %}' is not supported by Orion's chat-template renderer (supported: if, for, set, macro, "
                "break, continue, generation)");
  }

  std::vector<Piece> p_;
  std::size_t i_ = 0;
  const std::string& name_;
  std::unique_ptr<ExprParser> tag_;
  Pos tag_pos_, open_pos_;
  int depth_ = 0;
};

}  // namespace

Template parse_template(std::string_view text, const std::string& name) {
  Template t;
  t.name = name;
  t.body = StmtParser(Splitter(text, name).run(), name).parse_all();
  return t;
}

}  // namespace orion::text::jinja
