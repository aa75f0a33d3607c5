#include "model/formats/gguf.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <type_traits>

#include "core/error.h"

namespace orion::model {

namespace {

// ggml's GGML_MAX_DIMS.
constexpr std::uint32_t kMaxDims = 4;
// Larger than any model, small enough that sizes computed from it cannot overflow.
constexpr std::uint64_t kMaxTensorBytes = std::uint64_t{1} << 62;
// The spec bounds a key at 65535 bytes and a tensor name at 64; names are checked against the
// former, so that a file written with longer tensor names than ggml's still reads.
constexpr std::uint64_t kMaxNameBytes = 65535;

// The header read front to back; every read checks that the bytes are there.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, const std::string& path) : bytes_(bytes), path_(path) {}

  std::uint64_t at() const { return at_; }
  std::uint64_t left() const { return bytes_.size() - at_; }

  Error error(std::string_view what) const { return Error::at_offset(path_, at_, what); }

  // `what` names the field in the error for a file that ends before it: a string, or a function
  // that makes one, so that the names of a vocabulary's 150,000 entries are made only for an
  // error.
  template <class T, class What> T scalar(const What& what) {
    if (left() < sizeof(T))
      throw error("the file ends inside " + name(what) + " (" + std::to_string(sizeof(T)) + " bytes, " +
                  std::to_string(left()) + " left)");
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }

  template <class What>
  std::string string(const What& what, std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max()) {
    const auto n = scalar<std::uint64_t>([&] { return name(what) + "'s length"; });
    if (n > left())
      throw Error::at_offset(path_, at_ - 8, name(what) + " is " + std::to_string(n) + " bytes long, past the end of the file (" +
                                                 std::to_string(left()) + " bytes left)");
    if (n > max_bytes)
      throw Error::at_offset(path_, at_ - 8, name(what) + " is " + std::to_string(n) + " bytes long, more than " +
                                                 std::to_string(max_bytes));
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return s;
  }

 private:
  template <class What> static std::string name(const What& what) {
    if constexpr (std::is_invocable_v<What>)
      return what();
    else
      return std::string(what);
  }

  std::span<const std::byte> bytes_;
  const std::string& path_;
  std::uint64_t at_ = 0;
};

// The bytes one element of `t` takes at least (a string: its 8-byte length), which bounds how
// many elements the rest of the file can hold before any is read.
std::uint64_t min_bytes(GgufType t) {
  switch (t) {
    case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
    case GgufType::u16: case GgufType::i16: return 2;
    case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
    default: return 8;
  }
}

bool known_type(std::uint32_t t) { return t <= static_cast<std::uint32_t>(GgufType::f64); }

// One element of type `t` appended to `v`. `where()` names it in errors.
template <class Where>
void read_element(Cursor& c, GgufType t, GgufValue& v, const Where& where) {
  switch (t) {
    case GgufType::u8: v.ints.push_back(c.scalar<std::uint8_t>(where)); return;
    case GgufType::i8: v.ints.push_back(c.scalar<std::int8_t>(where)); return;
    case GgufType::u16: v.ints.push_back(c.scalar<std::uint16_t>(where)); return;
    case GgufType::i16: v.ints.push_back(c.scalar<std::int16_t>(where)); return;
    case GgufType::u32: v.ints.push_back(c.scalar<std::uint32_t>(where)); return;
    case GgufType::i32: v.ints.push_back(c.scalar<std::int32_t>(where)); return;
    case GgufType::i64: v.ints.push_back(c.scalar<std::int64_t>(where)); return;
    case GgufType::u64: {
      // Kept as its bits; integer() refuses the values above 2^63 - 1 where they are read.
      const auto u = c.scalar<std::uint64_t>(where);
      v.ints.push_back(static_cast<std::int64_t>(u));
      return;
    }
    case GgufType::f32: v.reals.push_back(c.scalar<float>(where)); return;
    case GgufType::f64: v.reals.push_back(c.scalar<double>(where)); return;
    case GgufType::boolean: {
      const auto b = c.scalar<std::uint8_t>(where);
      if (b > 1) throw c.error(where() + " is a bool of value " + std::to_string(b) + " (0 or 1)");
      v.ints.push_back(b);
      return;
    }
    case GgufType::string: v.strings.push_back(c.string(where)); return;
    case GgufType::array: break;
  }
  throw c.error(where() + ": an array inside an array, which GGUF readers (ggml's too) do not read");
}

GgufValue read_value(Cursor& c, const std::string& key) {
  const std::string where = "key " + in_quotes(key);
  const auto raw = c.scalar<std::uint32_t>(where + "'s value type");
  if (!known_type(raw)) throw c.error(where + " has the value type " + std::to_string(raw) + ", which GGUF does not define (0-12)");
  GgufValue v;
  v.type = v.element = static_cast<GgufType>(raw);
  if (v.type != GgufType::array) {
    read_element(c, v.type, v, [&] { return where; });
    return v;
  }
  const auto et = c.scalar<std::uint32_t>(where + "'s element type");
  if (!known_type(et)) throw c.error(where + " is an array of the value type " + std::to_string(et) + ", which GGUF does not define (0-12)");
  v.element = static_cast<GgufType>(et);
  const auto n = c.scalar<std::uint64_t>(where + "'s length");
  if (v.element != GgufType::array && n > c.left() / min_bytes(v.element))
    throw c.error(where + " is an array of " + std::to_string(n) + " " + std::string(gguf_type_name(v.element)) +
                  " values, more than the " + std::to_string(c.left()) + " bytes left hold");
  if (v.element == GgufType::string) v.strings.reserve(n);
  else if (v.element == GgufType::f32 || v.element == GgufType::f64) v.reals.reserve(n);
  else if (v.element != GgufType::array) v.ints.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) read_element(c, v.element, v, [&] { return where + "[" + std::to_string(i) + "]"; });
  return v;
}

