#include "model/formats/safetensors.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/atomic_file.h"
#include "core/error.h"

namespace orion::model {

namespace {

using nlohmann::json;

// Tensor data is written and mapped as it lies in memory; safetensors data is little-endian.
static_assert(std::endian::native == std::endian::little,
              "safetensors reading and writing assume a little-endian machine");

constexpr std::string_view kMetadataKey = "__metadata__";

// Shapes with more elements are refused (Tensor's own limit, so nbytes() stays in range).
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 60;

struct DTypeSpelling {
  DType dtype;
  std::string_view name;
};

// In the order Hugging Face's writer puts tensors: by descending alignment (its Dtype enum's
// order, reversed), so that every tensor's data starts at a multiple of its element size.
constexpr std::array<DTypeSpelling, 8> kSpellings = {{
    {DType::f32, "F32"},
    {DType::u32, "U32"},
    {DType::i32, "I32"},
    {DType::bf16, "BF16"},
    {DType::f16, "F16"},
    {DType::i8, "I8"},
    {DType::u8, "U8"},
    {DType::boolean, "BOOL"},
}};

// Dtypes of the format that Orion has no DType for.
constexpr std::array<std::string_view, 13> kUnsupported = {
    "F64", "I64", "U64", "I16", "U16", "C64", "F8_E5M2", "F8_E4M3", "F8_E8M0",
    "F6_E2M3", "F6_E3M2", "F4", "E8M0"};

std::size_t write_rank(DType dtype) {
  for (std::size_t i = 0; i < kSpellings.size(); ++i)
    if (kSpellings[i].dtype == dtype) return i;
  return kSpellings.size();
}

std::string tensor_label(std::string_view name) { return "tensor " + in_quotes(name); }

std::string offsets_str(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1fu; }
    else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0fu; }
    else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07u; }
    else return false;
    if (s.size() - i < len) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += len;
  }
  return true;
}

// C0 controls, DEL, and C1 controls (U+0080..U+009F, encoded C2 80..C2 9F); `s` is valid UTF-8.
bool has_control(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9f) return true;
  }
  return false;
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; keep what follows.
std::string json_message(const std::exception& e) {
  std::string_view m = e.what();
  if (!m.empty() && m.front() == '[') {
    const std::size_t close = m.find("] ");
    if (close != std::string_view::npos) m.remove_prefix(close + 2);
  }
  return printable(m, true);
}

// Reads the header JSON event by event, checking each value against the safetensors schema as
// it arrives: nothing is built that the schema does not allow (no DOM of arbitrary JSON), a
// duplicate key is caught (nlohmann's DOM parser would silently keep the last one), and every
// error names the tensor it is in.
class HeaderReader final : public json::json_sax_t {
 public:
  HeaderReader(const std::string& path, std::uint64_t data_begin, std::uint64_t data_size)
      : path_(path), data_begin_(data_begin), data_size_(data_size) {}

  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
  bool complete() const { return done_; }

  bool null() override { return unexpected("null"); }
  bool boolean(bool) override { return unexpected("a boolean"); }
  bool number_integer(number_integer_t v) override {
    if (in(Level::array)) {
      if (v < 0) element_error("is negative (" + std::to_string(v) + ")");
      return element(static_cast<std::uint64_t>(v));  // "-0"
    }
    return unexpected("a number");
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (in(Level::array)) return element(v);
    return unexpected("a number");
  }
  bool number_float(number_float_t, const string_t& token) override {
    if (in(Level::array))
      element_error("is not an integer of at most 64 bits (" + printable(token, true) + ")");
    return unexpected("a number");
  }
  bool string(string_t& s) override {
    if (in(Level::metadata)) {
      metadata.emplace(key_, std::move(s));
      return true;
    }
    if (in(Level::entry) && field_ == Field::dtype) {
      set_dtype(s);
      return true;
    }
    return unexpected("a string");
  }
  bool binary(binary_t&) override { return unexpected("binary data"); }

