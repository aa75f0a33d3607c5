#include "text/bpe_tokenizer.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iterator>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/stopwatch.h"
#include "text/byte_unicode.h"
#include "text/gpt2_pretokenize.h"
#include "text/tokenizer_files.h"

namespace orion::text {

namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";
// Ids stay below INT32_MAX so that vocab_size() (largest id + 1) fits in an int.
constexpr std::int64_t kIdLimit = std::numeric_limits<std::int32_t>::max();

// A token spelling as a JSON string, for messages: quoted and escaped, bytes that are not
// UTF-8 replaced by U+FFFD.
std::string json_quoted(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false,
                                              nlohmann::json::error_handler_t::replace);
}

// Not noexcept on purpose: libstdc++'s unordered_map then stores each node's hash instead of
// recomputing it for every node it walks past.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const {
    return std::hash<std::string_view>{}(s);
  }
};

template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

// (left id, right id) -> (rank, merged id): an open-addressing table with linear probing.
class PairTable {
 public:
  struct Slot {
    std::uint64_t key;
    std::int32_t rank;
    std::int32_t merged;
  };

  static std::uint64_t key(std::int32_t a, std::int32_t b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
           static_cast<std::uint32_t>(b);
  }

  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    slots_.assign(cap, Slot{kEmpty, 0, 0});
    mask_ = cap - 1;
  }

  // Inserts unless the key is present; returns the slot holding the key.
  const Slot* insert(std::uint64_t k, std::int32_t rank, std::int32_t merged) {
    for (std::size_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == k) return &s;
      if (s.key == kEmpty) {
        s = Slot{k, rank, merged};
        return &s;
      }
    }
  }

  const Slot* find(std::uint64_t k) const {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == k) return &s;
      if (s.key == kEmpty) return nullptr;
    }
  }

 private:
  // No key has this value: ids are below 2^31.
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  static std::size_t hash(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return static_cast<std::size_t>(k);
  }
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
};

// Pieces' ids, for encode(): sharded so that concurrent encoders rarely wait for each other,
// and bounded (a full shard is emptied).
class PieceCache {
 public:
  static constexpr std::size_t kShards = 16;
  static constexpr std::size_t kMaxEntriesPerShard = 4096;
  static constexpr std::size_t kMaxPieceBytes = 64;

  bool append_to(std::string_view piece, std::size_t hash, std::vector<std::int32_t>& out) {
    Shard& s = shards_[shard_of(hash)];
    std::lock_guard<std::mutex> lock(s.mu);
    const auto it = s.map.find(piece);
    if (it == s.map.end()) return false;
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
  }

  void insert(std::string_view piece, std::size_t hash, std::span<const std::int32_t> ids) {
    Shard& s = shards_[shard_of(hash)];
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.map.size() >= kMaxEntriesPerShard) s.map.clear();
    s.map.emplace(std::string(piece), std::vector<std::int32_t>(ids.begin(), ids.end()));
  }

 private:
  struct Shard {
    std::mutex mu;
    StringMap<std::vector<std::int32_t>> map;
  };
  // The high bits: the maps use the low ones for their buckets.
  static std::size_t shard_of(std::size_t hash) { return (hash >> 40) % kShards; }
  std::array<Shard, kShards> shards_;
};

// Where nlohmann's parser is in vocab.json: the line and column of the next byte it reads.
struct TextPos {
  std::int64_t line = 1;
  std::int64_t column = 1;
};

// An input iterator over the text that keeps a TextPos up to date, so that the SAX handler
// can tell where each key is.
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* p, TextPos* pos) : p_(p), pos_(pos) {}
  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    if (*p_ == '\n') {
      ++pos_->line;
      pos_->column = 1;
    } else {
      ++pos_->column;
    }
    ++p_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator before = *this;
    ++*this;
    return before;
  }
  friend bool operator==(const CountingIterator& a, const CountingIterator& b) {
    return a.p_ == b.p_;
  }

 private:
  const char* p_;
  TextPos* pos_;
};

struct VocabEntry {
  std::string spelling;
  std::int64_t id;
  std::int64_t line;
  std::int64_t column;
};

// Reads vocab.json's one object of "spelling": id into entries, in file order.
class VocabSax {
 public:
  using json = nlohmann::json;

