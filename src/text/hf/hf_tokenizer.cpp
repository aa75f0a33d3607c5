#include "text/hf/hf_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_parse.h"
#include "core/read_file.h"
#include "text/byte_unicode.h"
#include "text/hf/bpe_model.h"
#include "text/hf/hf_components.h"
#include "text/hf/tokenizer_json.h"
#include "text/tokenizer_files.h"

namespace orion::text {

using nlohmann::json;
using hf::BpeModel;

namespace {

struct AddedToken {
  std::string content;
  std::int32_t id = 0;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false, special = false;
};

// Added tokens to look for in a text: by their first byte, longest first.
struct AddedMatcher {
  std::vector<std::vector<const AddedToken*>> by_first_byte = std::vector<std::vector<const AddedToken*>>(256);
  bool empty = true;

  void add(const AddedToken* t) {
    auto& list = by_first_byte[static_cast<unsigned char>(t->content[0])];
    list.push_back(t);
    std::stable_sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->content.size() > b->content.size(); });
    empty = false;
  }
};

bool is_word_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '_' || u >= 0x80;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// A text cut at the added tokens: its parts, each a stretch of text or an added token's id.
struct Part {
  std::string text;
  std::int32_t id = -1;  // >= 0: an added token
};

std::vector<Part> split_added(const std::string& s, const AddedMatcher& m) {
  std::vector<Part> out;
  if (m.empty) {
    if (!s.empty()) out.push_back({s});
    return out;
  }
  std::size_t last = 0;
  for (std::size_t i = 0; i < s.size();) {
    const AddedToken* hit = nullptr;
    for (const AddedToken* t : m.by_first_byte[static_cast<unsigned char>(s[i])]) {
      if (s.compare(i, t->content.size(), t->content) != 0) continue;
      if (t->single_word && ((i > 0 && is_word_char(s[i - 1])) ||
                             (i + t->content.size() < s.size() && is_word_char(s[i + t->content.size()]))))
        continue;
      hit = t;
      break;
    }
    if (!hit) {
      ++i;
      continue;
    }
    std::size_t before_end = i;
    if (hit->lstrip)
      while (before_end > last && is_space(s[before_end - 1])) --before_end;
    if (before_end > last) out.push_back({s.substr(last, before_end - last)});
    out.push_back({"", hit->id});
    i += hit->content.size();
    if (hit->rstrip)
      while (i < s.size() && is_space(s[i])) ++i;
    last = i;
  }
  if (last < s.size()) out.push_back({s.substr(last)});
  return out;
}

std::optional<std::string> token_name(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return std::nullopt;
}