  bool start_object(std::size_t) override {
    if (stack_.empty() && !done_) {
      stack_.push_back(Level::top);
      return true;
    }
    if (in(Level::top)) {
      if (name_ == kMetadataKey) {
        stack_.push_back(Level::metadata);
      } else {
        stack_.push_back(Level::entry);
        has_ = {};
        shape_.clear();
        offsets_.clear();
      }
      return true;
    }
    return unexpected("an object");
  }

  bool key(string_t& k) override {
    if (in(Level::top)) {
      if (!names_.insert(k).second) {
        if (k == kMetadataKey) fail("\"__metadata__\" appears twice");
        fail("duplicate " + tensor_label(k));
      }
      name_ = std::move(k);
    } else if (in(Level::metadata)) {
      if (metadata.count(k)) fail("__metadata__: duplicate key " + in_quotes(k));
      key_ = std::move(k);
    } else {  // entry: the only other level whose values have keys
      if (k == "dtype") field_ = Field::dtype;
      else if (k == "shape") field_ = Field::shape;
      else if (k == "data_offsets") field_ = Field::offsets;
      else fail(tensor_label(name_) + ": unknown field " + in_quotes(k) +
                " (a tensor has dtype, shape and data_offsets)");
      const auto f = static_cast<std::size_t>(field_);
      if (has_[f]) fail(tensor_label(name_) + ": duplicate field " + in_quotes(k));
      has_[f] = true;
    }
    return true;
  }

  bool end_object() override {
    const Level level = stack_.back();
    stack_.pop_back();
    if (level == Level::entry) finish_entry();
    if (stack_.empty()) done_ = true;
    return true;
  }

  bool start_array(std::size_t) override {
    if (in(Level::entry) && (field_ == Field::shape || field_ == Field::offsets)) {
      stack_.push_back(Level::array);
      return true;
    }
    return unexpected("an array");
  }

