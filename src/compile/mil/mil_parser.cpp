#include "compile/mil/mil_parser.h"

#include <charconv>

#include "compile/mil/mil_lexer.h"
#include "compile/mil/mil_syntax.h"
#include "core/error.h"

namespace orion::compile {

namespace {

constexpr std::size_t kMaxRank = 64;
constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(std::string_view text, std::string_view file) : lex_(text, file) { advance(); }

  MilAst program();
  MilLiteral lone_literal() {
    MilLiteral l = literal();
    if (tok_.kind != MilTok::end) expected("end of input after the literal");
    return l;
  }

 private:
  void advance() { tok_ = lex_.next(); }
  MilPos pos() const { return {tok_.line, tok_.column}; }
  [[noreturn]] void fail(MilPos at, const std::string& message) const { lex_.fail(at.line, at.column, message); }
  [[noreturn]] void expected(const std::string& what) const {
    fail(pos(), "expected " + what + ", found " + mil_token_str(tok_));
  }
  void expect(char c, const std::string& where) {
    if (!tok_.is(c)) expected(std::string("'") + c + "' " + where);
    advance();
  }
  void expect_word(std::string_view w, const std::string& where) {
    if (!tok_.is_word(w)) expected("'" + std::string(w) + "' " + where);
    advance();
  }
  std::string ident(const std::string& what) {
    if (tok_.kind != MilTok::identifier) expected(what);
    std::string s(tok_.text);
    advance();
    return s;
  }
  // The token after the current one, without consuming anything.
  MilToken peek_next() {
    const auto saved = lex_.position();
    const MilToken t = lex_.next();
    lex_.seek(saved);
    return t;
  }

  std::vector<std::pair<std::string, std::string>> dict();
  MilFunction function();
  MilOperation operation();
  MilVar var(const std::string& of);
  MilType type(const std::string& of);
  MilValue value(const std::string& of);
  MilLiteral literal(bool allow_blob = true);
  void elements(MilLiteral& lit, int depth);
  MilElement element();
  void blobfile(MilLiteral& lit);
  bool starts_literal();

