// The safetensors reader and writer: round trips of every dtype, the exact bytes written
// (checked against encodings written out here by hand, and against the byte vectors of Hugging
// Face's own serializer tests), zero-copy views, one malformed file per validation rule,
// random corruption, and the atomic writer.
#include "model/formats/safetensors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "core/testing_temp_dir.h"

namespace orion::model {
namespace {

using testing_util::read_bytes;
using testing_util::TempDir;
using testing_util::write_bytes;

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// Bytes from hex digits ("0000803f" -> 00 00 80 3f); spaces are ignored.
std::string hex(std::string_view digits) {
  std::string out;
  int high = -1;
  for (char c : digits) {
    if (c == ' ') continue;
    const int v = c <= '9' ? c - '0' : c - 'a' + 10;
    if (high < 0) {
      high = v;
    } else {
      out += static_cast<char>(high * 16 + v);
      high = -1;
    }
  }
  return out;
}

// A file: the header's length, the header, the data.
std::string file_bytes(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

std::string tensor_bytes(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::string(reinterpret_cast<const char*>(c.raw()), c.nbytes());
}

// A tensor of `dtype` and `shape` with seeded random content valid for the dtype.
Tensor random_tensor(Rng& rng, DType dtype, const Shape& shape) {
  Tensor t(dtype, shape);
  std::byte* p = t.raw();
  for (std::size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<std::byte>(rng.below(256));
  if (dtype == DType::boolean)
    for (std::size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<std::byte>(rng.below(2));
  return t;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Runs `f`, which must throw orion::Error whose message contains each of `parts`.
template <class F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning " << parts.front();
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const std::string& part : parts)
      EXPECT_TRUE(contains(message, part)) << "message: " << message << "\nmissing: " << part;
  }
}

TEST(SafetensorsRoundTrip, EveryDTypeWithScalarsEmptyTensorsAndMetadata) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  Rng rng(7);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (DType d : kAllDTypes) {
    const std::string base = "layer." + std::string(dtype_name(d));
    tensors.emplace_back(base + ".matrix", random_tensor(rng, d, {3, 5}));
    tensors.emplace_back(base + ".odd", random_tensor(rng, d, {7}));
    tensors.emplace_back(base + ".scalar", random_tensor(rng, d, {}));
    tensors.emplace_back(base + ".empty", Tensor(d, {0}));
    tensors.emplace_back(base + ".empty3", Tensor(d, {2, 0, 3}));
  }
  // A non-contiguous view is written as its contiguous copy.
  const int perm[] = {1, 0};
  const Tensor strided = random_tensor(rng, DType::f32, {2, 3}).permute(perm);
  ASSERT_FALSE(strided.is_contiguous());
  tensors.emplace_back("transposed", strided);
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"note", "line\nbreak, \"quotes\", \\ and \xc3\xbcnicode"}, {"", ""}};

  write_safetensors(path, tensors, metadata);
  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.path(), path);
  EXPECT_EQ(f.metadata(), metadata);
  ASSERT_EQ(f.entries().size(), tensors.size());

  std::vector<std::string> names;
  for (const auto& [name, t] : tensors) names.push_back(name);
  std::sort(names.begin(), names.end());
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(f.entries()[i].name, names[i]);

  for (const auto& [name, t] : tensors) {
    SCOPED_TRACE(name);
    const SafetensorsEntry* e = f.find(name);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->name, name);
    EXPECT_EQ(e->dtype, t.dtype());
    EXPECT_EQ(e->shape, t.shape());
    EXPECT_EQ(e->end - e->begin, t.nbytes());
    const Tensor back = f.tensor(name);
    EXPECT_EQ(back.dtype(), t.dtype());
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(tensor_bytes(back), tensor_bytes(t));
    const Tensor as_f16 = f.tensor_as(name, DType::f16);
    EXPECT_EQ(as_f16.dtype(), DType::f16);
    EXPECT_EQ(as_f16.shape(), t.shape());
    // (Tensor::to of an empty tensor is avoided here: it memcpy's from a null pointer.)
    if (t.numel() > 0) {
      EXPECT_EQ(tensor_bytes(as_f16), tensor_bytes(t.to(DType::f16)));
    }
  }
  EXPECT_EQ(f.find("layer"), nullptr);
  EXPECT_EQ(f.find("transposed2"), nullptr);
  EXPECT_EQ(f.find(""), nullptr);

  // The layout Hugging Face's reader requires: the data region at a multiple of 8, every tensor
  // at a multiple of its element size, contiguous without gaps up to the end of the file.
  const std::string bytes = read_bytes(path);
  EXPECT_EQ(f.data_begin() % 8, 0u);
  std::vector<SafetensorsEntry> by_offset(f.entries().begin(), f.entries().end());
  std::sort(by_offset.begin(), by_offset.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t expected_begin = f.data_begin();
  for (const auto& e : by_offset) {
    EXPECT_EQ(e.begin, expected_begin) << e.name;
    EXPECT_EQ(e.begin % dtype_size(e.dtype), 0u) << e.name;
    expected_begin = e.end;
  }
  EXPECT_EQ(expected_begin, bytes.size());
}