  VocabSax(std::string_view name, const TextPos* pos) : name_(name), pos_(pos) {}

  std::vector<VocabEntry> entries;

  bool null() { not_an_id("null"); }
  bool boolean(bool value) { not_an_id(value ? "true" : "false"); }
  bool number_integer(json::number_integer_t value) { return id(value); }
  bool number_unsigned(json::number_unsigned_t value) {
    if (value > static_cast<json::number_unsigned_t>(kIdLimit)) too_large(std::to_string(value));
    return id(static_cast<std::int64_t>(value));
  }
  bool number_float(json::number_float_t, const json::string_t& text) {
    not_an_id("the number " + text);
  }
  bool string(json::string_t& value) { not_an_id("the string " + json_quoted(value)); }
  bool binary(json::binary_t&) { not_an_id("binary data"); }
  bool start_object(std::size_t) {
    if (depth_ == 0) {
      depth_ = 1;
      return true;
    }
    not_an_id("an object");
  }
  bool key(json::string_t& value) {
    key_ = std::move(value);
    // The parser has just read the key's closing quote.
    key_line_ = pos_->line;
    key_column_ = std::max<std::int64_t>(1, pos_->column - 1);
    return true;
  }
  bool end_object() {
    depth_ = 0;
    return true;
  }
  bool start_array(std::size_t) { not_an_id("an array"); }
  bool end_array() { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    // nlohmann's message is "[json.exception.parse_error.N] parse error at line L, column C:
    // WHAT". Its lexer knows the location better than our count (it reads one character ahead
    // and puts it back), so its L and C are used when present.
    const std::string what = e.what();
    std::int64_t line = pos_->line;
    std::int64_t column = std::max<std::int64_t>(1, pos_->column - 1);
    std::string detail = what;
    const std::size_t at = what.find("at line ");
    const std::size_t colon = what.find(": ", at == std::string::npos ? 0 : at);
    if (at != std::string::npos && colon != std::string::npos) {
      long long l = 0, c = 0;
      if (std::sscanf(what.c_str() + at, "at line %lld, column %lld", &l, &c) == 2 && l > 0) {
        line = l;
        column = std::max<long long>(1, c);
      }
      detail = what.substr(colon + 2);
    }
    throw Error::at_line(name_, line, column, "invalid JSON: " + detail);
  }

 private:
  bool id(std::int64_t value) {
    if (depth_ == 0) not_an_id("");
    if (value < 0)
      throw Error::at_line(name_, key_line_, key_column_,
                           "token " + json_quoted(key_) + " has the negative id " +
                               std::to_string(value));
    if (value >= kIdLimit) too_large(std::to_string(value));
    entries.push_back(VocabEntry{std::move(key_), value, key_line_, key_column_});
    return true;
  }
  [[noreturn]] void too_large(const std::string& value) {
    throw Error::at_line(name_, key_line_, key_column_,
                         "token " + json_quoted(key_) + " has the id " + value +
                             ", too large (ids must be below " + std::to_string(kIdLimit) + ")");
  }
  [[noreturn]] void not_an_id(const std::string& what) {
    if (depth_ == 0)
      throw Error::at_line(name_, pos_->line, std::max<std::int64_t>(1, pos_->column - 1),
                           "expected a JSON object from token to id");
    throw Error::at_line(name_, key_line_, key_column_,
                         "the id of token " + json_quoted(key_) + " is " + what +
                             ", not an integer");
  }

  std::string name_;
  const TextPos* pos_;
  int depth_ = 0;
  std::string key_;
  std::int64_t key_line_ = 1;
  std::int64_t key_column_ = 1;
};

std::vector<VocabEntry> parse_vocab(std::string_view text, std::string_view name) {
  TextPos pos;
  VocabSax sax(name, &pos);
  const char* begin = text.data();
  nlohmann::json::sax_parse(CountingIterator(begin, &pos),
                            CountingIterator(begin + text.size(), &pos), &sax);
  return std::move(sax.entries);
}

struct MergeLine {
  std::string_view a, b;
  std::int64_t line;
  std::size_t b_column;
};

