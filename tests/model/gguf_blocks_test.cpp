// ggml's blocks dequantised (model/formats/gguf_blocks.h): one block of each type built by hand
// from the layout as ggml-quants.c's block structs and dequantize_row_* describe it, each value
// written out per index (not by the reader's loops); then every tensor of files of each type
// that tests/reference/make_gguf.py wrote against numpy's dequantising of the same file
// (tests/reference/gguf_numpy.py, written from ggml's code, not from Orion's).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include "core/half.h"
#include "core/npy_file.h"
#include "core/testing_temp_dir.h"
#include "model/formats/gguf.h"
#include "model/formats/gguf_blocks.h"
#include "model/gguf_test_util.h"

namespace orion::model {
namespace {

using Bytes = std::vector<std::byte>;

void put_f16(Bytes& b, std::size_t at, float v) {
  const std::uint16_t h = float_to_half(v);
  std::memcpy(b.data() + at, &h, 2);
}

std::vector<float> dequantize(GgmlType t, const Bytes& b, std::size_t values) {
  std::vector<float> out(values);
  dequantize_blocks(t, b, out);
  return out;
}

TEST(GgufBlocks, Q4_0LowNibblesAreTheFirstHalfOfTheBlock) {
  Bytes b(18);
  put_f16(b, 0, 0.5f);
  for (int j = 0; j < 16; ++j) b[2 + static_cast<std::size_t>(j)] = std::byte(static_cast<unsigned>(j | (15 - j) << 4));
  const std::vector<float> y = dequantize(GgmlType::q4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[static_cast<std::size_t>(j)], static_cast<float>(j - 8) * 0.5f) << j;
    EXPECT_EQ(y[static_cast<std::size_t>(j + 16)], static_cast<float>(15 - j - 8) * 0.5f) << j + 16;
  }
}

TEST(GgufBlocks, Q4_1AddsItsMinimum) {
  Bytes b(20);
  put_f16(b, 0, 0.5f);
  put_f16(b, 2, -1.0f);
  for (int j = 0; j < 16; ++j) b[4 + static_cast<std::size_t>(j)] = std::byte(static_cast<unsigned>(j | (15 - j) << 4));
  const std::vector<float> y = dequantize(GgmlType::q4_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[static_cast<std::size_t>(j)], static_cast<float>(j) * 0.5f - 1.0f);
    EXPECT_EQ(y[static_cast<std::size_t>(j + 16)], static_cast<float>(15 - j) * 0.5f - 1.0f);
  }
}

TEST(GgufBlocks, Q8_0IsSignedBytesTimesTheScale) {
  Bytes b(2 * 34);
  for (int blk = 0; blk < 2; ++blk) {
    put_f16(b, static_cast<std::size_t>(blk * 34), blk ? -0.25f : 0.25f);
    for (int j = 0; j < 32; ++j) b[static_cast<std::size_t>(blk * 34 + 2 + j)] = std::byte(static_cast<unsigned char>(static_cast<std::int8_t>(j - 16)));
  }
  const std::vector<float> y = dequantize(GgmlType::q8_0, b, 64);
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(y[static_cast<std::size_t>(j)], static_cast<float>(j - 16) * 0.25f);
    EXPECT_EQ(y[static_cast<std::size_t>(32 + j)], static_cast<float>(j - 16) * -0.25f);
  }
}