  bool end_array() override {
    stack_.pop_back();
    return true;
  }

  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    // `position` counts the characters read, up to and including the offending one.
    throw Error::at_offset(path_, 8 + (position > 0 ? position - 1 : 0),
                           "header is not valid JSON: " + json_message(e));
  }

 private:
  enum class Level : std::uint8_t { top, metadata, entry, array };
  enum class Field : std::uint8_t { dtype, shape, offsets };

  bool in(Level level) const { return !stack_.empty() && stack_.back() == level; }

  [[noreturn]] void fail(const std::string& message) const {
    throw Error::in_file(path_, message);
  }

  std::string_view field_name() const {
    switch (field_) {
      case Field::dtype: return "dtype";
      case Field::shape: return "shape";
      case Field::offsets: return "data_offsets";
    }
    return "?";
  }

  // A value of kind `what` where the schema has no place for it.
  [[noreturn]] bool unexpected(const std::string& what) const {
    if (stack_.empty()) fail("header is " + what + ", not a JSON object");
    switch (stack_.back()) {
      case Level::top:
        if (name_ == kMetadataKey) fail("__metadata__ is " + what + ", not an object of strings");
        fail(tensor_label(name_) + ": entry is " + what + ", not an object");
      case Level::metadata:
        fail("__metadata__: the value of " + in_quotes(key_) + " is " + what + ", not a string");
      case Level::entry:
        fail(tensor_label(name_) + ": " + std::string(field_name()) + " is " + what + ", not " +
             (field_ == Field::dtype ? "a string" : "an array of integers"));
      case Level::array:
        element_error("is " + what + ", not a non-negative integer");
    }
    fail("header: unexpected " + what);
  }

  [[noreturn]] void element_error(const std::string& problem) const {
    const std::size_t index = field_ == Field::shape ? shape_.size() : offsets_.size();
    fail(tensor_label(name_) + ": " + std::string(field_name()) + " element " +
         std::to_string(index) + " " + problem);
  }

  bool element(std::uint64_t v) {
    if (field_ == Field::shape) {
      shape_.push_back(v);
    } else {
      if (offsets_.size() == 2)
        fail(tensor_label(name_) + ": data_offsets has more than 2 elements (it is [begin, end])");
      offsets_.push_back(v);
    }
    return true;
  }

  void set_dtype(const std::string& s) {
    if (const auto d = safetensors_dtype_from_name(s)) {
      dtype_ = *d;
      return;
    }
    std::string supported;
    for (const auto& sp : kSpellings) supported += " " + std::string(sp.name);
    if (std::find(kUnsupported.begin(), kUnsupported.end(), s) != kUnsupported.end())
      fail(tensor_label(name_) + ": dtype " + s + " is not supported (Orion reads" + supported +
           ")");
    fail(tensor_label(name_) + ": unknown dtype " + in_quotes(s) + " (Orion reads" + supported + ")");
  }

  void finish_entry() {
    const std::string label = tensor_label(name_);
    if (!has_[static_cast<std::size_t>(Field::dtype)]) fail(label + ": missing field 'dtype'");
    if (!has_[static_cast<std::size_t>(Field::shape)]) fail(label + ": missing field 'shape'");
    if (!has_[static_cast<std::size_t>(Field::offsets)])
      fail(label + ": missing field 'data_offsets'");

    // The product of the non-zero dimensions is bounded as well as the product of all: a shape
    // like [0, 2^40, 2^40] has no elements, but its strides would overflow.
    std::uint64_t product = 1;
    bool zero = false;
    for (std::uint64_t d : shape_) {
      if (d == 0) {
        zero = true;
        continue;
      }
      if (product > kMaxElements / d)
        fail(label + ": shape " + shape_text() + " has too many elements (more than 2^60)");
      product *= d;
    }
    const std::uint64_t numel = zero ? 0 : product;
    const std::uint64_t nbytes = numel * dtype_size(dtype_);

    if (offsets_.size() != 2)
      fail(label + ": data_offsets has " + std::to_string(offsets_.size()) +
           (offsets_.size() == 1 ? " value" : " values") + ", not 2 (it is [begin, end])");
    const std::uint64_t begin = offsets_[0], end = offsets_[1];
    const std::string where = label + ": data_offsets " + offsets_str(begin, end);
    // Errors name the file offset where the tensor's data starts, when that is in the file.
    auto error = [&](const std::string& problem) {
      if (begin <= data_size_) return Error::at_offset(path_, data_begin_ + begin, where + problem);
      return Error::in_file(path_, where + problem);
    };
    if (begin > end) throw error(": begin is after end");
    if (end > data_size_)
      throw error(" end past the data region, which has " + std::to_string(data_size_) +
                  " bytes (from byte " + std::to_string(data_begin_) + " of the file)");
    if (end - begin != nbytes)
      throw error(" hold " + std::to_string(end - begin) + " bytes, but shape " +
                                 shape_text() + " of " +
                  std::string(safetensors_dtype_name(dtype_)) + " needs " + std::to_string(nbytes));

    SafetensorsEntry e;
    e.name = name_;
    e.dtype = dtype_;
    e.shape.assign(shape_.begin(), shape_.end());  // each at most 2^60 (or the product would be)
    e.begin = data_begin_ + begin;
    e.end = data_begin_ + end;
    entries.push_back(std::move(e));
  }

  std::string shape_text() const {
    std::string s = "[";
    for (std::size_t i = 0; i < shape_.size(); ++i) {
      if (i == 8 && shape_.size() > 9) return s + ", ... (" + std::to_string(shape_.size()) + " dims)]";
      if (i) s += ", ";
      s += std::to_string(shape_[i]);
    }
    return s + "]";
  }

  const std::string& path_;
  std::uint64_t data_begin_;
  std::uint64_t data_size_;
  std::vector<Level> stack_;
  bool done_ = false;
  std::set<std::string> names_;
  std::string name_;  // the current top-level key
  std::string key_;   // the current __metadata__ key
  Field field_ = Field::dtype;
  std::array<bool, 3> has_{};
  DType dtype_ = DType::f32;
  std::vector<std::uint64_t> shape_;
  std::vector<std::uint64_t> offsets_;
};