TEST(SafetensorsRoundTrip, EmptyFileAndValuesThroughTensorAs) {
  TempDir dir;
  const std::string path = dir.file("empty.safetensors");
  write_safetensors(path, {});
  // Hugging Face's serializer writes "{}" padded to 8 bytes for no tensors.
  EXPECT_EQ(read_bytes(path), le64(8) + "{}      ");
  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_TRUE(f.entries().empty());
  EXPECT_TRUE(f.metadata().empty());

  // f16 1.0 = 0x3c00, -2.5 = 0xc100, 65504 = 0x7bff; bf16 -2.0 = 0xc000, 0.5 = 0x3f00.
  Tensor h(DType::f16, {3});
  h.data<std::uint16_t>()[0] = 0x3c00;
  h.data<std::uint16_t>()[1] = 0xc100;
  h.data<std::uint16_t>()[2] = 0x7bff;
  Tensor b(DType::bf16, {2});
  b.data<std::uint16_t>()[0] = 0xc000;
  b.data<std::uint16_t>()[1] = 0x3f00;
  const std::string path2 = dir.file("halves.safetensors");
  write_safetensors(path2, {{"h", h}, {"b", b}});
  const SafetensorsFile g = SafetensorsFile::open(path2);
  EXPECT_EQ(g.tensor_as("h", DType::f32).to_floats(), (std::vector<float>{1.0f, -2.5f, 65504.0f}));
  EXPECT_EQ(g.tensor_as("b", DType::f32).to_floats(), (std::vector<float>{-2.0f, 0.5f}));
  const Tensor i = g.tensor_as("h", DType::i32);
  ASSERT_EQ(i.dtype(), DType::i32);
  EXPECT_EQ(i.data<std::int32_t>()[1], -2);  // truncated toward zero
  // The same dtype gives the zero-copy view itself.
  EXPECT_EQ(g.tensor_as("h", DType::f16).raw(), g.tensor("h").raw());
  EXPECT_EQ(g.tensor_as("h", DType::bf16).data<std::uint16_t>()[0], 0x3f80);  // bf16 1.0
}

