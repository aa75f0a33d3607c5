#include "core/npy_file.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace orion {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;
// A header bigger than this is not one numpy wrote (its own reader refuses past 10,000 bytes
// unless told otherwise); the limit keeps a hostile length from being believed.
constexpr std::size_t kMaxHeader = 1 << 16;

std::optional<DType> dtype_of_descr(std::string_view d) {
  if (d == "<f4") return DType::f32;
  if (d == "<f2") return DType::f16;
  if (d == "<i4") return DType::i32;
  if (d == "|i1" || d == "<i1") return DType::i8;
  if (d == "|u1" || d == "<u1") return DType::u8;
  if (d == "|b1") return DType::boolean;
  return std::nullopt;
}

std::string_view descr_of(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::f16: return "<f2";
    case DType::i32: return "<i4";
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::boolean: return "|b1";
    case DType::bf16: case DType::u32: break;
  }
  return {};
}

// The header dict, as numpy writes it: {'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }
// Keys may come in any order; whitespace is free.
class HeaderReader {
 public:
  HeaderReader(std::string_view text, const std::string& name, std::size_t base)
      : s_(text), name_(name), base_(base) {}

  struct Fields {
    std::string descr;
    std::optional<bool> fortran;
    std::optional<Shape> shape;
  };

  Fields read() {
    Fields f;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      const std::string key = quoted();
      expect(':');
      if (key == "descr") f.descr = quoted();
      else if (key == "fortran_order") f.fortran = boolean();
      else if (key == "shape") f.shape = tuple();
      else fail("unknown header key '" + printable(key) + "'");
      skip();
      if (peek() == ',') ++i_;
    }
    ++i_;
    if (f.descr.empty()) fail("the header has no 'descr'");
    if (!f.fortran) fail("the header has no 'fortran_order'");
    if (!f.shape) fail("the header has no 'shape'");
    return f;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error::at_offset(name_, base_ + i_, what); }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t')) ++i_;
  }
  char peek() {
    skip();
    if (i_ >= s_.size()) fail("the header ends early");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "' in the header");
    ++i_;
  }
  std::string quoted() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string in the header");
    const std::size_t end = s_.find(q, i_ + 1);
    if (end == std::string_view::npos) fail("unterminated string in the header");
    std::string out(s_.substr(i_ + 1, end - i_ - 1));
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip();
    if (s_.substr(i_, 4) == "True") { i_ += 4; return true; }
    if (s_.substr(i_, 5) == "False") { i_ += 5; return false; }
    fail("expected True or False in the header");
  }
  Shape tuple() {
    expect('(');
    Shape shape;
    while (peek() != ')') {
      std::int64_t v = -1;
      const auto [p, ec] = std::from_chars(s_.data() + i_, s_.data() + s_.size(), v);
      if (ec != std::errc() || v < 0) fail("expected a dimension in the shape");
      i_ = static_cast<std::size_t>(p - s_.data());
      shape.push_back(v);
      if (shape.size() > 32) fail("the shape has more than 32 dimensions");
      if (peek() == ',') ++i_;
    }
    ++i_;
    return shape;
  }

  std::string_view s_;
  const std::string& name_;
  std::size_t base_;
  std::size_t i_ = 0;
};

}  // namespace

Tensor parse_npy(std::span<const std::byte> bytes, const std::string& name) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < kMagicSize + 4 || std::memcmp(p, kMagic, kMagicSize) != 0)
    throw Error::at_offset(name, 0, "not a .npy file (no \\x93NUMPY magic)");
  const int major = p[6];
  std::size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<std::size_t>(p[8]) | static_cast<std::size_t>(p[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error::at_offset(name, 8, "the header length is cut off");
    header_len = static_cast<std::size_t>(p[8]) | static_cast<std::size_t>(p[9]) << 8 |
                 static_cast<std::size_t>(p[10]) << 16 | static_cast<std::size_t>(p[11]) << 24;
    start = 12;
  } else {
    throw Error::at_offset(name, 6, "format version " + std::to_string(major) + " (1 to 3 are read)");
  }
  if (header_len > kMaxHeader) throw Error::at_offset(name, 8, "header of " + std::to_string(header_len) + " bytes");
  if (start + header_len > bytes.size())
    throw Error::at_offset(name, start, "the header of " + std::to_string(header_len) + " bytes runs past the end");
  const std::string_view header(reinterpret_cast<const char*>(p + start), header_len);
  const auto fields = HeaderReader(header, name, start).read();
  const auto dtype = dtype_of_descr(fields.descr);
  if (!dtype)
    throw Error::at_offset(name, start, "dtype '" + printable(fields.descr) +
                                            "' (read: <f4 <f2 <i4 |i1 |u1 |b1, little-endian)");
  if (*fields.fortran) throw Error::at_offset(name, start, "a Fortran-order array (write it in C order)");
  const std::size_t data = start + header_len;
  // Checked before multiplying into a byte count, so a hostile shape cannot overflow it.
  std::uint64_t count = 1;
  for (std::int64_t d : *fields.shape) {
    if (d != 0 && count > (std::uint64_t{1} << 40) / static_cast<std::uint64_t>(d))
      throw Error::at_offset(name, start, "shape " + shape_str(*fields.shape) + " is too large");
    count *= static_cast<std::uint64_t>(d);
  }
  const std::uint64_t need = count * dtype_size(*dtype);
  if (bytes.size() - data != need)
    throw Error::at_offset(name, data, "shape " + shape_str(*fields.shape) + " of " + std::string(fields.descr) +
                                           " needs " + std::to_string(need) + " data bytes, the file has " +
                                           std::to_string(bytes.size() - data));
  Tensor t(*dtype, *fields.shape);
  if (need) std::memcpy(t.raw(), p + data, need);
  return t;
}

Tensor read_npy(const std::string& path) {
  const auto file = MappedFile::open(path);
  return parse_npy(file->bytes(), path);
}

std::vector<std::byte> npy_bytes(const Tensor& t) {
  const std::string_view descr = descr_of(t.dtype());
  if (descr.empty()) throw Error("a .npy file cannot hold " + std::string(dtype_name(t.dtype())) + " values");
  std::string shape = "(";
  for (std::int64_t d : t.shape()) shape += std::to_string(d) + ", ";
  if (t.rank() > 1) shape.resize(shape.size() - 1);  // "(2, 3)"; a 1-tuple keeps its comma: "(4,)"
  if (t.rank() > 1) shape.back() = ')';
  else if (t.rank() == 1) { shape.pop_back(); shape += ")"; }
  else shape += ")";
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // As numpy writes it: room for the first dimension to grow to 21 digits in place, then
  // spaces and a newline so that the data starts 64-byte aligned.
  if (t.rank() > 0) header.append(21 - std::min<std::size_t>(21, std::to_string(t.shape()[0]).size()), ' ');
  const std::size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  const Tensor c = t.contiguous();
  std::vector<std::byte> out(total + c.nbytes());
  std::memcpy(out.data(), kMagic, kMagicSize);
  out[6] = std::byte{1};
  out[7] = std::byte{0};
  out[8] = static_cast<std::byte>(header.size() & 0xff);
  out[9] = static_cast<std::byte>(header.size() >> 8);
  std::memcpy(out.data() + 10, header.data(), header.size());
  if (c.nbytes()) std::memcpy(out.data() + total, c.raw(), c.nbytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& t) { write_file_atomic(path, npy_bytes(t)); }

}  // namespace orion