// transformers' clean_up_tokenization, which its decode applies when tokenizer_config.json
// asks (Llama 3's does): spaces before punctuation and English contractions removed.
std::string clean_up_tokenization(std::string s) {
  static const std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
      {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules)
    for (std::size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

struct HfTokenizer::Data {
  std::string json_text, config_text, source;
  BpeModel model;
  std::vector<std::string> spelling;  // by id; "" for an id nothing has
  std::vector<AddedToken> added;
  std::vector<bool> special;  // by id: an added token with "special": true
  std::unordered_map<std::string, std::int32_t> added_ids;
  AddedMatcher raw_added, normalized_added;
  std::vector<hf::NormalizerStep> normalizer;
  std::vector<hf::PreTokenizerStep> pre_tokenizer;
  std::vector<hf::DecoderStep> decoder;
  std::optional<std::vector<std::int32_t>> prefix;
  std::optional<std::int32_t> bos, eos;
  bool clean_up_spaces = false;  // tokenizer_config.json's clean_up_tokenization_spaces

  // Pieces' ids, bounded: the words of a corpus repeat.
  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<std::int32_t>> cache;

  void encode_words(const std::string& text, std::vector<std::int32_t>& out) const;
};

void HfTokenizer::Data::encode_words(const std::string& text, std::vector<std::int32_t>& out) const {
  constexpr std::size_t kCacheMax = 1 << 17, kCachedWordMax = 64;
  for (const std::string& word : hf::pre_tokenize(pre_tokenizer, text)) {
    if (word.size() <= kCachedWordMax) {
      std::lock_guard lock(cache_mutex);
      if (auto it = cache.find(word); it != cache.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        continue;
      }
    }
    std::vector<std::int32_t> ids;
    model.encode_word(word, ids);
    out.insert(out.end(), ids.begin(), ids.end());
    if (word.size() <= kCachedWordMax) {
      std::lock_guard lock(cache_mutex);
      if (cache.size() >= kCacheMax) cache.clear();
      cache.emplace(word, std::move(ids));
    }
  }
}

HfTokenizer HfTokenizer::load(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path d(dir);
  const std::string json_path = (d / kTokenizerJsonFile).string(), config_path = (d / kTokenizerConfigFile).string();
  const std::string config = fs::exists(config_path) ? read_whole_file(config_path) : "";
  return from_json(read_whole_file(json_path), config, dir);
}

HfTokenizer HfTokenizer::from_json(std::string_view tokenizer_json, std::string_view tokenizer_config,
                                   const std::string& source_dir) {
  const std::string source = source_dir + "/" + kTokenizerJsonFile;
  const std::string config_source = source_dir + "/" + kTokenizerConfigFile;
  auto d = std::make_shared<Data>();
  d->json_text = tokenizer_json;
  d->config_text = tokenizer_config;
  d->source = source;
  hf::TokenizerJson file = hf::read_tokenizer_json(tokenizer_json, source);
  const json& j = file.doc;
  if (!j.is_object()) throw Error::in_file(source, "must be a JSON object");
  auto bad = [&](const std::string& what) { return Error::in_file(source, what); };

  // The model.
  auto mj = j.find("model");
  if (mj == j.end() || !mj->is_object()) throw bad("has no \"model\" object");
  const std::string type = mj->value("type", std::string("BPE"));
  if (type != "BPE") throw bad("model.type \"" + type + "\" is not supported (BPE)");
  if (auto dr = mj->find("dropout"); dr != mj->end() && !dr->is_null() && !(dr->is_number() && dr->get<double>() == 0))
    throw bad("model.dropout is " + dr->dump() + "; Orion encodes deterministically (null)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (auto v = mj->find(key); v != mj->end() && !v->is_null() && !(v->is_string() && v->get<std::string>().empty()))
      throw bad(std::string("model.") + key + " is " + v->dump() + "; only empty or null is supported");
  BpeModel& m = d->model;
  if (!file.vocab_read) throw bad("model.vocab must be an object of token to id");
  auto bad_id = [&](const std::string& tok, const json& id) {
    return bad("model.vocab: token " + json(tok).dump() + " has the id " + id.dump() + ", not an integer in [0, 2^30)");
  };
  if (file.bad_vocab_entry) throw bad_id(file.bad_vocab_entry->first, file.bad_vocab_entry->second);
  m.vocab.reserve(file.vocab.size());
  // From the end: of a repeated token the last id counts, as in a JSON object.
  for (auto e = file.vocab.rbegin(); e != file.vocab.rend(); ++e) {
    const auto [it, inserted] = m.vocab.try_emplace(std::move(e->first), 0);
    if (!inserted) continue;
    if (e->second < 0 || e->second >= (1 << 30)) throw bad_id(it->first, json(e->second));
    it->second = static_cast<std::int32_t>(e->second);
  }
  std::int32_t max_id = -1;
  for (const auto& [tok, id] : m.vocab) max_id = std::max(max_id, id);
  m.ignore_merges = mj->value("ignore_merges", false);
  m.fuse_unk = mj->value("fuse_unk", false);
  m.byte_fallback = mj->value("byte_fallback", false);
  // `where` names the entry for an error only: a merge's place is spelt out only then.
  auto id_of = [&](const std::string& tok, const auto& where) {
    auto it = m.vocab.find(tok);
    if (it == m.vocab.end()) throw bad(std::string(where()) + ": " + json(tok).dump() + " is not in model.vocab");
    return it->second;
  };
  if (auto u = mj->find("unk_token"); u != mj->end() && u->is_string()) m.unk_id = id_of(u->get<std::string>(), [] { return "model.unk_token"; });
  if (m.byte_fallback)
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      m.byte_ids[b] = id_of(name, [] { return "model.byte_fallback"; });
    }
  if (!file.merges_read) throw bad("model.merges must be a list");
  m.merges.reserve(file.merges.size());
  for (std::size_t r = 0; r < file.merges.size(); ++r) {
    auto& [a, b] = file.merges[r];
    const auto where = [r] { return "model.merges[" + std::to_string(r) + "]"; };
    const std::uint64_t key = static_cast<std::uint64_t>(static_cast<std::uint32_t>(id_of(a, where))) << 32 |
                              static_cast<std::uint32_t>(id_of(b, where));
    a += b;
    m.merges.try_emplace(key, static_cast<std::int32_t>(r), id_of(a, where));  // a repeated pair keeps its first rank
  }
  if (file.bad_merge) {
    const auto& [r, e] = *file.bad_merge;
    const std::string where = "model.merges[" + std::to_string(r) + "]: ";
    if (e.is_string()) throw bad(where + e.dump() + " is not two tokens separated by one space");
    throw bad(where + e.dump().substr(0, 80) + " is not a merge (\"a b\" or [\"a\", \"b\"])");
  }

  // Added tokens.
  if (auto at = j.find("added_tokens"); at != j.end() && !at->is_null()) {
    if (!at->is_array()) throw bad("added_tokens must be a list");
    for (std::size_t i = 0; i < at->size(); ++i) {
      const json& e = (*at)[i];
      const std::string where = "added_tokens[" + std::to_string(i) + "]";
      if (!e.is_object() || !e.contains("id") || !e["id"].is_number_integer() || !e.contains("content") ||
          !e["content"].is_string() || e["content"].get<std::string>().empty() || e["id"].get<std::int64_t>() < 0 ||
          e["id"].get<std::int64_t>() >= (1 << 30))
        throw bad(where + " needs an integer \"id\" in [0, 2^30) and a non-empty \"content\"");
      AddedToken t{e["content"].get<std::string>(), static_cast<std::int32_t>(e["id"].get<std::int64_t>()),
                   e.value("single_word", false),  e.value("lstrip", false),
                   e.value("rstrip", false),        e.value("normalized", false),
                   e.value("special", false)};
      max_id = std::max(max_id, t.id);
      d->added.push_back(std::move(t));
    }
  }
  d->spelling.resize(static_cast<std::size_t>(max_id + 1));
  for (const auto& [tok, id] : m.vocab) d->spelling[static_cast<std::size_t>(id)] = tok;
  d->special.assign(d->spelling.size(), false);
  for (const AddedToken& t : d->added) {
    d->special[static_cast<std::size_t>(t.id)] = t.special;
    d->spelling[static_cast<std::size_t>(t.id)] = t.content;
    d->added_ids[t.content] = t.id;
    (t.normalized && !t.special ? d->normalized_added : d->raw_added).add(&t);
  }

  d->normalizer = hf::parse_normalizer(j.value("normalizer", json()), source);
  d->pre_tokenizer = hf::parse_pre_tokenizer(j.value("pre_tokenizer", json()), source);
  d->decoder = hf::parse_decoder(j.value("decoder", json()), source);

  // The post-processor: which tokens it puts before a single text.
  std::function<void(const json&, const std::string&)> post = [&](const json& p, const std::string& where) {
    if (p.is_null()) return;
    const std::string t = p.is_object() ? p.value("type", std::string()) : std::string();
    if (t == "ByteLevel") return;  // offsets only
    if (t == "Sequence") {
      const json& list = p.value("processors", json::array());
      for (std::size_t i = 0; i < list.size(); ++i) post(list[i], where + ".processors[" + std::to_string(i) + "]");
      return;
    }
    if (t != "TemplateProcessing")
      throw bad(where + ": the post-processor \"" + t + "\" is not supported (TemplateProcessing, ByteLevel, Sequence)");
    std::vector<std::int32_t> prefix;
    bool seen_text = false;
    for (const json& item : p.value("single", json::array())) {
      if (item.contains("Sequence")) {
        seen_text = true;
        continue;
      }
      const std::string name = item.value("SpecialToken", json::object()).value("id", std::string());
      const json& st = p.value("special_tokens", json::object());
      if (!st.contains(name) || !st[name].contains("ids") || !st[name]["ids"].is_array())
        throw bad(where + ": the special token " + json(name).dump() + " is not in its special_tokens");
      if (seen_text)
        throw bad(where + ": tokens after the text (" + name + ") are not supported; Orion adds a prefix only");
      for (const json& id : st[name]["ids"]) prefix.push_back(id.get<std::int32_t>());
    }
    d->prefix = prefix;
  };
  post(j.value("post_processor", json()), "post_processor");
  if (!d->prefix && j.value("post_processor", json()).is_object()) d->prefix = std::vector<std::int32_t>{};

  // The special tokens' roles.
  if (!tokenizer_config.empty()) {
    const json c = parse_json(tokenizer_config, config_source);
    auto id_named = [&](const char* key) -> std::optional<std::int32_t> {
      const std::optional<std::string> name = token_name(c, key);
      if (!name) return std::nullopt;
      HfTokenizer probe;
      probe.d_ = d;
      if (auto id = probe.token_id(*name)) return id;
      throw Error::in_file(config_source, std::string("\"") + key + "\" is " + json(*name).dump() +
                                              ", which tokenizer.json does not have");
    };
    d->clean_up_spaces = c.value("clean_up_tokenization_spaces", false);
    d->bos = id_named("bos_token");
    d->eos = id_named("eos_token");
  }
  HfTokenizer out;
  out.d_ = std::move(d);
  return out;
}

std::vector<std::int32_t> HfTokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids;
  for (const Part& raw : split_added(hf::valid_utf8(text), d_->raw_added)) {
    if (raw.id >= 0) {
      ids.push_back(raw.id);
      continue;
    }
    for (const Part& p : split_added(hf::normalize(d_->normalizer, raw.text), d_->normalized_added)) {
      if (p.id >= 0)
        ids.push_back(p.id);
      else
        d_->encode_words(p.text, ids);
    }
  }
  return ids;
}

const std::string& HfTokenizer::token(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= d_->spelling.size() || d_->spelling[static_cast<std::size_t>(id)].empty())
    throw Error(d_->source + ": token id " + std::to_string(id) + " is not in the vocabulary of " +
                std::to_string(vocab_size()));
  return d_->spelling[static_cast<std::size_t>(id)];
}