TEST(SafetensorsWriter, BytesMatchAHandEncodingOfEveryDType) {
  TempDir dir;
  const std::string path = dir.file("small.safetensors");
  // Given out of order; written by descending element size, then by name.
  std::vector<std::pair<std::string, Tensor>> tensors;
  Tensor z(DType::boolean, {2});
  z.data<std::uint8_t>()[0] = 1;
  tensors.emplace_back("z", z);
  Tensor a(DType::i8, {3});
  a.data<std::int8_t>()[0] = 1;
  a.data<std::int8_t>()[1] = -1;
  a.data<std::int8_t>()[2] = 127;
  tensors.emplace_back("a", a);
  Tensor c(DType::f16, {1});
  c.data<std::uint16_t>()[0] = 0x3e00;  // 1.5
  tensors.emplace_back("c", c);
  tensors.emplace_back("b", Tensor::from_floats({2}, std::vector<float>{1.0f, -2.0f}));
  Tensor u(DType::u8, {1});
  u.data<std::uint8_t>()[0] = 200;
  tensors.emplace_back("u", u);
  Tensor m(DType::bf16, {});
  m.data<std::uint16_t>()[0] = 0xc000;  // -2.0
  tensors.emplace_back("m", m);
  tensors.emplace_back("i", Tensor::from_ints({1}, std::vector<std::int32_t>{-2}));
  write_safetensors(path, tensors, {{"k", "v\n"}});

  const std::string header =
      R"({"__metadata__":{"k":"v\n"},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("i":{"dtype":"I32","shape":[1],"data_offsets":[8,12]},)"
      R"("m":{"dtype":"BF16","shape":[],"data_offsets":[12,14]},)"
      R"("c":{"dtype":"F16","shape":[1],"data_offsets":[14,16]},)"
      R"("a":{"dtype":"I8","shape":[3],"data_offsets":[16,19]},)"
      R"("u":{"dtype":"U8","shape":[1],"data_offsets":[19,20]},)"
      R"("z":{"dtype":"BOOL","shape":[2],"data_offsets":[20,22]}})";
  ASSERT_EQ(header.size(), 409u);  // counted separately; 7 spaces pad it to 416
  const std::string expected = le64(416) + header + std::string(7, ' ') +
                               hex("0000803f 000000c0  feffffff  00c0  003e  01ff7f  c8  0100");
  EXPECT_EQ(read_bytes(path), expected);
}

// The byte vectors of Hugging Face's own serializer tests (safetensors/src/tensor.rs:
// test_serialization, test_serialization_forced_alignement, test_empty), written out here.
TEST(SafetensorsWriter, BytesMatchHuggingFaceTestVectors) {
  TempDir dir;
  const std::vector<float> values = {0, 1, 2, 3, 4, 5};
  const std::string data = hex("00000000 0000803f 00000040 00004040 00008040 0000a040");

  const std::string p1 = dir.file("attn.safetensors");
  write_safetensors(p1, {{"attn.0", Tensor::from_floats({1, 2, 3}, values)}});
  EXPECT_EQ(read_bytes(p1),
            le64(64) + R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})" + data);

  const std::string p2 = dir.file("attn0.safetensors");
  write_safetensors(p2, {{"attn0", Tensor::from_floats({1, 1, 2, 3}, values)}});
  EXPECT_EQ(read_bytes(p2), le64(72) +
                                R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})" +
                                "       " + data);

  const std::string p3 = dir.file("meta.safetensors");
  write_safetensors(p3, {}, {{"framework", "pt"}});
  EXPECT_EQ(read_bytes(p3), le64(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");

  const SafetensorsFile f = SafetensorsFile::open(p2);
  EXPECT_EQ(f.tensor("attn0").to_floats(), values);
  EXPECT_EQ(SafetensorsFile::open(p3).metadata().at("framework"), "pt");
}

TEST(SafetensorsReader, ZeroCopyViewsPointIntoTheMapping) {
  TempDir dir;
  const std::string path = dir.file("views.safetensors");
  Rng rng(11);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (DType d : kAllDTypes) tensors.emplace_back(std::string(dtype_name(d)), random_tensor(rng, d, {3}));
  write_safetensors(path, tensors);

  Tensor kept;
  {
    const SafetensorsFile f = SafetensorsFile::open(path);
    const std::byte* base = f.mapping()->bytes().data();
    for (const auto& e : f.entries()) {
      SCOPED_TRACE(e.name);
      const Tensor t = f.tensor(e.name);
      EXPECT_EQ(t.raw(), base + e.begin);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.raw()) % dtype_size(e.dtype), 0u);
    }
    kept = f.tensor("f32");
  }
  // The view keeps the mapping alive after the file object is gone.
  EXPECT_EQ(tensor_bytes(kept), tensor_bytes(tensors.front().second));
}