std::vector<MergeLine> parse_merges(std::string_view text, std::string_view name) {
  std::vector<MergeLine> merges;
  std::int64_t line_no = 0;
  std::int64_t first_empty = 0;  // the first empty line not yet followed by a merge
  std::size_t pos = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;  // a UTF-8 byte order mark
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(pos, end - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no == 1 && line.starts_with("#version")) continue;
    if (line.empty()) {
      if (first_empty == 0) first_empty = line_no;
      continue;
    }
    if (first_empty != 0)
      throw Error::at_line(name, first_empty, 1,
                           "empty line (only the end of the file may have empty lines)");
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos)
      throw Error::at_line(name, line_no, 1,
                           "expected two symbols separated by one space, found " +
                               json_quoted(line));
    merges.push_back(MergeLine{line.substr(0, space), line.substr(space + 1), line_no, space + 2});
  }
  return merges;
}

std::string hex_byte(int b) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  return std::string("0x") + kDigits[(b >> 4) & 15] + kDigits[b & 15];
}

}  // namespace

struct BpeTokenizer::Impl {
  // The tokens in increasing order of id.
  std::vector<std::int32_t> ids;
  std::vector<std::string> spellings;
  std::vector<std::string> bytes;  // what each token decodes to
  bool dense = true;               // ids[i] == i for every i
  int vocab_size = 0;
  StringMap<std::int32_t> by_spelling;
  std::array<std::int32_t, 256> byte_ids{};
  std::vector<std::pair<std::int32_t, std::int32_t>> merges;  // by rank
  PairTable merge_table;
  struct Special {
    std::string bytes;
    std::int32_t id;
  };
  std::vector<Special> specials;
  std::optional<std::int32_t> eot;
  mutable PieceCache cache;

  std::optional<std::size_t> index_of(std::int32_t id) const {
    if (id < 0 || id >= vocab_size) return std::nullopt;
    if (dense) return static_cast<std::size_t>(id);
    const auto it = std::lower_bound(ids.begin(), ids.end(), id);
    if (it == ids.end() || *it != id) return std::nullopt;
    return static_cast<std::size_t>(it - ids.begin());
  }

  std::size_t checked_index(std::int32_t id) const {
    if (const auto i = index_of(id)) return *i;
    if (id < 0 || id >= vocab_size)
      throw Error("token id " + std::to_string(id) + " is out of range: the vocabulary has ids 0.." +
                  std::to_string(vocab_size - 1));
    throw Error("token id " + std::to_string(id) + " is not in the vocabulary (which has gaps)");
  }

  void bpe(std::string_view piece, std::vector<std::int32_t>& out) const;
  void encode_ordinary(std::string_view text, std::vector<std::int32_t>& out) const;
};

