// The weight blob writer and reader against the byte layout of docs/ane/FORMATS.md. The
// expected bytes are spelled out here field by field, not produced by the writer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "compile/blob/weight_blob_reader.h"
#include "compile/blob/weight_blob_writer.h"
#include "core/error.h"
#include "core/random.h"
#include "core/testing_temp_dir.h"
#include "error_of.h"

namespace orion::compile {
namespace {

using Bytes = std::vector<std::byte>;

void put32(Bytes& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + static_cast<std::size_t>(i)] = std::byte((v >> (8 * i)) & 0xff);
}
void put64(Bytes& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + static_cast<std::size_t>(i)] = std::byte((v >> (8 * i)) & 0xff);
}

using orion::testing::error_of;

// The file docs/ane/FORMATS.md's worked example describes: one blob of 500 fp32 values (record at 64, data at
// 128..2127), then a 3-value fp16 blob whose record is at 2176.
Bytes expected_example(const std::vector<float>& f32, const std::vector<std::uint16_t>& f16) {
  Bytes b(2176 + 64 + 6, std::byte{0});
  put32(b, 0, 2);  // count
  put32(b, 4, 2);  // version
  // record 1
  put32(b, 64, 0xDEADBEEF);
  put32(b, 68, 2);  // fp32
  put64(b, 72, 2000);
  put64(b, 80, 128);
  for (std::size_t i = 0; i < f32.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &f32[i], 4);
    put32(b, 128 + 4 * i, bits);
  }
  // 2128..2175 stay zero: the gap up to the next multiple of 64
  put32(b, 2176, 0xDEADBEEF);
  put32(b, 2180, 1);  // fp16
  put64(b, 2184, 6);
  put64(b, 2192, 2240);
  for (std::size_t i = 0; i < f16.size(); ++i) {
    b[2240 + 2 * i] = std::byte(f16[i] & 0xff);
    b[2241 + 2 * i] = std::byte(f16[i] >> 8);
  }
  return b;
}

