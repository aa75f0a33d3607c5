#include "text/hf/hf_components.h"

#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include "core/error.h"
#include "text/byte_unicode.h"

namespace orion::text::hf {

using nlohmann::json;

namespace {

// GPT-2's pre-tokenizer pattern, as Hugging Face's ByteLevel pre-tokenizer writes it.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

[[noreturn]] void refuse(const std::string& source, const std::string& where, const std::string& what) {
  throw Error::in_file(source, where + ": " + what);
}

std::string type_of(const json& j, const std::string& source, const std::string& where) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    refuse(source, where, "expected an object with a \"type\", not " + j.dump().substr(0, 80));
  return j["type"].get<std::string>();
}

std::string string_at(const json& j, const char* key, const std::string& source, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) refuse(source, where, std::string("\"") + key + "\" must be a string");
  return it->get<std::string>();
}

bool bool_at(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

// {"String": s} or {"Regex": r}.
std::shared_ptr<const Regex> pattern_at(const json& j, const std::string& source, const std::string& where) {
  auto p = j.find("pattern");
  if (p == j.end() || !p->is_object() || p->size() != 1) refuse(source, where, "\"pattern\" must be {\"String\": ...} or {\"Regex\": ...}");
  if (p->contains("String") && (*p)["String"].is_string())
    return std::make_shared<const Regex>((*p)["String"].get<std::string>(), true, source);
  if (p->contains("Regex") && (*p)["Regex"].is_string())
    return std::make_shared<const Regex>((*p)["Regex"].get<std::string>(), false, source);
  refuse(source, where, "\"pattern\" must be {\"String\": ...} or {\"Regex\": ...}");
}

std::string utf8_map(const std::string& text, utf8proc_option_t options) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          static_cast<utf8proc_ssize_t>(text.size()), &out, options);
  if (n < 0) throw Error(std::string("tokenizer normalizer: ") + utf8proc_errmsg(n));
  std::string r(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
  std::free(out);
  return r;
}

std::string replace_all(const std::string& text, const Regex& pattern, const std::string& with) {
  std::string out;
  std::size_t at = 0;
  for (const auto& [b, e] : pattern.find_all(text)) {
    out.append(text, at, b - at);
    out += with;
    at = e;
  }
  out.append(text, at, std::string::npos);
  return out;
}

void append_normalizer(const json& j, const std::string& source, const std::string& where, std::vector<NormalizerStep>& out) {
  if (j.is_null()) return;
  const std::string t = type_of(j, source, where);
  if (t == "Sequence") {
    auto list = j.find("normalizers");
    if (list == j.end() || !list->is_array()) refuse(source, where, "a Sequence needs a \"normalizers\" list");
    for (std::size_t i = 0; i < list->size(); ++i)
      append_normalizer((*list)[i], source, where + ".normalizers[" + std::to_string(i) + "]", out);
  } else if (t == "NFC") {
    out.push_back({NormalizerStep::Kind::nfc, {}, nullptr});
  } else if (t == "NFKC") {
    out.push_back({NormalizerStep::Kind::nfkc, {}, nullptr});
  } else if (t == "Lowercase") {
    out.push_back({NormalizerStep::Kind::lowercase, {}, nullptr});
  } else if (t == "Prepend") {
    out.push_back({NormalizerStep::Kind::prepend, string_at(j, "prepend", source, where), nullptr});
  } else if (t == "Replace") {
    out.push_back({NormalizerStep::Kind::replace, string_at(j, "content", source, where), pattern_at(j, source, where)});
  } else {
    refuse(source, where, "the normalizer \"" + t + "\" is not supported (NFC, NFKC, Lowercase, Prepend, Replace, Sequence)");
  }
}

void append_pre_tokenizer(const json& j, const std::string& source, const std::string& where,
                          std::vector<PreTokenizerStep>& out) {
  if (j.is_null()) return;
  const std::string t = type_of(j, source, where);
  if (t == "Sequence") {
    auto list = j.find("pretokenizers");
    if (list == j.end() || !list->is_array()) refuse(source, where, "a Sequence needs a \"pretokenizers\" list");
    for (std::size_t i = 0; i < list->size(); ++i)
      append_pre_tokenizer((*list)[i], source, where + ".pretokenizers[" + std::to_string(i) + "]", out);
  } else if (t == "Split") {
    PreTokenizerStep s{PreTokenizerStep::Kind::split, pattern_at(j, source, where)};
    using B = PreTokenizerStep::Behavior;
    static const std::pair<const char*, B> kBehaviors[] = {{"Isolated", B::isolated},
                                                           {"Removed", B::removed},
                                                           {"MergedWithPrevious", B::merged_with_previous},
                                                           {"MergedWithNext", B::merged_with_next},
                                                           {"Contiguous", B::contiguous}};
    const std::string behavior = string_at(j, "behavior", source, where);
    auto it = std::find_if(std::begin(kBehaviors), std::end(kBehaviors), [&](const auto& kv) { return behavior == kv.first; });
    if (it == std::end(kBehaviors))
      refuse(source, where, "the Split behavior \"" + behavior +
                                "\" is not supported (Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous)");
    s.behavior = it->second;
    s.invert = bool_at(j, "invert", false);
    out.push_back(std::move(s));
  } else if (t == "ByteLevel") {
    PreTokenizerStep s{PreTokenizerStep::Kind::byte_level, nullptr};
    s.add_prefix_space = bool_at(j, "add_prefix_space", true);
    if (bool_at(j, "use_regex", true)) s.pattern = std::make_shared<const Regex>(kGpt2Pattern, false, source);
    out.push_back(std::move(s));
  } else {
    refuse(source, where, "the pre-tokenizer \"" + t + "\" is not supported (Split, ByteLevel, Sequence)");
  }
}