  MilLexer lex_;
  MilToken tok_;
};

MilAst Parser::program() {
  MilAst ast;
  ast.pos = pos();
  expect_word("program", "at the start of a MIL program");
  expect('(', "after 'program'");
  if (tok_.kind != MilTok::number) expected("the program's version number, as in program(1.3)");
  ast.version = std::string(tok_.text);
  advance();
  expect(')', "after the program's version");
  if (!tok_.is('['))
    expected("'[' and the buildInfo attribute after program(" + ast.version + ") (the ANE's parser requires it)");
  advance();
  bool seen = false;
  while (true) {
    const MilPos at = pos();
    const std::string name = ident("a program attribute name (buildInfo)");
    if (name != "buildInfo") fail(at, "unknown program attribute '" + name + "' (only buildInfo is known)");
    if (seen) fail(at, "buildInfo given twice");
    seen = true;
    expect('=', "after buildInfo");
    ast.build_info = dict();
    if (tok_.is(',')) {
      advance();
      continue;
    }
    expect(']', "after the program attributes");
    break;
  }
  expect('{', "to open the program's body");
  while (tok_.is_word("func")) ast.functions.push_back(function());
  expect('}', "or 'func' in the program's body");
  if (tok_.kind != MilTok::end) expected("end of input after the program's closing '}'");
  return ast;
}

std::vector<std::pair<std::string, std::string>> Parser::dict() {
  expect_word("dict", "(a dictionary such as dict<string, string>({{\"k\", \"v\"}}))");
  expect('<', "after 'dict'");
  const MilType k = type("the dictionary's key type");
  expect(',', "between the dictionary's key and value types");
  const MilType v = type("the dictionary's value type");
  if (k.dtype != "string" || v.dtype != "string" || !k.shape.empty() || !v.shape.empty())
    fail(k.pos, "buildInfo must be a dictionary of strings to strings");
  expect('>', "after the dictionary's types");
  expect('(', "before the dictionary's entries");
  expect('{', "to open the dictionary's entries");
  std::vector<std::pair<std::string, std::string>> out;
  if (!tok_.is('}')) {
    while (true) {
      expect('{', "to open a dictionary entry");
      if (tok_.kind != MilTok::string) expected("a string key");
      std::string key = mil_unescape(tok_.text);
      advance();
      expect(',', "between a dictionary key and its value");
      if (tok_.kind != MilTok::string) expected("a string value");
      out.emplace_back(std::move(key), mil_unescape(tok_.text));
      advance();
      expect('}', "to close a dictionary entry");
      if (!tok_.is(',')) break;
      advance();
    }
  }
  expect('}', "to close the dictionary's entries");
  expect(')', "after the dictionary's entries");
  return out;
}

MilFunction Parser::function() {
  MilFunction f;
  advance();  // 'func'
  f.pos = pos();
  f.name = ident("a function name after 'func'");
  expect('<', "and the opset after the function name, as in main<ios18>");
  f.opset = ident("an opset name such as ios18");
  expect('>', "after the opset");
  expect('(', "to open the function's inputs");
  if (!tok_.is(')')) {
    while (true) {
      f.inputs.push_back(var("a function input"));
      if (!tok_.is(',')) break;
      advance();
    }
  }
  expect(')', "or ',' after the function's inputs");
  expect('{', "to open the function's body");
  while (!tok_.is('}')) {
    if (tok_.kind == MilTok::end) expected("an operation or '}' in the body of " + f.name);
    f.ops.push_back(operation());
  }
  advance();
  if (tok_.kind != MilTok::arrow) expected("'->' and the function's outputs after its body");
  advance();
  expect('(', "to open the function's outputs");
  if (!tok_.is(')')) {
    while (true) {
      const MilPos at = pos();
      f.outputs.emplace_back(ident("an output value name"), at);
      if (!tok_.is(',')) break;
      advance();
    }
  }
  expect(')', "or ',' after the function's outputs");
  expect(';', "after the function's outputs");
  return f;
}

MilVar Parser::var(const std::string& of) {
  MilVar v;
  v.type = type(of);
  v.pos = pos();
  v.name = ident("a value name after the type of " + of);
  return v;
}

MilType Parser::type(const std::string& of) {
  MilType t;
  t.pos = pos();
  if (tok_.kind != MilTok::identifier) expected("a type such as tensor<fp16, [1, 4]> or int32 for " + of);
  if (tok_.is_word("tensor")) {
    advance();
    expect('<', "after 'tensor'");
    const MilPos dt = pos();
    t.dtype = ident("a dtype in the tensor type");
    if (!is_mil_dtype_name(t.dtype)) fail(dt, "unknown dtype '" + t.dtype + "'");
    expect(',', "after the tensor's dtype");
    expect('[', "to open the tensor's shape");
    std::int64_t count = 1;
    bool too_large = false;
    if (!tok_.is(']')) {
      while (true) {
        if (!tok_.is_integer()) expected("a dimension (an integer >= 0) in the shape of " + of);
        std::int64_t d = 0;
        const auto r = std::from_chars(tok_.text.data(), tok_.text.data() + tok_.text.size(), d);
        if (r.ec != std::errc() || d < 0) fail(pos(), "dimension " + mil_token_str(tok_) + " is not an integer >= 0 that fits in 64 bits");
        if (t.shape.size() >= kMaxRank) fail(pos(), "a type has at most 64 dimensions");
        if (d > 0) {
          if (count > kMaxElements / d) too_large = true;
          else count *= d;
        }
        t.shape.push_back(d);
        advance();
        if (!tok_.is(',')) break;
        advance();
      }
    }
    expect(']', "or ',' in the tensor's shape");
    expect('>', "to close the tensor type");
    if (too_large) fail(t.pos, "the type's dimensions multiply to more than 2^40");
    return t;
  }
  if (!is_mil_dtype_name(tok_.text))
    fail(t.pos, "expected a type such as tensor<fp16, [1, 4]> or int32 for " + of + ", found " + mil_token_str(tok_));
  t.dtype = std::string(tok_.text);
  t.scalar_spelling = true;
  advance();
  return t;
}

MilOperation Parser::operation() {
  MilOperation op;
  if (tok_.is('(')) {
    advance();
    while (true) {
      op.outputs.push_back(var("an output of an operation"));
      if (!tok_.is(',')) break;
      advance();
    }
    expect(')', "or ',' after the operation's outputs");
  } else {
    while (true) {
      op.outputs.push_back(var("an operation's output"));
      if (!tok_.is(',')) break;
      advance();
    }
  }
  expect('=', "after the output " + op.outputs.back().name);
  op.op_pos = pos();
  op.op = ident("an op name after '='");
  expect('(', "after the op name " + op.op);
  if (!tok_.is(')')) {
    while (true) {
      MilNamedArg a;
      a.pos = pos();
      a.name = ident("an argument name in the arguments of " + op.op);
      expect('=', "after the argument name " + a.name);
      a.value = value("argument " + a.name + " of " + op.op);
      op.args.push_back(std::move(a));
      if (!tok_.is(',')) break;
      advance();
    }
  }
  expect(')', "or ',' after the arguments of " + op.op);
  if (tok_.is('[')) {
    advance();
    if (!tok_.is(']')) {
      while (true) {
        MilNamedLiteral a;
        a.pos = pos();
        a.name = ident("an attribute name");
        expect('=', "after the attribute name " + a.name);
        a.value = literal();
        op.attrs.push_back(std::move(a));
        if (!tok_.is(',')) break;
        advance();
      }
    }
    expect(']', "or ',' after the attributes of " + op.op);
  }
  expect(';', "at the end of the operation " + op.op);
  return op;
}

bool Parser::starts_literal() {
  if (tok_.kind != MilTok::identifier) return false;
  const MilToken next = peek_next();
  if (tok_.is_word("tensor")) return next.is('<');
  return is_mil_dtype_name(tok_.text) && next.is('(');
}

MilValue Parser::value(const std::string& of) {
  MilValue v;
  v.pos = pos();
  if (tok_.is('(')) {
    v.kind = MilValue::Kind::tuple;
    advance();
    while (true) {
      const MilPos at = pos();
      v.tuple.emplace_back(ident("a value name in the tuple of " + of), at);
      if (!tok_.is(',')) break;
      advance();
    }
    expect(')', "or ',' in the tuple of " + of);
    return v;
  }
  if (starts_literal()) {
    v.kind = MilValue::Kind::literal;
    v.literal = literal();
    return v;
  }
  v.kind = MilValue::Kind::name;
  v.name = ident("a value name, a literal or a tuple for " + of);
  return v;
}

MilLiteral Parser::literal(bool allow_blob) {
  MilLiteral lit;
  lit.pos = pos();
  lit.type = type("a literal");
  expect('(', "after the literal's type");
  if (tok_.is_word("BLOBFILE")) {
    // BLOBFILE's own path and offset are plain literals: no nesting, so no unbounded recursion.
    if (!allow_blob) expected("a plain value (BLOBFILE cannot nest)");
    blobfile(lit);
  } else if (tok_.is('[')) {
    elements(lit, 0);
  } else {
    lit.elements.push_back(element());
  }
  expect(')', "to close the literal");
  return lit;
}

void Parser::elements(MilLiteral& lit, int depth) {
  if (depth >= kMaxDepth) fail(pos(), "lists nest more than 64 deep");
  advance();  // '['
  if (tok_.is(']')) {
    advance();
    return;
  }
  while (true) {
    if (tok_.is('[')) elements(lit, depth + 1);
    else lit.elements.push_back(element());
    if (!tok_.is(',')) break;
    advance();
  }
  expect(']', "or ',' in the list");
}

MilElement Parser::element() {
  MilElement e;
  e.pos = pos();
  e.text = std::string(tok_.text);
  if (tok_.kind == MilTok::number || tok_.is_word("inf") || tok_.is_word("nan")) {
    e.kind = MilElement::Kind::number;
  } else if (tok_.is_word("true") || tok_.is_word("false")) {
    e.kind = MilElement::Kind::boolean;
  } else if (tok_.kind == MilTok::string) {
    e.kind = MilElement::Kind::string;
    e.text = mil_unescape(tok_.text);
  } else {
    expected("a number, true, false or a string in the literal");
  }
  advance();
  return e;
}

void Parser::blobfile(MilLiteral& lit) {
  lit.is_blob = true;
  const MilPos at = pos();
  advance();
  expect('(', "after BLOBFILE");
  bool have_path = false, have_offset = false;
  while (true) {
    const MilPos name_at = pos();
    const std::string name = ident("'path' or 'offset' in BLOBFILE");
    expect('=', "after " + name);
    const MilLiteral v = literal(false);
    if (name == "path" && !have_path) {
      if (v.type.dtype != "string" || v.elements.size() != 1 || v.is_blob)
        fail(v.pos, "BLOBFILE's path must be a string");
      lit.blob_path = v.elements[0].text;
      have_path = true;
    } else if (name == "offset" && !have_offset) {
      if (v.type.dtype != "uint64" || v.elements.size() != 1 || v.is_blob ||
          v.elements[0].kind != MilElement::Kind::number)
        fail(v.pos, "BLOBFILE's offset must be a uint64");
      const std::string& s = v.elements[0].text;
      const auto r = std::from_chars(s.data(), s.data() + s.size(), lit.blob_offset);
      if (r.ec != std::errc() || r.ptr != s.data() + s.size())
        fail(v.elements[0].pos, "BLOBFILE's offset '" + s + "' is not an integer in [0, 2^64)");
      have_offset = true;
    } else {
      fail(name_at, "unexpected '" + name + "' in BLOBFILE (it takes path and offset, once each)");
    }
    if (!tok_.is(',')) break;
    advance();
  }
  if (!have_path || !have_offset) fail(at, "BLOBFILE needs both path and offset");
  expect(')', "to close BLOBFILE");
}

}  // namespace

MilAst parse_mil_ast(std::string_view text, std::string_view file) { return Parser(text, file).program(); }

MilLiteral parse_mil_literal(std::string_view text, std::string_view file) {
  return Parser(text, file).lone_literal();
}

}  // namespace orion::compile