TEST(WeightBlob, FormatsExampleByteForByte) {
  std::vector<float> f32(500);
  for (std::size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<float>(i) * 0.25f - 17.0f;
  const std::vector<std::uint16_t> f16 = {0x3c00, 0x8001, 0x7e05};
  WeightBlobWriter w;
  EXPECT_EQ(w.add_fp32(f32), 64u);
  EXPECT_EQ(w.add_fp16(f16), 2176u);
  EXPECT_EQ(w.count(), 2u);
  const Bytes want = expected_example(f32, f16);
  ASSERT_EQ(w.bytes().size(), want.size()) << "the file must end at the last data byte";
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(w.bytes()[i], want[i]) << "byte " << i;

  const WeightBlobReader r = WeightBlobReader::from_bytes(want, "example.bin");
  ASSERT_EQ(r.count(), 2u);
  const BlobRecord& a = r.at(64);
  EXPECT_EQ(a.dtype, BlobDType::fp32);
  EXPECT_EQ(a.data_offset, 128u);
  EXPECT_EQ(a.size, 2000u);
  EXPECT_EQ(a.element_count(), 500u);
  const BlobRecord& b = r.at(2176);
  EXPECT_EQ(b.dtype, BlobDType::fp16);
  EXPECT_EQ(b.data_offset, 2240u);
  const Tensor t = r.tensor(64, DType::f32, {500});
  for (std::size_t i = 0; i < f32.size(); ++i) ASSERT_EQ(t.data<float>()[i], f32[i]);
}

TEST(WeightBlob, EmptyWriterIsAValidFile) {
  WeightBlobWriter w;
  Bytes want(64, std::byte{0});
  put32(want, 4, 2);
  EXPECT_EQ(w.bytes(), want);
  EXPECT_EQ(WeightBlobReader::from_bytes(w.bytes(), "empty").count(), 0u);
}

TEST(WeightBlob, SubBytePacking) {
  const std::vector<std::int32_t> v = {1, 2, 3, 4, 5};
  const PackedBits p = pack_bits(v, 4);
  EXPECT_EQ(p.bytes, (Bytes{std::byte{0x21}, std::byte{0x43}, std::byte{0x05}}));
  EXPECT_EQ(p.unused_bits, 4u);

  WeightBlobWriter w;
  const std::uint64_t at = w.add_packed(BlobDType::uint4, v);
  EXPECT_EQ(at, 64u);
  const Bytes& f = w.bytes();
  ASSERT_EQ(f.size(), 131u);
  EXPECT_EQ(f[68], std::byte{11});  // uint4
  EXPECT_EQ(f[72], std::byte{3});   // size
  EXPECT_EQ(f[88], std::byte{4});   // unused bits
  EXPECT_EQ(f[128], std::byte{0x21});
  EXPECT_EQ(f[130], std::byte{0x05});

  // uint3 crosses byte boundaries: 0b111, 0b000, 0b101 -> bits 101 000 111 = 0x47, 0x01.
  const PackedBits q = pack_bits(std::vector<std::int32_t>{7, 0, 5}, 3);
  EXPECT_EQ(q.bytes, (Bytes{std::byte{0x47}, std::byte{0x01}}));
  EXPECT_EQ(q.unused_bits, 7u);
  // int4 keeps two's complement in its four bits.
  EXPECT_EQ(pack_bits(std::vector<std::int32_t>{-1, -8}, 4).bytes, (Bytes{std::byte{0x8f}}));
  EXPECT_EQ(pack_bits(std::vector<std::int32_t>{-1, -8}, 4).unused_bits, 0u);

  // Every width, seeded values: unpack(pack(v)) == v and the reader counts the elements.
  Rng rng(7);
  for (BlobDType t : {BlobDType::uint1, BlobDType::uint2, BlobDType::uint3, BlobDType::uint4, BlobDType::uint6}) {
    const int bits = blob_dtype_bits(t);
    for (std::size_t n = 1; n < 40; ++n) {
      std::vector<std::int32_t> vals(n);
      for (auto& x : vals) x = static_cast<std::int32_t>(rng.below(1u << bits));
      WeightBlobWriter ww;
      ww.add_packed(t, vals);
      const WeightBlobReader rr = WeightBlobReader::from_bytes(ww.bytes(), "packed");
      const BlobRecord& rec = rr.at(64);
      ASSERT_EQ(rec.element_count(), n) << blob_dtype_name(t);
      ASSERT_EQ(rec.size, (n * static_cast<std::size_t>(bits) + 7) / 8);
      const auto back = unpack_bits(rec.data, bits, n);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], static_cast<std::uint32_t>(vals[i]));
    }
  }
}