TEST(SafetensorsReader, MisalignedDataIsCopiedAndGapsAndPaddingAreAccepted) {
  TempDir dir;
  const std::string path = dir.file("odd.safetensors");
  // "b" starts at data offset 1, so it cannot be viewed in place; a gap of 3 bytes follows it
  // and 5 unused bytes end the file; the header is padded with spaces and a newline.
  const std::string header =
      R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[1,9]},)"
      R"( "a":{"dtype":"I8","shape":[1],"data_offsets":[0,1]},)"
      R"( "c":{"shape":[1],"dtype":"F16","data_offsets":[12,14]},)"
      R"( "e":{"dtype":"U8","shape":[0],"data_offsets":[3,3]}})"
      "  \n   ";
  const std::string data = hex("05 0000c03f 000040c0 aaaaaa 00bc 0102030405");  // 1.5, -3; -1
  write_bytes(path, file_bytes(header, data));
  const SafetensorsFile f = SafetensorsFile::open(path);
  ASSERT_EQ(f.entries().size(), 4u);
  EXPECT_EQ(f.data_begin(), 8 + header.size());
  const Tensor b = f.tensor("b");
  const std::byte* base = f.mapping()->bytes().data();
  EXPECT_NE(b.raw(), base + f.find("b")->begin);  // a copy
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.raw()) % 4, 0u);
  EXPECT_EQ(b.to_floats(), (std::vector<float>{1.5f, -3.0f}));
  EXPECT_EQ(f.tensor("a").to_floats(), std::vector<float>{5.0f});
  EXPECT_EQ(f.tensor("c").to_floats(), std::vector<float>{-1.0f});
  EXPECT_EQ(f.tensor("e").numel(), 0);
  EXPECT_EQ(f.find("c")->begin, 8 + header.size() + 12);
}

TEST(SafetensorsReader, UnknownTensorNameNamesTheFileAndTheTensor) {
  TempDir dir;
  const std::string path = dir.file("one.safetensors");
  write_safetensors(path, {{"present", Tensor::scalar(1.0f)}});
  const SafetensorsFile f = SafetensorsFile::open(path);
  expect_error([&] { f.tensor("absent.weight"); }, {path, "tensor 'absent.weight'"});
  expect_error([&] { f.tensor_as("absent.weight", DType::f16); }, {path, "tensor 'absent.weight'"});
}

struct BadFile {
  std::string rule;
  std::string bytes;
  std::vector<std::string> expect;  // besides the path
};

// An entry with the given dtype, shape and data_offsets JSON.
std::string entry(const std::string& dtype, const std::string& shape, const std::string& offsets) {
  return R"({"dtype":)" + dtype + R"(,"shape":)" + shape + R"(,"data_offsets":)" + offsets + "}";
}