std::uint64_t align_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

std::string_view gguf_type_name(GgufType type) {
  static constexpr std::string_view kNames[] = {"u8",  "i8",   "u16",    "i16",   "u32", "i32", "f32",
                                                "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<std::uint32_t>(type);
  return i < std::size(kNames) ? kNames[i] : "?";
}

std::size_t GgufValue::size() const { return ints.size() + reals.size() + strings.size(); }

Shape GgufTensorInfo::shape() const { return Shape(dims.rbegin(), dims.rend()); }

std::int64_t GgufTensorInfo::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

GgufFile GgufFile::open(const std::string& path) {
  GgufFile g;
  g.file_ = MappedFile::open(path);
  Cursor c(g.file_->bytes(), path);
  if (g.file_->size() < 4 || std::memcmp(g.file_->bytes().data(), kGgufMagic.data(), 4) != 0)
    throw Error::in_file(path, "not a GGUF file (it does not start with \"GGUF\")");
  c.scalar<std::uint32_t>("the magic");
  g.version_ = c.scalar<std::uint32_t>("the version");
  if (g.version_ == 0x02000000 || g.version_ == 0x03000000)
    throw Error::at_offset(path, 4, "a big-endian GGUF file, which Orion does not read");
  // Version 2 has version 3's layout; 3 only added the big-endian files refused above.
  if (g.version_ != 2 && g.version_ != 3)
    throw Error::at_offset(path, 4, "GGUF version " + std::to_string(g.version_) + "; Orion reads versions 2 and 3");
  const auto tensor_count = c.scalar<std::uint64_t>("the tensor count");
  const auto kv_count = c.scalar<std::uint64_t>("the metadata count");
  // Each key/value takes at least 8 + 4 + 1 bytes, each tensor info 8 + 4 + 4 + 8.
  if (kv_count > c.left() / 13) throw Error::at_offset(path, 16, std::to_string(kv_count) + " metadata keys cannot fit in the file");
  if (tensor_count > c.left() / 24) throw Error::at_offset(path, 8, std::to_string(tensor_count) + " tensors cannot fit in the file");

  for (std::uint64_t i = 0; i < kv_count; ++i) {
    const std::uint64_t key_at = c.at();
    std::string key = c.string("key " + std::to_string(i), kMaxNameBytes);
    if (g.key_index_.count(key)) throw Error::at_offset(path, key_at, "the key " + in_quotes(key) + " appears twice");
    GgufValue v = read_value(c, key);
    g.key_index_.emplace(key, g.metadata_.size());
    g.metadata_.emplace_back(std::move(key), std::move(v));
  }
  if (const GgufValue* a = g.find("general.alignment")) {
    if (a->is_array() || a->element != GgufType::u32)
      throw Error::in_file(path, "key \"general.alignment\" is " + std::string(gguf_type_name(a->type)) + ", not u32");
    const std::int64_t v = a->ints[0];
    if (v <= 0 || (v & (v - 1)) != 0)
      throw Error::in_file(path, "key \"general.alignment\" is " + std::to_string(v) + ", not a power of two");
    g.alignment_ = static_cast<std::uint32_t>(v);
  }

  for (std::uint64_t i = 0; i < tensor_count; ++i) {
    const std::uint64_t info_at = c.at();
    GgufTensorInfo t;
    t.name = c.string("tensor " + std::to_string(i) + "'s name", kMaxNameBytes);
    const std::string where = "tensor " + in_quotes(t.name);
    if (g.tensor_index_.count(t.name)) throw Error::at_offset(path, info_at, where + " appears twice");
    const auto n_dims = c.scalar<std::uint32_t>(where + "'s dimension count");
    if (n_dims > kMaxDims)
      throw c.error(where + " has " + std::to_string(n_dims) + " dimensions; GGUF tensors have at most " + std::to_string(kMaxDims));
    std::uint64_t numel = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const auto v = c.scalar<std::int64_t>(where + "'s dimensions");
      if (v < 0) throw c.error(where + " has the negative dimension " + std::to_string(v));
      t.dims.push_back(v);
      // Checked before multiplying, so that no product overflows.
      if (v != 0 && numel > kMaxTensorBytes / static_cast<std::uint64_t>(v)) throw c.error(where + " has more than 2^62 values");
      numel *= static_cast<std::uint64_t>(v);
    }
    t.type = c.scalar<std::uint32_t>(where + "'s type");
    const GgmlTypeInfo* info = ggml_type_info(t.type);
    if (!info) throw c.error(where + " has the type " + std::to_string(t.type) + ", which is not a ggml type Orion knows");
    const std::int64_t row = t.dims.empty() ? 1 : t.dims[0];
    if (row % info->block_values != 0)
      throw c.error(where + " has rows of " + std::to_string(row) + " values, not a multiple of " + std::string(info->name) +
                    "'s block of " + std::to_string(info->block_values));
    // numel <= 2^62 and a block is at least 1 value, so blocks * block_bytes (at most 292 a
    // block) fits in 64 bits.
    t.bytes = numel / static_cast<std::uint64_t>(info->block_values) * static_cast<std::uint64_t>(info->block_bytes);
    if (t.bytes > kMaxTensorBytes) throw c.error(where + " has more than 2^62 bytes");
    t.offset = c.scalar<std::uint64_t>(where + "'s offset");
    if (t.offset % g.alignment_ != 0)
      throw c.error(where + "'s offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                    std::to_string(g.alignment_));
    g.tensor_index_.emplace(t.name, g.tensors_.size());
    g.tensors_.push_back(std::move(t));
  }

  g.data_begin_ = align_up(c.at(), g.alignment_);
  const std::uint64_t size = g.file_->size();
  if (g.data_begin_ > size && !g.tensors_.empty())
    throw Error::in_file(path, "the data section would start at byte " + std::to_string(g.data_begin_) + ", past the end of the " +
                                   std::to_string(size) + "-byte file");
  std::vector<const GgufTensorInfo*> by_offset;
  for (GgufTensorInfo& t : g.tensors_) {
    const std::uint64_t room = size - g.data_begin_;
    if (t.offset > room || t.bytes > room - t.offset)
      throw Error::in_file(path, "tensor " + in_quotes(t.name) + "'s " + std::to_string(t.bytes) + " bytes at data offset " +
                                     std::to_string(t.offset) + " run past the end of the file (" + std::to_string(room) +
                                     " bytes of data)");
    t.offset += g.data_begin_;
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (std::size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i - 1]->offset + by_offset[i - 1]->bytes > by_offset[i]->offset)
      throw Error::in_file(path, "tensors " + in_quotes(by_offset[i - 1]->name) + " and " + in_quotes(by_offset[i]->name) +
                                     " overlap in the data section");
  return g;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

bool is_integer_type(GgufType t) {
  return t != GgufType::f32 && t != GgufType::f64 && t != GgufType::string && t != GgufType::array &&
         t != GgufType::boolean;
}

Error wrong_type(const std::string& path, std::string_view key, const GgufValue& v, std::string_view wanted) {
  const std::string got = v.is_array() ? "an array of " + std::string(gguf_type_name(v.element)) : std::string(gguf_type_name(v.type));
  return Error::in_file(path, "key " + in_quotes(key) + " is " + got + ", not " + std::string(wanted));
}

std::int64_t checked_int(const std::string& path, std::string_view key, const GgufValue& v, std::int64_t x) {
  if (v.element == GgufType::u64 && x < 0)
    throw Error::in_file(path, "key " + in_quotes(key) + " holds " + std::to_string(static_cast<std::uint64_t>(x)) +
                                   ", larger than Orion reads (2^63 - 1)");
  return x;
}

}  // namespace

std::optional<std::int64_t> GgufFile::integer(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_array() || !is_integer_type(v->type)) throw wrong_type(path(), key, *v, "an integer");
  return checked_int(path(), key, *v, v->ints[0]);
}