// int4 and uint4 blobs, the forms 4-bit weights take: int4 two's complement nibbles low nibble
// first, read back sign-extended one per byte; values outside a type's range are refused.
TEST(WeightBlob, FourBitBlobsReadBackAsTensors) {
  const std::vector<std::int32_t> s = {-8, -1, 0, 7, 3};
  WeightBlobWriter w;
  EXPECT_EQ(w.add_packed(BlobDType::int4, s), 64u);
  const std::uint64_t u_at = w.add_packed(BlobDType::uint4, std::vector<std::int32_t>{15, 0, 9, 1});
  const Bytes& f = w.bytes();
  EXPECT_EQ(f[68], std::byte{8});  // int4
  EXPECT_EQ(f[128], std::byte{0xf8});
  EXPECT_EQ(f[129], std::byte{0x70});
  EXPECT_EQ(f[130], std::byte{0x03});
  EXPECT_EQ(f[88], std::byte{4});  // unused bits
  const WeightBlobReader r = WeightBlobReader::from_bytes(f, "w4");
  const Tensor t = r.sub_byte_tensor(64, BlobDType::int4, {5});
  ASSERT_EQ(t.dtype(), DType::i8);
  for (std::size_t i = 0; i < s.size(); ++i) EXPECT_EQ(t.data<std::int8_t>()[i], s[i]) << i;
  const Tensor u = r.sub_byte_tensor(u_at, BlobDType::uint4, {2, 2});
  ASSERT_EQ(u.dtype(), DType::u8);
  EXPECT_EQ(u.data<std::uint8_t>()[0], 15);
  EXPECT_EQ(u.data<std::uint8_t>()[2], 9);
  EXPECT_TRUE(r.warnings().empty());
  // The program's type is read, another code is a warning, as for whole-byte types.
  const Tensor as_u = r.sub_byte_tensor(64, BlobDType::uint4, {5});
  EXPECT_EQ(as_u.data<std::uint8_t>()[0], 8);
  ASSERT_EQ(r.warnings().size(), 1u);
  EXPECT_NE(r.warnings()[0].find("blob type code int4 read as uint4"), std::string::npos) << r.warnings()[0];
  // Six values need 3 bytes, the blob holds 3; seven do not fit.
  EXPECT_NE(error_of([&] { (void)r.sub_byte_tensor(64, BlobDType::int4, {7}); }).find("does not hold int4[7] (4 bytes)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)r.sub_byte_tensor(64, BlobDType::uint8, {3}); }).find("not a sub-byte type"),
            std::string::npos);

  WeightBlobWriter bad;
  EXPECT_NE(error_of([&] { bad.add_packed(BlobDType::int4, std::vector<std::int32_t>{1, 8}); })
                .find("int4 blob: value 8 at element 1 is outside [-8, 7]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { bad.add_packed(BlobDType::uint4, std::vector<std::int32_t>{-1}); }).find("outside [0, 15]"),
            std::string::npos);
  EXPECT_EQ(bad.count(), 0u);
}

TEST(WeightBlob, Fp16BitPatternsPreserved) {
  // +0, -0, smallest subnormal, largest finite, inf, -inf, a quiet NaN with payload, a
  // signalling-looking NaN.
  const std::vector<std::uint16_t> h = {0x0000, 0x8000, 0x0001, 0x7bff, 0x7c00, 0xfc00, 0x7e2a, 0x7c01};
  WeightBlobWriter w;
  w.add_fp16(h);
  const WeightBlobReader r = WeightBlobReader::from_bytes(w.bytes(), "h");
  const Tensor t = r.tensor(64, DType::f16, {2, 4});
  for (std::size_t i = 0; i < h.size(); ++i) EXPECT_EQ(t.data<std::uint16_t>()[i], h[i]) << i;
}

TEST(WeightBlob, WriterRefusesBadBlobs) {
  WeightBlobWriter w;
  EXPECT_NE(error_of([&] { w.add(BlobDType::fp16, {}); }).find("empty"), std::string::npos);
  EXPECT_NE(error_of([&] { w.add_fp16({}); }).find("zero-length"), std::string::npos);
  const Bytes three(3, std::byte{1});
  EXPECT_NE(error_of([&] { w.add(BlobDType::fp16, three); }).find("not whole elements"), std::string::npos);
  EXPECT_NE(error_of([&] { w.add(BlobDType::uint8, three, 2); }).find("sub-byte"), std::string::npos);
  // 3 bytes of uint3 hold 8 values exactly; 1 unused bit would leave 23 bits.
  EXPECT_NE(error_of([&] { w.add(BlobDType::uint3, three, 1); }).find("unused bits"), std::string::npos);
  EXPECT_EQ(w.count(), 0u);
  EXPECT_EQ(w.bytes().size(), 64u);
}

// The stream writes the file the writer makes, byte for byte, from data given in pieces; what
// it is given out of order or short is an error, and the target is left alone.
TEST(WeightBlob, StreamWritesTheWritersBytes) {
  testing_util::TempDir dir;
  const std::vector<std::uint16_t> a = {1, 2, 3, 4, 5};
  const std::vector<float> b = {0.5f, -2.0f, 1e30f};
  WeightBlobWriter w;
  const std::uint64_t at_a = w.add_fp16(a), at_b = w.add_fp32(b);
  WeightBlobStream s(dir.file("s.bin"), 2);
  EXPECT_EQ(s.begin(BlobDType::fp16, a.size() * 2), at_a);
  const auto a_bytes = std::as_bytes(std::span(a));
  s.write(a_bytes.first(4));
  s.write(a_bytes.subspan(4));
  EXPECT_EQ(s.begin(BlobDType::fp32, b.size() * 4), at_b);
  s.write(std::as_bytes(std::span(b)));
  s.commit();
  const WeightBlobReader r = WeightBlobReader::open(dir.file("s.bin"));
  EXPECT_EQ(r.tensor(at_b, DType::f32, {3}).to_floats(), b);
  std::ifstream in(dir.file("s.bin"), std::ios::binary);
  const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(got.size(), w.bytes().size());
  EXPECT_EQ(std::memcmp(got.data(), w.bytes().data(), got.size()), 0);

  WeightBlobStream t(dir.file("t.bin"), 1);
  t.begin(BlobDType::fp16, 4);
  EXPECT_NE(error_of([&] { t.begin(BlobDType::fp16, 4); }).find("before the last one's 4 bytes"), std::string::npos);
  EXPECT_NE(error_of([&] { t.write(Bytes(6)); }).find("given 6 bytes where 4 were left"), std::string::npos);
  t.write(Bytes(2));
  EXPECT_NE(error_of([&] { t.commit(); }).find("2 bytes of the last missing"), std::string::npos);
  EXPECT_NE(error_of([&] { WeightBlobStream u(dir.file("u.bin"), 0); u.begin(BlobDType::fp16, 2); })
                .find("more than the 0 blobs declared"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.bin")));
}

TEST(WeightBlob, WritesAtomicallyAndReadsTheMappedFile) {
  testing_util::TempDir dir;
  WeightBlobWriter w;
  const std::vector<std::uint16_t> h = {1, 2, 3, 4, 5};
  w.add_fp16(h);
  const std::uint64_t second = w.add_fp16(h);
  w.write(dir.file("weight.bin"));
  EXPECT_EQ(dir.list(), std::vector<std::string>{"weight.bin"});
  const WeightBlobReader r = WeightBlobReader::open(dir.file("weight.bin"));
  EXPECT_EQ(r.name(), dir.file("weight.bin"));
  EXPECT_EQ(second, 192u);  // 64 + 64 + 10 -> 138, aligned up
  EXPECT_EQ(r.tensor(second, DType::f16, {5}).data<std::uint16_t>()[4], 5);
  // The tensor keeps the mapping alive after the reader is gone.
  Tensor kept;
  {
    const WeightBlobReader r2 = WeightBlobReader::open(dir.file("weight.bin"));
    kept = r2.tensor(64, DType::f16, {1, 5});
  }
  EXPECT_EQ(kept.data<std::uint16_t>()[2], 3);
}

// A valid two-blob file to corrupt.
Bytes valid_file() {
  WeightBlobWriter w;
  w.add_fp16(std::vector<std::uint16_t>(37, 0x3c00));
  w.add_fp32(std::vector<float>(20, 1.5f));
  w.add_packed(BlobDType::uint4, std::vector<std::int32_t>{1, 2, 3});
  return w.bytes();
}

TEST(WeightBlob, ReaderErrorsNameTheFileAndTheByte) {
  const Bytes good = valid_file();
  ASSERT_EQ(WeightBlobReader::from_bytes(good, "w.bin").count(), 3u);
  auto err = [](Bytes b) { return error_of([&] { WeightBlobReader::from_bytes(b, "w.bin"); }); };
  {
    Bytes b = good;
    put32(b, 4, 1);
    EXPECT_EQ(err(b), "w.bin: at byte 4: blob storage version 1, expected 2");
  }
  {
    Bytes b = good;
    b[64] = std::byte{0xEE};
    EXPECT_EQ(err(b), "w.bin: at byte 64: metadata record has sentinel 0xDEADBEEE, expected 0xDEADBEEF");
  }
  {
    Bytes b = good;
    put32(b, 68, 18);
    EXPECT_EQ(err(b), "w.bin: at byte 68: unknown blob data type code 18 (known: 1 to 17)");
    put32(b, 68, 0);
    EXPECT_EQ(err(b), "w.bin: at byte 68: unknown blob data type code 0 (known: 1 to 17)");
  }
  // What files that ran on the ANE got wrong is tolerated, with a warning.
  {
    Bytes b = good;
    put64(b, 80, 0);  // no data offset: the data follows the record
    const WeightBlobReader r = WeightBlobReader::from_bytes(b, "w.bin");
    EXPECT_EQ(r.count(), 3u);
    EXPECT_EQ(r.tensor(64, DType::f16, {37}).to_floats()[0], 1.0f);
    ASSERT_EQ(r.warnings().size(), 1u);
    EXPECT_EQ(r.warnings()[0].rfind("w.bin: at byte 80: the record gives no data offset", 0), 0u) << r.warnings()[0];
  }
  {
    Bytes b = good;
    put64(b, 72, 0);  // no size: the program's type gives it, and the walk stops there
    const WeightBlobReader r = WeightBlobReader::from_bytes(b, "w.bin");
    EXPECT_EQ(r.count(), 0u);
    EXPECT_EQ(r.tensor(64, DType::f16, {37}).to_floats()[36], 1.0f);
    EXPECT_EQ(r.tensor(64 + 64 + 128, DType::f32, {20}).to_floats()[0], 1.5f);  // found by its offset
    EXPECT_EQ(r.warnings().size(), 2u);
  }
  {
    Bytes b = good;
    put32(b, 0, 1);  // a count of 1 for three blobs
    const WeightBlobReader r = WeightBlobReader::from_bytes(b, "w.bin");
    EXPECT_EQ(r.count(), 3u);
    ASSERT_EQ(r.warnings().size(), 1u);
    EXPECT_EQ(r.warnings()[0], "w.bin: at byte 0: the header counts 1 blobs, the file holds 3 (files written so ran on the ANE)");
  }
  {
    // A size past the end of the file stops the walk; the program's read takes its 74 bytes.
    Bytes b = good;
    put64(b, 72, ~std::uint64_t{0} - 7);
    const WeightBlobReader r = WeightBlobReader::from_bytes(b, "w.bin");
    EXPECT_EQ(r.count(), 0u);
    ASSERT_EQ(r.warnings().size(), 1u);
    EXPECT_EQ(r.warnings()[0].rfind("w.bin: at byte 72: blob of 18446744073709551608 bytes at 128 runs past the end "
                                    "of the file (514 bytes)", 0), 0u) << r.warnings()[0];
    EXPECT_EQ(r.tensor(64, DType::f16, {37}).to_floats()[36], 1.0f);
    ASSERT_EQ(r.warnings().size(), 2u);
    EXPECT_EQ(r.warnings()[1], "w.bin: at byte 72: the record gives 18446744073709551608 bytes, the program's "
                               "f16[37] needs 74: those are read, the rest ignored (files written so ran on the ANE)");
  }
  {
    Bytes b = good;
    put64(b, 72, 73);  // odd size for fp16
    EXPECT_EQ(err(b), "w.bin: at byte 72: 73 bytes are not a whole number of fp16 values");
  }
  {
    // The last blob's data cut short: a reader cannot tell it from a size larger than the data
    // until a program says how many bytes it reads.
    Bytes b = good;
    b.resize(b.size() - 1);
    const WeightBlobReader r = WeightBlobReader::from_bytes(b, "w.bin");
    EXPECT_EQ(r.count(), 2u);
    ASSERT_EQ(r.warnings().size(), 1u);
    EXPECT_EQ(r.warnings()[0].rfind("w.bin: at byte 456: blob of 2 bytes at 512 runs past the end of the file (513 bytes)", 0),
              0u) << r.warnings()[0];
    EXPECT_EQ(error_of([&] { r.tensor(448, DType::u8, {2}); }),
              "w.bin: at byte 456: u8[2] (2 bytes) at 512 runs past the end of the file (513 bytes)");
    EXPECT_EQ(r.tensor(448, DType::u8, {1}).data<std::uint8_t>()[0], 0x21);  // uint4 1, 2 packed
  }
  EXPECT_EQ(err(Bytes(10, std::byte{0})),
            "w.bin: at byte 0: the file has 10 bytes, fewer than the 64-byte header of a weight blob file");
  // Reserved fields are ignored, as Apple's reader ignores them.
  {
    Bytes b = good;
    put64(b, 8, 0x1234);
    put64(b, 64 + 40, 0x5678);
    EXPECT_EQ(WeightBlobReader::from_bytes(b, "w.bin").count(), 3u);
  }
  // Lookups by offset.
  const WeightBlobReader r = WeightBlobReader::from_bytes(good, "w.bin");
  EXPECT_EQ(error_of([&] { r.at(0); }), "w.bin: at byte 0: no blob record starts here");
  EXPECT_EQ(error_of([&] { r.at(128); }),
            "w.bin: at byte 128: no blob record starts here (that is where a blob's data starts: "
            "BLOBFILE names its record, 64 bytes before)");
  // Another type than the record's is read as the program's type, if the record's size holds
  // it; a size larger than the tensor is a warning, and the tensor's bytes are read.
  EXPECT_EQ(error_of([&] { r.tensor(64, DType::f32, {37}); }),
            "w.bin: at byte 64: blob of 74 bytes does not hold f32[37] (148 bytes)");
  EXPECT_EQ(r.tensor(64, DType::f16, {36}).to_floats()[35], 1.0f);
  ASSERT_FALSE(r.warnings().empty());
  EXPECT_EQ(r.warnings().back(), "w.bin: at byte 72: the record gives 74 bytes, the program's f16[36] needs 72: those "
                             "are read, the rest ignored (files written so ran on the ANE)");
}

// A file as a public benchmark's writer makes it (maderix/ANE ane_int8_bench.m,
// buildWeightBlobInt8): header count 1, int8 data under type code 1 (fp16), no data offset, and
// one fixed size in every record, here twice the data. Records are 64 + 256 bytes apart.
Bytes fixed_size_file(std::uint64_t size_field) {
  Bytes b(64 + 3 * 320, std::byte{0});
  put32(b, 0, 1);
  put32(b, 4, 2);
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t rec = 64 + 320 * i;
    put32(b, rec, 0xDEADBEEF);
    put32(b, rec + 4, 1);
    put64(b, rec + 8, size_field);
    // Values -100..99, never the sentinel's bytes: where the walk lands in data it finds none.
    for (std::size_t j = 0; j < 256; ++j)
      b[rec + 64 + j] = std::byte(static_cast<std::uint8_t>(static_cast<int>((i * 31 + j * 7) % 200) - 100));
  }
  return b;
}

TEST(WeightBlob, ASizeLargerThanTheDataIsReadAtTheProgramsSize) {
  const WeightBlobReader r = WeightBlobReader::from_bytes(fixed_size_file(512), "w.bin");
  // The walk takes the first record (its 512 bytes lie within the file), then stops where they
  // end, at 640, inside the second record's data.
  ASSERT_EQ(r.count(), 1u);
  EXPECT_EQ(r.records()[0].size, 512u);
  EXPECT_NE(std::find(r.warnings().begin(), r.warnings().end(),
                      "w.bin: at byte 72: no blob record starts at 640, where the record's size of 512 bytes ends: "
                      "the blobs after it are found by the program's offsets"),
            r.warnings().end());
  // Each record the program names gives its first 256 bytes, the last one's too, though its
  // size runs past the end of the file (its data is 768..1023 of 1024 bytes).
  for (std::size_t i = 0; i < 3; ++i) {
    const std::uint64_t rec = 64 + 320 * i;
    const Tensor t = r.tensor(rec, DType::i8, {16, 16, 1, 1});
    int wrong = 0;
    for (std::size_t j = 0; j < 256; ++j)
      wrong += t.data<std::int8_t>()[j] != static_cast<int>((i * 31 + j * 7) % 200) - 100;
    EXPECT_EQ(wrong, 0) << "record at " << rec;
    const std::string size_warning = "w.bin: at byte " + std::to_string(rec + 8) +
                                     ": the record gives 512 bytes, the program's i8[16, 16, 1, 1] needs 256: those "
                                     "are read, the rest ignored (files written so ran on the ANE)";
    EXPECT_NE(std::find(r.warnings().begin(), r.warnings().end(), size_warning), r.warnings().end()) << size_warning;
  }
  // A size smaller than the tensor stays an error, and so do bytes past the end of the file.
  const WeightBlobReader small = WeightBlobReader::from_bytes(fixed_size_file(254), "w.bin");
  EXPECT_EQ(error_of([&] { small.tensor(384, DType::i8, {16, 16, 1, 1}); }),
            "w.bin: at byte 384: blob of 254 bytes does not hold i8[16, 16, 1, 1] (256 bytes)");
  Bytes cut = fixed_size_file(512);
  cut.resize(cut.size() - 1);
  const WeightBlobReader short_file = WeightBlobReader::from_bytes(cut, "w.bin");
  EXPECT_EQ(short_file.tensor(384, DType::i8, {16, 16, 1, 1}).data<std::int8_t>()[255], (31 + 255 * 7) % 200 - 100);
  EXPECT_EQ(error_of([&] { short_file.tensor(704, DType::i8, {16, 16, 1, 1}); }),
            "w.bin: at byte 712: i8[16, 16, 1, 1] (256 bytes) at 768 runs past the end of the file (1023 bytes)");
}

TEST(WeightBlob, ErrorsForMissingFile) {
  testing_util::TempDir dir;
  const std::string msg = error_of([&] { WeightBlobReader::open(dir.file("none.bin")); });
  EXPECT_NE(msg.find(dir.file("none.bin") + ": cannot open"), std::string::npos) << msg;
}

// Thousands of truncations and byte corruptions: each gives a valid reader or an orion::Error,
// and a valid reader's records all lie inside the file (touching every data byte lets the
// sanitizers see an out-of-bounds read).
TEST(WeightBlob, CorruptionsGiveErrorsNotCrashes) {
  const Bytes good = valid_file();
  Rng rng(2024);
  int errors = 0, accepted = 0;
  for (int iter = 0; iter < 6000; ++iter) {
    Bytes b = good;
    switch (iter % 3) {
      case 0: b.resize(static_cast<std::size_t>(rng.below(b.size()))); break;
      case 1: {
        const int flips = 1 + static_cast<int>(rng.below(4));
        for (int k = 0; k < flips; ++k)
          b[static_cast<std::size_t>(rng.below(b.size()))] = std::byte(rng.below(256));
        break;
      }
      default: {
        // Aim at the header and record fields, where corruption matters most.
        const std::size_t records[] = {0, 64, 256, 448};
        const std::size_t at = records[rng.below(4)] + static_cast<std::size_t>(rng.below(32));
        if (at < b.size()) b[at] = std::byte(rng.below(256));
        if (rng.below(2)) b.resize(static_cast<std::size_t>(rng.below(b.size() + 1)));
      }
    }
    try {
      const WeightBlobReader r = WeightBlobReader::from_bytes(b, "fuzz.bin");
      unsigned sum = 0;
      for (const BlobRecord& rec : r.records()) {
        ASSERT_LE(rec.data_offset + rec.size, b.size());
        for (std::byte x : rec.data) sum += std::to_integer<unsigned>(x);
        EXPECT_EQ(&r.at(rec.record_offset), &rec);
      }
      // The reads a program of this file makes, where the checks the walk leaves to them are
      // made: every byte of each tensor is touched, for the sanitizers to see.
      for (const Tensor& t : {r.tensor(64, DType::f16, {37}), r.tensor(256, DType::f32, {20}), r.tensor(448, DType::u8, {2})})
        for (std::size_t k = 0; k < t.nbytes(); ++k) sum += std::to_integer<unsigned>(t.raw()[k]);
      (void)sum;
      ++accepted;
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 3000);
  EXPECT_GT(accepted, 100);  // data-only corruptions leave a valid file
}

}  // namespace
}  // namespace orion::compile