namespace {

// Builds the tables from vocab.json's entries (in file order) and merges.txt's lines.
std::shared_ptr<BpeTokenizer::Impl> build(std::vector<VocabEntry> entries,
                                          std::string_view vocab_name,
                                          const std::vector<MergeLine>& merge_lines,
                                          std::string_view merges_name) {
  auto im = std::make_shared<BpeTokenizer::Impl>();
  im->by_spelling.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const VocabEntry& e = entries[i];
    if (e.spelling.empty())
      throw Error::at_line(vocab_name, e.line, e.column, "a token may not be empty");
    const auto [it, inserted] =
        im->by_spelling.emplace(e.spelling, static_cast<std::int32_t>(e.id));
    if (!inserted) {
      for (std::size_t j = 0; j < i; ++j) {
        if (entries[j].spelling == e.spelling)
          throw Error::at_line(vocab_name, e.line, e.column,
                               "token " + json_quoted(e.spelling) + " appears again (first at line " +
                                   std::to_string(entries[j].line) + ", column " +
                                   std::to_string(entries[j].column) + ")");
      }
    }
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const VocabEntry& x, const VocabEntry& y) { return x.id < y.id; });
  for (std::size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].id == entries[i - 1].id) {
      const VocabEntry& e = entries[i];
      const VocabEntry& first = entries[i - 1];
      throw Error::at_line(vocab_name, e.line, e.column,
                           "token " + json_quoted(e.spelling) + " has the id " + std::to_string(e.id) +
                               ", which token " + json_quoted(first.spelling) +
                               " already has (line " + std::to_string(first.line) + ", column " +
                               std::to_string(first.column) + ")");
    }
  }
  if (entries.empty()) throw Error::in_file(vocab_name, "the vocabulary has no tokens");
  const std::size_t n = entries.size();
  im->ids.reserve(n);
  im->spellings.reserve(n);
  im->bytes.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    VocabEntry& e = entries[i];
    im->ids.push_back(static_cast<std::int32_t>(e.id));
    if (e.id != static_cast<std::int64_t>(i)) im->dense = false;
    // A spelling outside GPT-2's byte map (a special token's) decodes to its own UTF-8.
    std::optional<std::string> b = token_text_to_bytes(e.spelling);
    im->bytes.push_back(b ? std::move(*b) : e.spelling);
    im->spellings.push_back(std::move(e.spelling));
  }
  im->vocab_size = im->ids.back() + 1;

  for (int b = 0; b < 256; ++b) {
    const std::string_view spelling = byte_to_utf8(static_cast<std::uint8_t>(b));
    const auto it = im->by_spelling.find(spelling);
    if (it == im->by_spelling.end())
      throw Error::in_file(vocab_name, "no token for the byte " + hex_byte(b) + " (" +
                                           json_quoted(spelling) +
                                           "): a byte-level vocabulary needs all 256");
    im->byte_ids[static_cast<std::size_t>(b)] = it->second;
  }
  if (const auto it = im->by_spelling.find(kEndOfText); it != im->by_spelling.end()) {
    im->eot = it->second;
    im->specials.push_back({std::string(kEndOfText), it->second});
  }

  if (merge_lines.size() >= static_cast<std::size_t>(kIdLimit))
    throw Error::in_file(merges_name, "too many merges");
  im->merges.reserve(merge_lines.size());
  im->merge_table.reserve(merge_lines.size());
  std::string merged;
  for (const MergeLine& m : merge_lines) {
    const auto a = im->by_spelling.find(m.a);
    if (a == im->by_spelling.end())
      throw Error::at_line(merges_name, m.line, 1,
                           "symbol " + json_quoted(m.a) + " is not in the vocabulary");
    const auto b = im->by_spelling.find(m.b);
    if (b == im->by_spelling.end())
      throw Error::at_line(merges_name, m.line, static_cast<std::int64_t>(m.b_column),
                           "symbol " + json_quoted(m.b) + " is not in the vocabulary");
    merged.assign(m.a);
    merged.append(m.b);
    const auto ab = im->by_spelling.find(merged);
    if (ab == im->by_spelling.end())
      throw Error::at_line(merges_name, m.line, 1,
                           "the merged symbol " + json_quoted(merged) + " is not in the vocabulary");
    const auto rank = static_cast<std::int32_t>(im->merges.size());
    const auto* slot = im->merge_table.insert(PairTable::key(a->second, b->second), rank, ab->second);
    if (slot->rank != rank)
      throw Error::at_line(merges_name, m.line, 1,
                           "the merge " + json_quoted(std::string(m.a) + " " + std::string(m.b)) +
                               " repeats line " +
                               std::to_string(merge_lines[static_cast<std::size_t>(slot->rank)].line));
    im->merges.emplace_back(a->second, b->second);
  }
  return im;
}

}  // namespace