std::optional<std::int32_t> HfTokenizer::token_id(std::string_view spelling) const {
  const std::string s(spelling);
  if (auto it = d_->added_ids.find(s); it != d_->added_ids.end()) return it->second;
  if (auto it = d_->model.vocab.find(s); it != d_->model.vocab.end()) return it->second;
  return std::nullopt;
}

std::string HfTokenizer::decode(std::span<const std::int32_t> ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (std::int32_t id : ids) tokens.push_back(token(id));
  if (d_->decoder.empty()) {  // the library joins the tokens with spaces when there is no decoder
    std::string out;
    for (std::size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  std::string text = hf::decode_tokens(d_->decoder, std::move(tokens));
  if (d_->clean_up_spaces) text = clean_up_tokenization(std::move(text));
  return text;
}

std::string HfTokenizer::piece(std::int32_t id) const {
  // decode()'s steps on one token, but raw bytes where a character is split over tokens, and
  // no Strip: the text is under way, so its first space is no leading one.
  std::string t = token(id);
  for (const hf::DecoderStep& s : d_->decoder) switch (s.kind) {
      case hf::DecoderStep::Kind::byte_level:
        if (const std::optional<std::string> b = token_text_to_bytes(t)) t = *b;
        break;
      case hf::DecoderStep::Kind::replace: t = hf::replace_plain(t, s.from, s.to); break;
      case hf::DecoderStep::Kind::byte_fallback:
        if (const std::optional<unsigned char> b = hf::fallback_byte(t)) t = std::string(1, static_cast<char>(*b));
        break;
      case hf::DecoderStep::Kind::fuse:
      case hf::DecoderStep::Kind::strip: break;
    }
  return t;
}

int HfTokenizer::vocab_size() const { return static_cast<int>(d_->spelling.size()); }
std::optional<std::int32_t> HfTokenizer::bos_id() const { return d_->bos; }
std::optional<std::int32_t> HfTokenizer::eos_id() const { return d_->eos; }
std::optional<std::vector<std::int32_t>> HfTokenizer::text_prefix() const { return d_->prefix; }
bool HfTokenizer::is_special(std::int32_t id) const {
  return id >= 0 && static_cast<std::size_t>(id) < d_->special.size() && d_->special[static_cast<std::size_t>(id)];
}
const std::string& HfTokenizer::config_text() const { return d_->config_text; }

void HfTokenizer::save(const std::string& dir) const {
  std::filesystem::create_directories(dir);
  write_file_atomic((std::filesystem::path(dir) / kTokenizerJsonFile).string(), d_->json_text);
  if (!d_->config_text.empty()) write_file_atomic((std::filesystem::path(dir) / kTokenizerConfigFile).string(), d_->config_text);
}

}  // namespace orion::text
