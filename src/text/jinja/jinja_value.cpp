#include "text/jinja/jinja_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace orion::text::jinja {

const Value* Value::find(std::string_view key) const {
  if (!dict) return nullptr;
  for (const auto& [k, v] : *dict)
    if (k == key) return &v;
  return nullptr;
}

void Value::set(const std::string& key, Value v) {
  for (auto& [k, old] : *dict)
    if (k == key) {
      old = std::move(v);
      return;
    }
  dict->emplace_back(key, std::move(v));
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined:
    case Value::Kind::none: return false;
    case Value::Kind::boolean: return v.b;
    case Value::Kind::integer: return v.i != 0;
    case Value::Kind::floating: return v.f != 0;
    case Value::Kind::string: return !v.s.empty();
    case Value::Kind::list: return !v.list->empty();
    case Value::Kind::dict: return !v.dict->empty();
    case Value::Kind::ns:
    case Value::Kind::function: return true;
  }
  return false;
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.number() == b.number();
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::undefined:
    case Value::Kind::none: return true;
    case Value::Kind::string: return a.s == b.s;
    case Value::Kind::list:
      if (a.list->size() != b.list->size()) return false;
      for (std::size_t i = 0; i < a.list->size(); ++i)
        if (!equal((*a.list)[i], (*b.list)[i])) return false;
      return true;
    case Value::Kind::dict:
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& [k, v] : *a.dict) {
        const Value* w = b.find(k);
        if (!w || !equal(v, *w)) return false;
      }
      return true;
    case Value::Kind::ns: return a.dict == b.dict;
    case Value::Kind::function: return a.s == b.s;
    default: return false;
  }
}

namespace {

// Python's repr of a float: the shortest digits that read back the same, with ".0" for whole
// numbers and Python's spellings of the special values.
std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  int p = 1;
  for (; p < 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::snprintf(buf, sizeof buf, "%.*e", p - 1, d);
  const int exp = std::atoi(std::strchr(buf, 'e') + 1);
  if (exp < -4 || exp >= 16) return buf;  // Python's repr switches to exponents there: 1e+16, 1e-05
  std::snprintf(buf, sizeof buf, "%.*f", std::max(p - 1 - exp, 0), d);
  std::string s = buf;
  if (s.find('.') == std::string::npos) s += ".0";
  return s;
}

std::string quote_python(const std::string& s) {
  const bool single = s.find('\'') == std::string::npos || s.find('"') != std::string::npos;
  const char q = single ? '\'' : '"';
  std::string out(1, q);
  for (const char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == q) out += std::string("\\") + c;
        else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char b[8];
          std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned char>(c));
          out += b;
        } else out += c;
    }
  }
  return out + q;
}

void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned char>(c));
          out += b;
        } else out += c;  // ensure_ascii=False: UTF-8 as it is
    }
  }
  out += '"';
}

void json(std::string& out, const Value& v, int indent, int depth) {
  const auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<std::size_t>(indent * d), ' ');
  };
  switch (v.kind) {
    case Value::Kind::undefined:
    case Value::Kind::none: out += "null"; return;
    case Value::Kind::boolean: out += v.b ? "true" : "false"; return;
    case Value::Kind::integer: out += std::to_string(v.i); return;
    case Value::Kind::floating:
      out += std::isnan(v.f) ? "NaN" : std::isinf(v.f) ? (v.f < 0 ? "-Infinity" : "Infinity") : float_repr(v.f);
      return;
    case Value::Kind::string: json_string(out, v.s); return;
    case Value::Kind::list:
      out += '[';
      for (std::size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += indent < 0 ? ", " : ",";
        newline(depth + 1);
        json(out, (*v.list)[i], indent, depth + 1);
      }
      if (!v.list->empty()) newline(depth);
      out += ']';
      return;
    case Value::Kind::function: out += "null"; return;
    case Value::Kind::dict:
    case Value::Kind::ns:
      out += '{';
      for (std::size_t i = 0; i < v.dict->size(); ++i) {
        if (i) out += indent < 0 ? ", " : ",";
        newline(depth + 1);
        json_string(out, (*v.dict)[i].first);
        out += ": ";
        json(out, (*v.dict)[i].second, indent, depth + 1);
      }
      if (!v.dict->empty()) newline(depth);
      out += '}';
      return;
  }
}

}  // namespace

std::string repr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined: return "";
    case Value::Kind::none: return "None";
    case Value::Kind::boolean: return v.b ? "True" : "False";
    case Value::Kind::integer: return std::to_string(v.i);
    case Value::Kind::floating: return float_repr(v.f);
    case Value::Kind::string: return quote_python(v.s);
    case Value::Kind::list: {
      std::string s = "[";
      for (std::size_t i = 0; i < v.list->size(); ++i) s += (i ? ", " : "") + repr((*v.list)[i]);
      return s + "]";
    }
    case Value::Kind::dict: {
      std::string s = "{";
      for (std::size_t i = 0; i < v.dict->size(); ++i)
        s += (i ? ", " : "") + quote_python((*v.dict)[i].first) + ": " + repr((*v.dict)[i].second);
      return s + "}";
    }
    case Value::Kind::ns: return "<Namespace>";
    case Value::Kind::function: return "<function " + v.s + ">";
  }
  return "";
}

std::string to_str(const Value& v) { return v.kind == Value::Kind::string ? v.s : repr(v); }

std::string to_json(const Value& v, int indent) {
  std::string out;
  json(out, v, indent, 0);
  return out;
}

std::string_view kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::undefined: return "undefined";
    case Value::Kind::none: return "none";
    case Value::Kind::boolean: return "boolean";
    case Value::Kind::integer: return "integer";
    case Value::Kind::floating: return "float";
    case Value::Kind::string: return "string";
    case Value::Kind::list: return "list";
    case Value::Kind::dict: return "dict";
    case Value::Kind::ns: return "namespace";
    case Value::Kind::function: return "function";
  }
  return "?";
}

}  // namespace orion::text::jinja