// GPT-2's bpe(): while some adjacent pair has a rank, merge every occurrence of the pair of
// lowest rank, from left to right. A heap of (rank, position) candidates finds the pairs; all
// candidates of the lowest rank are merged together in position order (one "round"), which
// is what encoder.py's loop does. A round creates no new pair of its own rank (a merged
// token is longer than both halves), and any pair it creates waits for a later round.
void BpeTokenizer::Impl::bpe(std::string_view piece, std::vector<std::int32_t>& out) const {
  struct Symbol {
    std::int32_t id;  // -1 once merged into the symbol on its left
    std::int32_t prev;
    std::int32_t next;
  };
  struct Candidate {
    std::int32_t rank;
    std::int32_t left;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;
  thread_local std::vector<std::int32_t> round;

  const auto n = static_cast<std::int32_t>(piece.size());
  symbols.resize(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i) {
    symbols[static_cast<std::size_t>(i)] = {
        byte_ids[static_cast<unsigned char>(piece[static_cast<std::size_t>(i)])], i - 1,
        i + 1 < n ? i + 1 : -1};
  }
  const std::greater<Candidate> after;
  heap.clear();
  auto push_pair = [&](std::int32_t left) {
    const Symbol& l = symbols[static_cast<std::size_t>(left)];
    if (l.next < 0) return;
    const PairTable::Slot* m =
        merge_table.find(PairTable::key(l.id, symbols[static_cast<std::size_t>(l.next)].id));
    if (m) {
      heap.push_back({m->rank, left});
      std::push_heap(heap.begin(), heap.end(), after);
    }
  };
  for (std::int32_t i = 0; i + 1 < n; ++i) push_pair(i);

  while (!heap.empty()) {
    const std::int32_t rank = heap.front().rank;
    round.clear();
    while (!heap.empty() && heap.front().rank == rank) {
      round.push_back(heap.front().left);  // popped in increasing position
      std::pop_heap(heap.begin(), heap.end(), after);
      heap.pop_back();
    }
    for (const std::int32_t left : round) {
      Symbol& l = symbols[static_cast<std::size_t>(left)];
      if (l.id < 0 || l.next < 0) continue;
      Symbol& r = symbols[static_cast<std::size_t>(l.next)];
      const PairTable::Slot* m = merge_table.find(PairTable::key(l.id, r.id));
      if (!m || m->rank != rank) continue;  // stale: a neighbour changed since it was pushed
      l.id = m->merged;
      r.id = -1;
      l.next = r.next;
      if (l.next >= 0) symbols[static_cast<std::size_t>(l.next)].prev = left;
      if (l.prev >= 0) push_pair(l.prev);
      push_pair(left);
    }
  }
  for (std::int32_t i = 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next)
    out.push_back(symbols[static_cast<std::size_t>(i)].id);
  // Keep the scratch small after a very long piece.
  if (symbols.capacity() > (std::size_t{1} << 16)) {
    symbols = {};
    heap = {};
    round = {};
  }
}

void BpeTokenizer::Impl::encode_ordinary(std::string_view text,
                                         std::vector<std::int32_t>& out) const {
  Gpt2Pretokenizer pieces(text);
  std::string_view piece;
  while (pieces.next(piece)) {
    if (piece.size() == 1) {
      out.push_back(byte_ids[static_cast<unsigned char>(piece[0])]);
      continue;
    }
    if (piece.size() > PieceCache::kMaxPieceBytes) {
      bpe(piece, out);
      continue;
    }
    const std::size_t hash = StringHash{}(piece);
    if (cache.append_to(piece, hash, out)) continue;
    const std::size_t before = out.size();
    bpe(piece, out);
    cache.insert(piece, hash, std::span<const std::int32_t>(out).subspan(before));
  }
}

BpeTokenizer BpeTokenizer::load(const std::string& vocab_json_path,
                                const std::string& merges_txt_path) {
  const auto vocab = MappedFile::open(vocab_json_path);
  const auto merges = MappedFile::open(merges_txt_path);
  const std::string_view vocab_text(reinterpret_cast<const char*>(vocab->bytes().data()),
                                    vocab->size());
  const std::string_view merges_text(reinterpret_cast<const char*>(merges->bytes().data()),
                                     merges->size());
  return BpeTokenizer(build(parse_vocab(vocab_text, vocab_json_path), vocab_json_path,
                            parse_merges(merges_text, merges_txt_path), merges_txt_path));
}

BpeTokenizer BpeTokenizer::from_data(std::string_view vocab_json, std::string_view merges_txt,
                                     std::string_view source_name) {
  const std::string vocab_name = std::string(source_name) + "/vocab.json";
  const std::string merges_name = std::string(source_name) + "/merges.txt";
  return BpeTokenizer(build(parse_vocab(vocab_json, vocab_name), vocab_name,
                            parse_merges(merges_txt, merges_name), merges_name));
}

BpeTokenizer BpeTokenizer::byte_level() {
  std::vector<VocabEntry> entries;
  const auto& order = gpt2_byte_order();
  for (std::size_t i = 0; i < order.size(); ++i)
    entries.push_back({std::string(byte_to_utf8(order[i])), static_cast<std::int64_t>(i), 0, 0});
  entries.push_back({std::string(kEndOfText), 256, 0, 0});
  return BpeTokenizer(build(std::move(entries), "byte_level", {}, "byte_level"));
}

std::vector<std::int32_t> BpeTokenizer::encode(std::string_view text) const {
  const Impl& im = *impl_;
  std::vector<std::int32_t> out;
  out.reserve(text.size() / 4 + 16);
  std::size_t pos = 0;
  while (pos < text.size()) {
    // The earliest special token from pos (the longest of those starting there).
    std::size_t found = std::string_view::npos;
    const Impl::Special* special = nullptr;
    for (const Impl::Special& s : im.specials) {
      const std::size_t at = text.find(s.bytes, pos);
      if (at < found || (at == found && at != std::string_view::npos &&
                         s.bytes.size() > special->bytes.size())) {
        found = at;
        special = &s;
      }
    }
    if (!special) {
      im.encode_ordinary(text.substr(pos), out);
      break;
    }
    im.encode_ordinary(text.substr(pos, found - pos), out);
    out.push_back(special->id);
    pos = found + special->bytes.size();
  }
  return out;
}

std::string BpeTokenizer::decode(std::span<const std::int32_t> ids) const {
  const Impl& im = *impl_;
  std::string out;
  out.reserve(ids.size() * 4);
  for (const std::int32_t id : ids) out += im.bytes[im.checked_index(id)];
  return out;
}

int BpeTokenizer::vocab_size() const { return impl_->vocab_size; }

std::optional<std::int32_t> BpeTokenizer::token_id(std::string_view token) const {
  const auto it = impl_->by_spelling.find(token);
  if (it == impl_->by_spelling.end()) return std::nullopt;
  return it->second;
}

const std::string& BpeTokenizer::token(std::int32_t id) const {
  return impl_->spellings[impl_->checked_index(id)];
}

std::int32_t BpeTokenizer::eot_id() const {
  if (!impl_->eot) throw Error("the vocabulary has no \"<|endoftext|>\" token");
  return *impl_->eot;
}

std::optional<std::int32_t> BpeTokenizer::eos_id() const { return impl_->eot; }

std::size_t BpeTokenizer::merge_count() const { return impl_->merges.size(); }

void BpeTokenizer::save(const std::string& dir) const {
  const Impl& im = *impl_;
  const std::string folder = dir.empty() ? "." : dir;
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw Error::in_file(folder, "cannot create the folder: " + ec.message());
  const std::string base = folder.back() == '/' ? folder : folder + "/";

  std::string vocab = "{\n";
  for (std::size_t i = 0; i < im.ids.size(); ++i) {
    vocab += "  ";
    vocab += nlohmann::json(im.spellings[i]).dump();
    vocab += ": ";
    vocab += std::to_string(im.ids[i]);
    vocab += i + 1 < im.ids.size() ? ",\n" : "\n";
  }
  vocab += "}\n";

  std::string merges = "#version: 0.2\n";
  for (const auto& [a, b] : im.merges) {
    merges += im.spellings[im.checked_index(a)];
    merges += ' ';
    merges += im.spellings[im.checked_index(b)];
    merges += '\n';
  }
  write_file_atomic(base + kBpeVocabFile, vocab);
  write_file_atomic(base + kBpeMergesFile, merges);
}

bool operator==(const BpeTokenizer& a, const BpeTokenizer& b) {
  if (a.impl_ == b.impl_) return true;
  return a.impl_->ids == b.impl_->ids && a.impl_->spellings == b.impl_->spellings &&
         a.impl_->merges == b.impl_->merges;
}

double measure_encode_mb_per_s(const BpeTokenizer& tokenizer, std::string_view text) {
  if (text.empty()) return 0;
  std::vector<double> rates;
  const Stopwatch total;
  for (int pass = 0; pass < 10000 && (pass < 3 || total.seconds() < 1.0); ++pass) {
    const Stopwatch sw;
    const std::vector<std::int32_t> ids = tokenizer.encode(text);
    const double s = std::max(sw.seconds(), 1e-9);
    if (pass > 0) rates.push_back(static_cast<double>(text.size()) / 1e6 / s);
  }
  return median(rates);
}

}  // namespace orion::text