std::optional<double> GgufFile::real(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_array() && (v->type == GgufType::f32 || v->type == GgufType::f64)) return v->reals[0];
  if (!v->is_array() && is_integer_type(v->type)) return static_cast<double>(checked_int(path(), key, *v, v->ints[0]));
  throw wrong_type(path(), key, *v, "a number");
}

std::optional<bool> GgufFile::boolean(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_array() || v->type != GgufType::boolean) throw wrong_type(path(), key, *v, "a bool");
  return v->ints[0] != 0;
}

std::optional<std::string> GgufFile::string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_array() || v->type != GgufType::string) throw wrong_type(path(), key, *v, "a string");
  return v->strings[0];
}

std::optional<std::vector<std::string>> GgufFile::strings(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_array() || v->element != GgufType::string) throw wrong_type(path(), key, *v, "an array of strings");
  return v->strings;
}

std::optional<std::vector<std::int64_t>> GgufFile::integers(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_array() || !is_integer_type(v->element)) throw wrong_type(path(), key, *v, "an array of integers");
  for (std::int64_t x : v->ints) checked_int(path(), key, *v, x);
  return v->ints;
}

std::optional<std::vector<double>> GgufFile::reals(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_array() || !(v->element == GgufType::f32 || v->element == GgufType::f64 || is_integer_type(v->element)))
    throw wrong_type(path(), key, *v, "an array of numbers");
  if (!v->reals.empty() || v->ints.empty()) return v->reals;
  std::vector<double> out;
  for (std::int64_t x : v->ints) out.push_back(static_cast<double>(checked_int(path(), key, *v, x)));
  return out;
}