void check_no_overlap(const std::string& path, std::uint64_t data_begin,
                      const std::vector<SafetensorsEntry>& entries) {
  std::vector<const SafetensorsEntry*> order;
  for (const auto& e : entries)
    if (e.end > e.begin) order.push_back(&e);  // an empty tensor occupies no bytes
  std::sort(order.begin(), order.end(), [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
  });
  const SafetensorsEntry* last = nullptr;  // the one reaching furthest so far
  for (const SafetensorsEntry* e : order) {
    if (last && e->begin < last->end)
      throw Error::at_offset(
          path, e->begin,
          tensor_label(e->name) + ": data_offsets " +
              offsets_str(e->begin - data_begin, e->end - data_begin) + " overlap those of " +
              tensor_label(last->name) + " " +
              offsets_str(last->begin - data_begin, last->end - data_begin));
    if (!last || e->end > last->end) last = e;
  }
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  for (const auto& s : kSpellings)
    if (s.dtype == dtype) return s.name;
  return "?";
}

std::optional<DType> safetensors_dtype_from_name(std::string_view name) {
  for (const auto& s : kSpellings)
    if (s.name == name) return s.dtype;
  return std::nullopt;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.file_ = MappedFile::open(path);
  const std::span<const std::byte> bytes = f.file_->bytes();
  const std::uint64_t size = bytes.size();
  if (size < 8)
    throw Error::in_file(path, "file is " + std::to_string(size) +
                                   " bytes, too short for a safetensors file (it starts with "
                                   "an 8-byte header length)");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::to_integer<std::uint64_t>(bytes[static_cast<std::size_t>(i)]);
  if (n > kSafetensorsMaxHeaderBytes)
    throw Error::at_offset(path, 0, "header length " + std::to_string(n) + " is over the limit of " +
                                        std::to_string(kSafetensorsMaxHeaderBytes) + " bytes");
  if (n > size - 8)
    throw Error::at_offset(path, 0, "header length " + std::to_string(n) +
                                        " runs past the end of the file (" +
                                        std::to_string(size) + " bytes)");
  const char* header = reinterpret_cast<const char*>(bytes.data()) + 8;
  if (n == 0 || header[0] != '{')
    throw Error::at_offset(path, 8, "header does not start with '{' (it must be a JSON object)");

  // No JSON text holds a raw NUL (strings must escape control characters), but nlohmann's
  // lexer takes one outside a string for the end of the input and would ignore what follows.
  if (const void* nul = std::memchr(header, 0, n))
    throw Error::at_offset(path, 8 + static_cast<std::uint64_t>(static_cast<const char*>(nul) - header),
                           "header is not valid JSON: it has a NUL byte");

  f.data_begin_ = 8 + n;
  HeaderReader reader(path, f.data_begin_, size - f.data_begin_);
  try {
    // Strict: nothing but whitespace may follow the object (writers pad with spaces).
    if (!json::sax_parse(header, header + n, &reader) || !reader.complete())
      throw Error::at_offset(path, 8, "header is not valid JSON");
  } catch (const json::exception& e) {
    throw Error::at_offset(path, 8, "header is not valid JSON: " + json_message(e));
  }
  check_no_overlap(path, f.data_begin_, reader.entries);

  f.entries_ = std::move(reader.entries);
  f.metadata_ = std::move(reader.metadata);
  std::sort(f.entries_.begin(), f.entries_.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.name < b.name; });
  return f;
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  const auto it = std::lower_bound(
      entries_.begin(), entries_.end(), name,
      [](const SafetensorsEntry& e, std::string_view n) { return std::string_view(e.name) < n; });
  return it != entries_.end() && it->name == name ? &*it : nullptr;
}

const SafetensorsEntry& SafetensorsFile::get(std::string_view name) const {
  if (const SafetensorsEntry* e = find(name)) return *e;
  throw Error::in_file(path(), "no " + tensor_label(name) + " in this safetensors file");
}