// The 12 bytes of 8 six-bit scales and mins as ggml describes them: bytes 0-3 the scales of
// sub-blocks 0-3 in their low 6 bits, bytes 4-7 the mins of 0-3; bytes 8-11 the low 4 bits of
// the scales (low nibble) and mins (high nibble) of 4-7, whose top 2 bits are the top bits of
// bytes 0-3 (scales) and 4-7 (mins).
void put_k_scales(Bytes& b, std::size_t at, const int sc[8], const int mn[8]) {
  for (int j = 0; j < 4; ++j) {
    b[at + static_cast<std::size_t>(j)] = std::byte(static_cast<unsigned>(sc[j] | (sc[j + 4] >> 4) << 6));
    b[at + 4 + static_cast<std::size_t>(j)] = std::byte(static_cast<unsigned>(mn[j] | (mn[j + 4] >> 4) << 6));
    b[at + 8 + static_cast<std::size_t>(j)] = std::byte(static_cast<unsigned>((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4));
  }
}

constexpr int kScales[8] = {1, 2, 3, 4, 17, 34, 51, 63};
constexpr int kMins[8] = {0, 1, 2, 3, 20, 40, 60, 5};

TEST(GgufBlocks, Q4_KSubBlocksOf32WithSixBitScalesAndMins) {
  Bytes b(144);
  put_f16(b, 0, 1.0f);
  put_f16(b, 2, 0.5f);
  put_k_scales(b, 4, kScales, kMins);
  // Value v: the v/64-th 32 bytes, byte v % 32, the low nibble for v % 64 < 32.
  auto q = [](int v) { return (v * 7) % 16; };
  for (int v = 0; v < 256; ++v) {
    auto& byte = b[16 + static_cast<std::size_t>(v / 64 * 32 + v % 32)];
    byte |= std::byte(static_cast<unsigned>(v % 64 < 32 ? q(v) : q(v) << 4));
  }
  const std::vector<float> y = dequantize(GgmlType::q4_k, b, 256);
  for (int v = 0; v < 256; ++v)
    EXPECT_EQ(y[static_cast<std::size_t>(v)], 1.0f * static_cast<float>(kScales[v / 32] * q(v)) - 0.5f * static_cast<float>(kMins[v / 32])) << v;
}

TEST(GgufBlocks, Q5_KTakesItsFifthBitsFromQh) {
  Bytes b(176);
  put_f16(b, 0, 0.5f);
  put_f16(b, 2, 0.25f);
  put_k_scales(b, 4, kScales, kMins);
  auto q = [](int v) { return (v * 11) % 32; };
  for (int v = 0; v < 256; ++v) {
    // The low 4 bits as Q4_K's; the fifth in qh[v % 32], bit 2 * (v / 64) (+1 for the high half).
    auto& byte = b[48 + static_cast<std::size_t>(v / 64 * 32 + v % 32)];
    byte |= std::byte(static_cast<unsigned>(v % 64 < 32 ? q(v) & 15 : (q(v) & 15) << 4));
    if (q(v) >= 16) b[16 + static_cast<std::size_t>(v % 32)] |= std::byte(static_cast<unsigned>(1 << (2 * (v / 64) + (v % 64 >= 32))));
  }
  const std::vector<float> y = dequantize(GgmlType::q5_k, b, 256);
  for (int v = 0; v < 256; ++v)
    EXPECT_EQ(y[static_cast<std::size_t>(v)], 0.5f * static_cast<float>(kScales[v / 32] * q(v)) - 0.25f * static_cast<float>(kMins[v / 32])) << v;
}

TEST(GgufBlocks, Q6_KQuartersOfEachHalfAndAScalePer16) {
  Bytes b(210);
  auto q = [](int v) { return (v * 13) % 64; };
  auto scale = [](int s) { return s - 8 + (s >= 8); };  // -8..-1, 1..8: no zero scale
  for (int s = 0; s < 16; ++s) b[192 + static_cast<std::size_t>(s)] = std::byte(static_cast<unsigned char>(static_cast<std::int8_t>(scale(s))));
  put_f16(b, 208, 0.25f);
  for (int v = 0; v < 256; ++v) {
    // Half n = v / 128; quarter k and index l within it; the low 4 bits in ql[64n + 32(k % 2) + l]
    // (low nibble for k < 2), the high 2 in bits 2k, 2k+1 of qh[32n + l].
    const int n = v / 128, k = v % 128 / 32, l = v % 32;
    b[static_cast<std::size_t>(64 * n + 32 * (k % 2) + l)] |= std::byte(static_cast<unsigned>(k < 2 ? q(v) & 15 : (q(v) & 15) << 4));
    b[128 + static_cast<std::size_t>(32 * n + l)] |= std::byte(static_cast<unsigned>((q(v) >> 4) << (2 * k)));
  }
  const std::vector<float> y = dequantize(GgmlType::q6_k, b, 256);
  for (int v = 0; v < 256; ++v) {
    const int s = v / 128 * 8 + v % 128 / 32 * 2 + v % 32 / 16;
    EXPECT_EQ(y[static_cast<std::size_t>(v)], 0.25f * static_cast<float>(scale(s)) * static_cast<float>(q(v) - 32)) << v;
  }
}

TEST(GgufBlocks, EveryTypeOfGgmlIsKnownWithItsBlock) {
  // The sizes ggml's block structs have (ggml-common.h's static_asserts).
  const std::pair<std::uint32_t, std::pair<int, int>> want[] = {
      {0, {1, 4}},     {1, {1, 2}},     {2, {32, 18}},   {3, {32, 20}},   {6, {32, 22}},   {7, {32, 24}},
      {8, {32, 34}},   {9, {32, 36}},   {10, {256, 84}}, {11, {256, 110}}, {12, {256, 144}}, {13, {256, 176}},
      {14, {256, 210}}, {15, {256, 292}}, {30, {1, 2}},  {39, {32, 17}}};
  for (const auto& [type, block] : want) {
    const GgmlTypeInfo* info = ggml_type_info(type);
    ASSERT_NE(info, nullptr) << type;
    EXPECT_EQ(info->block_values, block.first) << info->name;
    EXPECT_EQ(info->block_bytes, block.second) << info->name;
  }
  for (std::uint32_t removed : {4u, 5u, 31u, 36u, 40u, 1000u}) EXPECT_EQ(ggml_type_info(removed), nullptr) << removed;
}

// Every tensor of a file (its matrices, embedding and head each of a given type; norms F32) of a
// model of width 256 (the K-quants' rows) against numpy's dequantising of the same file.
void expect_tensors_match_numpy(const std::string& matrices, const std::string& embed, const std::string& output) {
  testing_util::TempDir tmp;
  testing::write_init_folder(tmp.file("m"), testing::small_gguf_config("qwen3", 256, 64, 512), 3);
  ASSERT_FALSE(
      testing::make_gguf(tmp.file("m"), tmp.file("m.gguf"), {"--matrices", matrices, "--embed", embed, "--output", output}).empty());
  const auto r = testing::run_command(std::string(testing::kGgufPython) + " " + testing::reference_script("gguf_numpy.py") +
                                      " " + tmp.file("m.gguf") + " " + tmp.file("npy"));
  ASSERT_EQ(r.status, 0) << r.output;
  const GgufFile g = GgufFile::open(tmp.file("m.gguf"));
  std::set<std::string> types;
  for (const GgufTensorInfo& t : g.tensors()) {
    const Tensor mine = g.dequantized(t);
    const Tensor ref = read_npy(tmp.file("npy/" + t.name + ".npy"));
    ASSERT_EQ(mine.shape(), ref.shape()) << t.name;
    double worst = 0, scale = 0;
    for (std::int64_t i = 0; i < mine.numel(); ++i) {
      worst = std::max(worst, static_cast<double>(std::abs(mine.data<float>()[i] - ref.data<float>()[i])));
      scale = std::max(scale, static_cast<double>(std::abs(ref.data<float>()[i])));
    }
    // Both compute in f32 in ggml's order; a fused multiply-add may round the last bit apart.
    EXPECT_LE(worst, 1e-6 * scale) << t.name << " (" << t.type_info().name << ")";
    types.insert(std::string(t.type_info().name));
  }
  EXPECT_EQ(types, (std::set<std::string>{"F32", matrices, embed, output}));
}

TEST(GgufBlocks, KQuantTensorsMatchNumpy) { expect_tensors_match_numpy("Q4_K", "Q6_K", "Q5_K"); }
TEST(GgufBlocks, BlocksOf32TensorsMatchNumpy) { expect_tensors_match_numpy("Q8_0", "Q4_1", "Q4_0"); }
TEST(GgufBlocks, SixteenBitTensorsMatchNumpy) { expect_tensors_match_numpy("F16", "BF16", "BF16"); }

}  // namespace
}  // namespace orion::model