void append_decoder(const json& j, const std::string& source, const std::string& where, std::vector<DecoderStep>& out) {
  if (j.is_null()) return;
  const std::string t = type_of(j, source, where);
  if (t == "Sequence") {
    auto list = j.find("decoders");
    if (list == j.end() || !list->is_array()) refuse(source, where, "a Sequence needs a \"decoders\" list");
    for (std::size_t i = 0; i < list->size(); ++i)
      append_decoder((*list)[i], source, where + ".decoders[" + std::to_string(i) + "]", out);
  } else if (t == "ByteLevel") {
    out.push_back({DecoderStep::Kind::byte_level});
  } else if (t == "ByteFallback") {
    out.push_back({DecoderStep::Kind::byte_fallback});
  } else if (t == "Fuse") {
    out.push_back({DecoderStep::Kind::fuse});
  } else if (t == "Replace") {
    auto p = j.find("pattern");
    if (p == j.end() || !p->is_object() || !p->contains("String") || !(*p)["String"].is_string())
      refuse(source, where, "a Replace decoder's \"pattern\" must be {\"String\": ...}");
    out.push_back({DecoderStep::Kind::replace, (*p)["String"].get<std::string>(), string_at(j, "content", source, where)});
  } else if (t == "Strip") {
    DecoderStep s{DecoderStep::Kind::strip};
    const std::string c = string_at(j, "content", source, where);
    utf8proc_int32_t cp = 0;
    if (utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(c.data()), static_cast<utf8proc_ssize_t>(c.size()), &cp) !=
        static_cast<utf8proc_ssize_t>(c.size()))
      refuse(source, where, "a Strip decoder's \"content\" must be one character");
    s.strip_char = static_cast<char32_t>(cp);
    s.strip_start = j.value("start", 0);
    s.strip_stop = j.value("stop", 0);
    out.push_back(s);
  } else {
    refuse(source, where, "the decoder \"" + t + "\" is not supported (ByteLevel, ByteFallback, Fuse, Replace, Strip, Sequence)");
  }
}

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                                static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0) {
      out.push_back(0xFFFD);
      ++i;
    } else {
      out.push_back(static_cast<char32_t>(cp));
      i += static_cast<std::size_t>(n);
    }
  }
  return out;
}

std::string to_utf8(std::u32string_view s) {
  std::string out;
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

// ByteFallback: a run of <0xNN> tokens becomes the text of its bytes, or one U+FFFD per byte
// when they are not valid UTF-8 (Hugging Face's rule).
std::vector<std::string> byte_fallback(std::vector<std::string> tokens) {
  std::vector<std::string> out;
  std::string bytes;
  std::size_t count = 0;
  auto flush = [&] {
    if (count == 0) return;
    if (valid_utf8(bytes) == bytes) {
      out.push_back(bytes);
    } else {
      for (std::size_t i = 0; i < count; ++i) out.emplace_back("\xEF\xBF\xBD");
    }
    bytes.clear();
    count = 0;
  };
  for (std::string& t : tokens) {
    if (const std::optional<unsigned char> b = fallback_byte(t)) {
      bytes.push_back(static_cast<char>(*b));
      ++count;
      continue;
    }
    flush();
    out.push_back(std::move(t));
  }
  flush();
  return out;
}

}  // namespace

std::vector<NormalizerStep> parse_normalizer(const json& j, const std::string& source) {
  std::vector<NormalizerStep> out;
  append_normalizer(j, source, "normalizer", out);
  return out;
}

std::vector<PreTokenizerStep> parse_pre_tokenizer(const json& j, const std::string& source) {
  std::vector<PreTokenizerStep> out;
  append_pre_tokenizer(j, source, "pre_tokenizer", out);
  return out;
}

std::vector<DecoderStep> parse_decoder(const json& j, const std::string& source) {
  std::vector<DecoderStep> out;
  append_decoder(j, source, "decoder", out);
  return out;
}