std::vector<BadFile> bad_files() {
  const std::string zeros(64, '\0');
  const std::string w = R"({"w":)";
  auto one = [&](const std::string& e) { return file_bytes(w + e + "}", zeros); };
  // Files built on `h16` have their data region at byte 61, 62 or 63 (8 + the header's length).
  const std::string h16 = R"({"w":{"dtype":"U8","shape":[4],"data_offsets":)";
  std::vector<BadFile> cases = {
      {"shorter than 8 bytes", "\x01\x02\x03", {"3 bytes", "too short"}},
      {"header length over the limit", le64(200'000'000) + "{}", {"at byte 0", "200000000", "limit"}},
      {"header length near 2^64", le64(std::numeric_limits<std::uint64_t>::max()) + "{}",
       {"at byte 0", "18446744073709551615", "limit"}},
      {"header length past the end", le64(100) + "{}      ", {"at byte 0", "header length 100", "past the end"}},
      {"empty header", le64(0) + "data", {"at byte 8", "start with '{'"}},
      {"header not an object", file_bytes("[1,2]", ""), {"at byte 8", "start with '{'"}},
      {"header with leading space", file_bytes(" {}", ""), {"at byte 8", "start with '{'"}},
      {"header not JSON", file_bytes(R"({"w":{"dtype":"F32")", zeros), {"not valid JSON", "at byte"}},
      {"text after the JSON", file_bytes("{} x", ""), {"not valid JSON", "at byte 11"}},
      {"NUL padding", file_bytes(std::string("{}") + '\0', ""), {"not valid JSON", "at byte 10"}},
      {"invalid UTF-8 in a name", file_bytes("{\"w\xff\":1}", ""), {"not valid JSON", "UTF-8"}},
      {"number overflow", one(entry(R"("F32")", "[1e999]", "[0,4]")), {"not valid JSON", "at byte"}},
      {"entry an array", one("[1]"), {"tensor 'w'", "entry is an array, not an object"}},
      {"entry a string", one(R"("x")"), {"tensor 'w'", "entry is a string, not an object"}},
      {"entry null", one("null"), {"tensor 'w'", "entry is null, not an object"}},
      {"missing dtype", one(R"({"shape":[1],"data_offsets":[0,4]})"), {"tensor 'w'", "missing field 'dtype'"}},
      {"missing shape", one(R"({"dtype":"F32","data_offsets":[0,4]})"), {"tensor 'w'", "missing field 'shape'"}},
      {"missing data_offsets", one(R"({"dtype":"F32","shape":[1]})"),
       {"tensor 'w'", "missing field 'data_offsets'"}},
      {"dtype a number", one(entry("5", "[1]", "[0,4]")), {"tensor 'w'", "dtype is a number, not a string"}},
      {"shape a string", one(entry(R"("F32")", R"("1")", "[0,4]")), {"tensor 'w'", "shape is a string"}},
      {"data_offsets an object", one(entry(R"("F32")", "[1]", R"({"a":0})")),
       {"tensor 'w'", "data_offsets is an object"}},
      {"unknown field", one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1})"),
       {"tensor 'w'", "unknown field 'extra'"}},
      {"unknown dtype", one(entry(R"("Q7")", "[1]", "[0,4]")), {"tensor 'w'", "unknown dtype 'Q7'"}},
      {"lowercase dtype", one(entry(R"("f32")", "[1]", "[0,4]")), {"tensor 'w'", "unknown dtype 'f32'"}},
      {"unsupported dtype", one(entry(R"("F64")", "[1]", "[0,8]")), {"tensor 'w'", "dtype F64 is not supported"}},
      {"negative dimension", one(entry(R"("F32")", "[1,-2]", "[0,4]")),
       {"tensor 'w'", "shape element 1 is negative (-2)"}},
      {"fractional dimension", one(entry(R"("F32")", "[1.5]", "[0,4]")),
       {"tensor 'w'", "shape element 0 is not an integer", "1.5"}},
      {"integral float dimension", one(entry(R"("F32")", "[2.0]", "[0,8]")),
       {"tensor 'w'", "shape element 0 is not an integer"}},
      {"dimension over 64 bits", one(entry(R"("F32")", "[18446744073709551616]", "[0,4]")),
       {"tensor 'w'", "shape element 0 is not an integer"}},
      {"dimension a string", one(entry(R"("F32")", R"(["2"])", "[0,8]")),
       {"tensor 'w'", "shape element 0 is a string"}},
      {"nested shape", one(entry(R"("F32")", "[[2]]", "[0,8]")), {"tensor 'w'", "shape element 0 is an array"}},
      {"numel overflow", one(entry(R"("U8")", "[4294967296,4294967296,16]", "[0,4]")),
       {"tensor 'w'", "too many elements"}},
      {"numel overflow beside a zero", one(entry(R"("U8")", "[0,4294967296,4294967296,16]", "[0,0]")),
       {"tensor 'w'", "too many elements"}},
      {"one offset", one(entry(R"("U8")", "[1]", "[0]")), {"tensor 'w'", "data_offsets has 1 value, not 2"}},
      {"no offsets", one(entry(R"("U8")", "[0]", "[]")), {"tensor 'w'", "data_offsets has 0 values, not 2"}},
      {"three offsets", one(entry(R"("U8")", "[1]", "[0,1,2]")), {"tensor 'w'", "more than 2"}},
      {"negative offset", one(entry(R"("U8")", "[1]", "[-1,0]")),
       {"tensor 'w'", "data_offsets element 0 is negative"}},
      {"fractional offset", one(entry(R"("U8")", "[1]", "[0,0.5]")),
       {"tensor 'w'", "data_offsets element 1 is not an integer"}},
      {"offset a string", one(entry(R"("U8")", "[1]", R"([0,"1"])")),
       {"tensor 'w'", "data_offsets element 1 is a string"}},
      {"begin after end", file_bytes(h16 + "[5,4]}}", zeros), {"at byte 66", "tensor 'w'", "begin is after end"}},
      {"end past the data", file_bytes(h16 + "[62,66]}}", zeros),
       {"at byte 125", "tensor 'w'", "[62, 66]", "past the data region", "64 bytes"}},
      {"huge offsets", file_bytes(h16 + "[18446744073709551615,18446744073709551615]}}", zeros),
       {"tensor 'w'", "[18446744073709551615, 18446744073709551615] end past the data region"}},
      {"size mismatch", file_bytes(h16 + "[8,13]}}", zeros),
       {"at byte 70", "tensor 'w'", "hold 5 bytes", "[4] of U8 needs 4"}},
      {"size mismatch for a wider dtype", one(entry(R"("F32")", "[2,2]", "[0,4]")),
       {"tensor 'w'", "hold 4 bytes", "needs 16"}},
      {"overlap", file_bytes(R"({"first":)" + entry(R"("F32")", "[2]", "[0,8]") + R"(,"second":)" +
                                 entry(R"("F16")", "[2]", "[6,10]") + "}",
                             zeros),
       {"tensor 'second'", "overlap", "tensor 'first'", "[6, 10]", "[0, 8]"}},
      {"overlap inside", file_bytes(R"({"big":)" + entry(R"("U8")", "[10]", "[0,10]") + R"(,"mid":)" +
                                        entry(R"("U8")", "[4]", "[2,6]") + R"(,"zz":)" +
                                        entry(R"("U8")", "[1]", "[12,13]") + "}",
                                    zeros),
       {"tensor 'mid'", "overlap", "tensor 'big'"}},
      {"duplicate tensor", file_bytes(R"({"w":)" + entry(R"("U8")", "[1]", "[0,1]") + R"(,"w":)" +
                                          entry(R"("U8")", "[1]", "[1,2]") + "}",
                                      zeros),
       {"duplicate tensor 'w'"}},
      {"duplicate field", one(R"({"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,2]})"),
       {"tensor 'w'", "duplicate field 'dtype'"}},
      {"duplicate metadata key", file_bytes(R"({"__metadata__":{"k":"a","k":"b"}})", ""),
       {"__metadata__", "duplicate key 'k'"}},
      {"duplicate metadata", file_bytes(R"({"__metadata__":{},"__metadata__":{}})", ""),
       {"\"__metadata__\" appears twice"}},
      {"metadata an array", file_bytes(R"({"__metadata__":["a"]})", ""), {"__metadata__ is an array"}},
      {"metadata value a number", file_bytes(R"({"__metadata__":{"k":1}})", ""),
       {"__metadata__", "'k' is a number, not a string"}},
      {"metadata value an object", file_bytes(R"({"__metadata__":{"k":{}}})", ""),
       {"__metadata__", "'k' is an object, not a string"}},
  };
  return cases;
}