std::span<const std::byte> GgufFile::tensor_bytes(const GgufTensorInfo& t) const {
  return file_->bytes().subspan(t.offset, t.bytes);
}

Tensor GgufFile::dequantized(const GgufTensorInfo& t) const {
  const GgmlTypeInfo& info = t.type_info();
  if (!info.dequantised)
    throw Error::in_file(path(), "tensor " + in_quotes(t.name) + " is " + std::string(info.name) +
                                     "; Orion reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K and Q6_K tensors");
  Tensor out(DType::f32, t.shape());
  dequantize_blocks(static_cast<GgmlType>(t.type), tensor_bytes(t), out.span<float>());
  return out;
}

nlohmann::json gguf_header_json(const GgufFile& g) {
  using nlohmann::json;
  json meta = json::object();
  for (const auto& entry : g.metadata()) {
    const GgufValue& v = entry.second;  // a structured binding cannot be captured before C++20's clang 16
    auto one = [&](std::size_t i) -> json {
      switch (v.element) {
        case GgufType::string: return v.strings[i];
        case GgufType::f32: case GgufType::f64: return v.reals[i];
        case GgufType::boolean: return v.ints[i] != 0;
        case GgufType::u64: return static_cast<std::uint64_t>(v.ints[i]);
        default: return v.ints[i];
      }
    };
    json e = {{"type", static_cast<int>(v.type)}};
    if (v.is_array()) {
      e["subType"] = static_cast<int>(v.element);
      json list = json::array();
      for (std::size_t i = 0; i < v.size(); ++i) list.push_back(one(i));
      e["value"] = std::move(list);
    } else {
      e["value"] = one(0);
    }
    meta[entry.first] = std::move(e);
  }
  json tensors = json::array();
  for (const GgufTensorInfo& t : g.tensors())
    tensors.push_back({{"name", t.name}, {"dims", t.dims}, {"type", t.type}, {"offset", t.offset - g.data_begin()}});
  return {{"version", g.version()}, {"metadata", std::move(meta)}, {"tensors", std::move(tensors)}, {"data_offset", g.data_begin()}};
}

bool is_gguf_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && std::string_view(magic, 4) == kGgufMagic;
}

}  // namespace orion::model