Tensor SafetensorsFile::tensor(std::string_view name) const {
  const SafetensorsEntry& e = get(name);
  return tensor_view(file_, e.dtype, e.shape, static_cast<std::size_t>(e.begin));
}

Tensor SafetensorsFile::tensor_as(std::string_view name, DType dtype) const {
  Tensor t = tensor(name);
  if (t.dtype() == dtype) return t;
  // Tensor::to memcpy's from an empty vector's null data() for an empty tensor (undefined,
  // though harmless in practice); an empty tensor has nothing to convert anyway.
  if (t.numel() == 0) return Tensor(dtype, t.shape());
  return t.to(dtype);
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  struct Item {
    const std::string* name;
    Tensor data;  // contiguous
  };
  std::vector<Item> items;
  items.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    if (name.empty()) throw Error::in_file(path, "cannot write a tensor with an empty name");
    if (!valid_utf8(name))
      throw Error::in_file(path, "tensor name '" + printable(name, true) + "' is not valid UTF-8");
    if (has_control(name))
      throw Error::in_file(path, "tensor name '" + printable(name, true) + "' has a control character");
    if (name == kMetadataKey)
      throw Error::in_file(path, "\"__metadata__\" is reserved and cannot name a tensor");
    if (!t.defined()) throw Error::in_file(path, tensor_label(name) + " is undefined");
    items.push_back({&name, t});
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return *a.name < *b.name; });
  for (std::size_t i = 1; i < items.size(); ++i)
    if (*items[i].name == *items[i - 1].name)
      throw Error::in_file(path, "duplicate " + tensor_label(*items[i].name));
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return write_rank(a.data.dtype()) < write_rank(b.data.dtype());
  });
  for (const auto& [key, value] : metadata)
    if (!valid_utf8(key) || !valid_utf8(value))
      throw Error::in_file(path, "metadata key '" + printable(key, true) +
                                     "' or its value is not valid UTF-8");

  // The header as serde_json writes it (compact, fields in this order), which nlohmann's
  // string escaping matches: \" \\ \b \f \n \r \t, other controls as \u00xx, UTF-8 as is.
  std::string header = "{";
  try {
    if (!metadata.empty()) {
      header += "\"__metadata__\":{";
      bool first = true;
      for (const auto& [key, value] : metadata) {
        if (!first) header += ',';
        first = false;
        header += json(key).dump() + ":" + json(value).dump();
      }
      header += '}';
    }
    std::uint64_t offset = 0;
    for (Item& item : items) {
      item.data = item.data.contiguous();
      const std::uint64_t nbytes = item.data.nbytes();
      if (header.size() > 1) header += ',';
      header += json(*item.name).dump();
      header += ":{\"dtype\":\"";
      header += safetensors_dtype_name(item.data.dtype());
      header += "\",\"shape\":[";
      for (std::size_t d = 0; d < item.data.shape().size(); ++d) {
        if (d) header += ',';
        header += std::to_string(item.data.shape()[d]);
      }
      header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
                std::to_string(offset + nbytes) + "]}";
      offset += nbytes;
    }
  } catch (const json::exception& e) {
    throw Error::in_file(path, "cannot write the header: " + json_message(e));
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > kSafetensorsMaxHeaderBytes)
    throw Error::in_file(path, "the header would be " + std::to_string(header.size()) +
                                   " bytes, over the limit of " +
                                   std::to_string(kSafetensorsMaxHeaderBytes) +
                                   " that readers accept");

  std::array<std::byte, 8> length{};
  for (std::size_t i = 0; i < 8; ++i)
    length[i] = static_cast<std::byte>((header.size() >> (8 * i)) & 0xff);

  AtomicFileWriter out(path);
  out.write(length);
  out.write(header);
  for (const Item& item : items)
    if (item.data.nbytes() > 0)
      out.write(std::span<const std::byte>(item.data.raw(), item.data.nbytes()));
  out.commit();
}

}  // namespace orion::model