TEST(SafetensorsReader, MalformedFilesGiveErrorsNamingFileAndPlace) {
  TempDir dir;
  int index = 0;
  for (const BadFile& c : bad_files()) {
    SCOPED_TRACE(c.rule);
    const std::string path = dir.file("bad" + std::to_string(index++) + ".safetensors");
    write_bytes(path, c.bytes);
    std::vector<std::string> parts = c.expect;
    parts.push_back(path + ": ");
    expect_error([&] { SafetensorsFile::open(path); }, parts);
  }
}

// The malformed cases above differ from valid files only in the broken rule: each fixed
// version opens.
TEST(SafetensorsReader, NearMissesOfTheMalformedCasesOpen) {
  TempDir dir;
  const std::string zeros(64, '\0');
  const std::string h16 = R"({"w":{"dtype":"U8","shape":[4],"data_offsets":)";
  const std::vector<std::string> good = {
      le64(2) + "{}",
      file_bytes("{}\t\r\n ", ""),
      file_bytes(h16 + "[4,8]}}", zeros),
      file_bytes(h16 + "[60,64]}}", zeros),
      file_bytes(R"({"first":)" + entry(R"("F32")", "[2]", "[0,8]") + R"(,"second":)" +
                     entry(R"("F16")", "[2]", "[8,12]") + "}",
                 zeros),
      file_bytes(R"({"w":)" + entry(R"("U8")", "[0,4294967296,4096]", "[0,0]") + "}", ""),
      file_bytes(R"({"w":)" + entry(R"("U8")", "[-0]", "[0,0]") + "}", ""),
      file_bytes(R"({"__metadata__":{"k":"a","l":"\u00fc\n"},"w":)" + entry(R"("BOOL")", "[1,1]", "[0,1]") +
                     "}",
                 "\x01"),
  };
  int index = 0;
  for (const std::string& bytes : good) {
    const std::string path = dir.file("good" + std::to_string(index++) + ".safetensors");
    write_bytes(path, bytes);
    try {
      const SafetensorsFile f = SafetensorsFile::open(path);
      for (const auto& e : f.entries()) EXPECT_EQ(f.tensor(e.name).shape(), e.shape);
    } catch (const Error& e) {
      ADD_FAILURE() << "case " << index - 1 << ": " << e.what();
    }
  }
  const SafetensorsFile last = SafetensorsFile::open(dir.file("good7.safetensors"));
  EXPECT_EQ(last.metadata().at("l"), "\xc3\xbc\n");
}

