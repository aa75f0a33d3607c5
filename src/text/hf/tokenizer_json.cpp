#include "text/hf/tokenizer_json.h"

#include <limits>

#include "core/json_parse.h"

namespace orion::text::hf {

namespace {

using nlohmann::json;

// A JSON value built from parser events, as nlohmann's own DOM parser builds it (of an object's
// repeated key the last value stays).
class ValueBuilder {
 public:
  bool building() const { return !stack_.empty(); }
  std::size_t depth() const { return stack_.size(); }
  // The name of the open container at `level` (0: the outermost) in its parent object.
  const std::string& name_at(std::size_t level) const { return names_[level]; }
  const std::string& pending_key() const { return key_; }
  bool open_is_object() const { return !stack_.empty() && stack_.back()->is_object(); }
  json& value() { return root_; }

  void key(std::string&& k) { key_ = std::move(k); }
  void scalar(json&& v) { add(std::move(v)); }
  void open(json&& container) {
    names_.push_back(stack_.empty() || !stack_.back()->is_object() ? std::string() : key_);
    stack_.push_back(add(std::move(container)));
  }
  void close() {
    stack_.pop_back();
    names_.pop_back();
  }

 private:
  json* add(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_object()) return &(top[key_] = std::move(v));
    top.push_back(std::move(v));
    return &top.back();
  }

  json root_;
  std::vector<json*> stack_;  // the open containers, each inside the one before
  std::vector<std::string> names_;
  std::string key_;
};

// The parser's events: into the document, except inside model.vocab and model.merges.
class Reader final : public nlohmann::json_sax<json> {
 public:
  TokenizerJson out;
  std::optional<JsonParseFailure> failure;

  bool null() override { return scalar(json(nullptr)); }
  bool boolean(bool v) override { return scalar(json(v)); }
  bool number_integer(std::int64_t v) override {
    if (in_ == In::vocab && !nested_.building()) {
      out.vocab.emplace_back(std::move(vocab_key_), v);
      return true;
    }
    return scalar(json(v));
  }
  bool number_unsigned(std::uint64_t v) override {
    if (v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return number_integer(static_cast<std::int64_t>(v));
    return scalar(json(v));
  }
  bool number_float(double v, const std::string&) override { return scalar(json(v)); }
  bool binary(json::binary_t& v) override { return scalar(json(std::move(v))); }
  bool string(std::string& v) override {
    if (in_ == In::merges && !nested_.building()) {
      if (pair_ >= 0 && pair_ < 2) {  // inside ["a", "b"]
        (pair_ == 0 ? pair_a_ : pair_b_) = std::move(v);
        ++pair_;
        return true;
      }
      if (pair_ < 0) {  // "a b"
        const std::size_t sp = v.find(' ');
        if (sp == std::string::npos || v.find(' ', sp + 1) != std::string::npos) return bad_merge(json(std::move(v)));
        if (!out.bad_merge) out.merges.emplace_back(v.substr(0, sp), v.substr(sp + 1));
        return true;
      }
    }
    return scalar(json(std::move(v)));
  }

  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool key(std::string& k) override {
    if (in_ == In::vocab && !nested_.building()) vocab_key_ = std::move(k);
    else current().key(std::move(k));
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override {
    if (in_ == In::merges && !nested_.building() && pair_ >= 0) {
      if (pair_ == 2) {
        if (!out.bad_merge) out.merges.emplace_back(std::move(pair_a_), std::move(pair_b_));
        pair_ = -1;
        return true;
      }
      to_nested();  // [] or ["a"]: kept whole for the error
    }
    return close();
  }

  json& doc() { return doc_.value(); }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    failure = json_parse_failure(e);
    return false;
  }

 private:
  enum class In { doc, vocab, merges };

  // Where a value goes: the document, or a value inside model.vocab or model.merges (kept
  // whole: it is a bad entry).
  ValueBuilder& current() { return in_ == In::doc ? doc_ : nested_; }

  bool scalar(json&& v) {
    if (in_ == In::merges && !nested_.building() && pair_ >= 0) to_nested();
    const bool top = in_ != In::doc && !nested_.building();
    if (top && in_ == In::vocab) return bad_vocab(std::move(v));
    if (top) return bad_merge(std::move(v));
    current().scalar(std::move(v));
    return true;
  }

  bool open(json&& container) {
    // model is named only as a member of an object: the document's.
    if (in_ == In::doc && doc_.depth() == 2 && doc_.name_at(1) == "model" && doc_.open_is_object()) {
      const std::string& k = doc_.pending_key();
      if (k == "vocab" && container.is_object()) return enter(In::vocab, std::move(container));
      if (k == "merges" && container.is_array()) return enter(In::merges, std::move(container));
    }
    if (in_ == In::merges && !nested_.building()) {
      if (pair_ < 0 && container.is_array()) {
        pair_ = 0;
        return true;
      }
      if (pair_ >= 0) to_nested();
    }
    current().open(std::move(container));
    return true;
  }

  bool close() {
    if (in_ != In::doc && !nested_.building()) {  // the end of model.vocab or model.merges
      in_ = In::doc;
      return true;
    }
    current().close();
    if (in_ != In::doc && !nested_.building()) {  // a whole value inside them: a bad entry
      json v = std::move(nested_.value());
      nested_ = ValueBuilder();
      return in_ == In::vocab ? bad_vocab(std::move(v)) : bad_merge(std::move(v));
    }
    return true;
  }

  bool enter(In where, json&& placeholder) {
    // A repeated "model" or key: the last one counts, as in the document.
    if (where == In::vocab) {
      out.vocab_read = true;
      out.vocab.clear();
      out.bad_vocab_entry.reset();
    } else {
      out.merges_read = true;
      out.merges.clear();
      out.bad_merge.reset();
    }
    doc_.scalar(std::move(placeholder));  // stands in the document, empty
    in_ = where;
    return true;
  }

  // An element of model.merges opened as ["a", "b"] that turned out otherwise: what it held so
  // far, as a value.
  void to_nested() {
    nested_.open(json::array());
    if (pair_ > 0) nested_.scalar(json(std::move(pair_a_)));
    if (pair_ > 1) nested_.scalar(json(std::move(pair_b_)));
    pair_ = -1;
  }

  bool bad_vocab(json&& v) {
    if (!out.bad_vocab_entry) out.bad_vocab_entry.emplace(std::move(vocab_key_), std::move(v));
    return true;
  }
  bool bad_merge(json&& v) {
    if (!out.bad_merge) out.bad_merge.emplace(out.merges.size(), std::move(v));
    return true;
  }

  ValueBuilder doc_, nested_;
  In in_ = In::doc;
  std::string vocab_key_;
  int pair_ = -1;  // strings read of a ["a", "b"] element of model.merges; -1: not in one
  std::string pair_a_, pair_b_;
};

}  // namespace

TokenizerJson read_tokenizer_json(std::string_view text, std::string_view file) {
  if (auto deep = json_depth_failure(text)) throw_json_failure(file, *deep);
  Reader r;
  json::sax_parse(text.begin(), text.end(), &r);
  if (r.failure) throw_json_failure(file, *r.failure);
  r.out.doc = std::move(r.doc());
  return std::move(r.out);
}

}  // namespace orion::text::hf