std::optional<unsigned char> fallback_byte(std::string_view token) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return std::nullopt;
  const int hi = hex(token[3]), lo = hex(token[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<unsigned char>(hi * 16 + lo);
}

std::string replace_plain(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  for (std::size_t at = 0;;) {
    const std::size_t f = text.find(from, at);
    out.append(text.substr(at, f == std::string_view::npos ? std::string_view::npos : f - at));
    if (f == std::string_view::npos) return out;
    out.append(to);
    at = f + from.size();
  }
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
                                                static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    if (n <= 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, static_cast<std::size_t>(n)));
      i += static_cast<std::size_t>(n);
    }
  }
  return out;
}

std::string normalize(const std::vector<NormalizerStep>& steps, std::string text) {
  for (const NormalizerStep& s : steps) switch (s.kind) {
      case NormalizerStep::Kind::nfc: text = utf8_map(text, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE)); break;
      case NormalizerStep::Kind::nfkc:
        text = utf8_map(text, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
        break;
      case NormalizerStep::Kind::lowercase: {
        std::u32string u = to_u32(text);
        for (char32_t& c : u) c = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
        text = to_utf8(u);
        break;
      }
      case NormalizerStep::Kind::prepend:
        if (!text.empty()) text = s.text + text;  // Hugging Face prepends to non-empty text only
        break;
      case NormalizerStep::Kind::replace: text = replace_all(text, *s.pattern, s.text); break;
    }
  return text;
}

std::vector<std::string> pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::string text) {
  std::vector<std::string> pieces{std::move(text)};
  bool byte_level = false;
  for (const PreTokenizerStep& s : steps) {
    std::vector<std::string> next;
    for (std::string& p : pieces) {
      if (s.kind == PreTokenizerStep::Kind::byte_level && s.add_prefix_space && !p.starts_with(' ')) p.insert(0, " ");
      if (!s.pattern) {
        next.push_back(std::move(p));
        continue;
      }
      // The text as matches and the gaps between them (non-empty parts; invert swaps which is
      // which), then joined as tokenizers' split does by the behavior.
      struct Part {
        std::size_t b, e;
        bool match;
      };
      std::vector<Part> parts;
      std::size_t at = 0;
      for (const auto& [b, e] : s.pattern->find_all(p)) {
        if (b > at) parts.push_back({at, b, s.invert});
        if (e > b) parts.push_back({b, e, !s.invert});
        at = e;
      }
      if (p.size() > at) parts.push_back({at, p.size(), s.invert});
      using B = PreTokenizerStep::Behavior;
      std::vector<Part> joined;
      bool previous_match = false;
      if (s.behavior == B::merged_with_next) std::reverse(parts.begin(), parts.end());
      for (const Part& q : parts) {
        const bool join = !joined.empty() && (s.behavior == B::contiguous ? q.match == previous_match
                                              : (s.behavior == B::merged_with_previous || s.behavior == B::merged_with_next)
                                                  ? q.match && !previous_match
                                                  : false);
        if (join && s.behavior == B::merged_with_next) joined.back().b = q.b;
        else if (join) joined.back().e = q.e;
        else joined.push_back(q);
        previous_match = q.match;
      }
      if (s.behavior == B::merged_with_next) std::reverse(joined.begin(), joined.end());
      for (const Part& q : joined)
        if (!(s.behavior == B::removed && q.match)) next.push_back(p.substr(q.b, q.e - q.b));
    }
    pieces = std::move(next);
    byte_level = byte_level || s.kind == PreTokenizerStep::Kind::byte_level;
  }
  if (byte_level)
    for (std::string& p : pieces) p = bytes_to_token_text(p);
  return pieces;
}

std::string decode_tokens(const std::vector<DecoderStep>& steps, std::vector<std::string> tokens) {
  for (const DecoderStep& s : steps) switch (s.kind) {
      case DecoderStep::Kind::byte_level: {
        std::string bytes;
        for (const std::string& t : tokens) {
          const std::optional<std::string> b = token_text_to_bytes(t);
          bytes += b ? *b : t;  // a token outside the byte alphabet (an added one) is its own text
        }
        tokens = {valid_utf8(bytes)};
        break;
      }
      case DecoderStep::Kind::replace:
        for (std::string& t : tokens) t = replace_plain(t, s.from, s.to);
        break;
      case DecoderStep::Kind::byte_fallback: tokens = byte_fallback(std::move(tokens)); break;
      case DecoderStep::Kind::fuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens = {std::move(all)};
        break;
      }
      case DecoderStep::Kind::strip:
        for (std::string& t : tokens) {
          std::u32string u = to_u32(t);
          std::size_t b = 0, e = u.size();
          for (int i = 0; i < s.strip_start && b < e && u[b] == s.strip_char; ++i) ++b;
          for (int i = 0; i < s.strip_stop && e > b && u[e - 1] == s.strip_char; ++i) --e;
          t = to_utf8(std::u32string_view(u).substr(b, e - b));
        }
        break;
    }
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace orion::text::hf