TEST(SafetensorsReader, RandomCorruptionOpensOrThrowsOrionError) {
  TempDir dir;
  const std::string source = dir.file("source.safetensors");
  Rng content(3);
  write_safetensors(source,
                    {{"wte", random_tensor(content, DType::f32, {2, 3})},
                     {"ids", random_tensor(content, DType::i32, {2})},
                     {"ln.bias", random_tensor(content, DType::bf16, {})},
                     {"h.0.attn", random_tensor(content, DType::f16, {4})},
                     {"q", random_tensor(content, DType::i8, {0})},
                     {"mask", random_tensor(content, DType::boolean, {3})},
                     {"bytes", random_tensor(content, DType::u8, {5})}},
                    {{"format", "pt"}});
  const std::string original = read_bytes(source);
  const std::size_t header_end = 8 + static_cast<std::size_t>(static_cast<unsigned char>(original[0])) +
                                 256 * static_cast<std::size_t>(static_cast<unsigned char>(original[1]));
  ASSERT_LT(header_end, original.size());
  const std::string alphabet = "0123456789-+.eE,:[]{}\" \\u\x01\xff";

  const std::string path = dir.file("mutant.safetensors");
  int opened = 0, refused = 0;
  for (std::uint64_t iteration = 0; iteration < 4000; ++iteration) {
    Rng rng(1000 + iteration);
    std::string bytes = original;
    const std::uint64_t kind = rng.below(4);
    if (kind == 0) {
      bytes.resize(rng.below(bytes.size()));
    } else {
      const std::uint64_t flips = 1 + rng.below(3);
      for (std::uint64_t k = 0; k < flips; ++k) {
        // Mostly in the header, where almost every byte matters; JSON-ish bytes reach deeper
        // checks; flips in the data must leave the file readable.
        const std::size_t at = rng.below(4) == 0 ? rng.below(bytes.size()) : rng.below(header_end);
        bytes[at] = kind == 1 ? static_cast<char>(rng.below(256))
                    : kind == 2 ? alphabet[rng.below(alphabet.size())]
                                : static_cast<char>(bytes[at] ^ (1 << rng.below(8)));
      }
    }
    // Removed rather than truncated: ext4 flushes a file truncated and rewritten to disk on
    // close (auto_da_alloc), which would make this loop wait on the disk.
    std::filesystem::remove(path);
    write_bytes(path, bytes);
    try {
      const SafetensorsFile f = SafetensorsFile::open(path);
      for (const auto& e : f.entries()) {
        ASSERT_LE(e.begin, e.end);
        ASSERT_LE(e.end, bytes.size());
        ASSERT_GE(e.begin, f.data_begin());
        const Tensor t = f.tensor(e.name);
        ASSERT_EQ(t.nbytes(), e.end - e.begin);
        ASSERT_EQ(tensor_bytes(t), bytes.substr(e.begin, e.end - e.begin));
        ASSERT_EQ(f.tensor_as(e.name, DType::f32).numel(), t.numel());
      }
      ++opened;
    } catch (const Error&) {
      ++refused;
    } catch (const std::exception& e) {
      FAIL() << "iteration " << iteration << ": not an orion::Error: " << e.what();
    }
  }
  // Both outcomes occur, so the loop does exercise the validation and the reading.
  EXPECT_GT(opened, 50);
  EXPECT_GT(refused, 1000);
}

TEST(SafetensorsWriter, RefusedInputsLeaveTheExistingFileIntact) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  write_safetensors(path, {{"a", Tensor::scalar(1.0f)}, {"b", Tensor::scalar(2.0f)}}, {{"v", "1"}});
  const std::string before = read_bytes(path);
  const std::vector<std::string> listing = {"model.safetensors"};
  ASSERT_EQ(dir.list(), listing);

  struct Refused {
    std::vector<std::pair<std::string, Tensor>> tensors;
    std::map<std::string, std::string> metadata;
    std::vector<std::string> expect;
  };
  const Tensor one = Tensor::scalar(3.0f);
  const std::vector<Refused> cases = {
      {{{"a", one}, {"c", one}, {"a", Tensor(DType::i8, {2})}}, {}, {"duplicate tensor 'a'"}},
      {{{"a", one}, {"", one}}, {}, {"empty name"}},
      {{{"a\nb", one}}, {}, {"tensor name 'a\\x0ab'", "control character"}},
      {{{"a\x7f", one}}, {}, {"control character"}},
      {{{"a\xc2\x85", one}}, {}, {"'a\\xc2\\x85'", "control character"}},
      {{{"a\xff", one}}, {}, {"'a\\xff'", "not valid UTF-8"}},
      {{{"\xc0\xaf", one}}, {}, {"not valid UTF-8"}},
      {{{"__metadata__", one}}, {}, {"__metadata__", "reserved"}},
      {{{"a", one}, {"undefined", Tensor()}}, {}, {"tensor 'undefined' is undefined"}},
      {{{"a", one}}, {{"key", "bad \xed\xa0\x80 surrogate"}}, {"metadata key 'key'", "not valid UTF-8"}},
  };
  for (const Refused& c : cases) {
    SCOPED_TRACE(c.expect.front());
    std::vector<std::string> parts = c.expect;
    parts.push_back(path + ": ");
    expect_error([&] { write_safetensors(path, c.tensors, c.metadata); }, parts);
    EXPECT_EQ(read_bytes(path), before);
    EXPECT_EQ(dir.list(), listing);  // no temporary file left behind
  }
  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.tensor("b").to_floats(), std::vector<float>{2.0f});

  // A folder that does not exist: the error names the path.
  const std::string nowhere = dir.file("no/such/folder/model.safetensors");
  expect_error([&] { write_safetensors(nowhere, {{"a", one}}); }, {nowhere});

  // And a successful write replaces the file whole.
  write_safetensors(path, {{"c", Tensor::scalar(5.0f)}});
  const SafetensorsFile g = SafetensorsFile::open(path);
  ASSERT_EQ(g.entries().size(), 1u);
  EXPECT_EQ(g.tensor("c").to_floats(), std::vector<float>{5.0f});
  EXPECT_EQ(dir.list(), listing);
}

}  // namespace
}  // namespace orion::model
