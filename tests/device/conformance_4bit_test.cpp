// 4-bit weights in the forms the public record shows: constexpr_lut_to_dense as Core ML writes
// it for Anemll's models (iOS18, a LUT per 8 output channels, the op's arguments inline BLOBFILE
// literals) and in its iOS16 form (one LUT, packed uint8 indices, the arguments in the attribute
// block, one file per tensor) on the M1/M2 target; and constexpr_blockwise_shift_scale over int4
// data, which ane-sim runs with the record's warning (ANE043). The weight files are written here
// byte by byte, and every output is checked against naive loops.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "compile/ane/ane_validator.h"
#include "compile/mil/mil_to_ir.h"
#include "conformance_test_util.h"
#include "core/testing_temp_dir.h"

namespace orion::device {
namespace {

using namespace conformance;
using testing_util::TempDir;

constexpr std::size_t kC = 64, kO = 64, kS = 384;  // 64 * 384 * 2 = 49,152 bytes

// A blob file of records appended one by one (type code, data), each record's offset kept.
struct HandBlob {
  std::vector<std::byte> b = std::vector<std::byte>(64);
  HandBlob() {
    put_le(b, 4, 2, 4);  // version 2
  }
  std::size_t add(std::uint32_t code, const std::vector<std::byte>& data, std::uint32_t unused_bits = 0) {
    const std::size_t rec = (b.size() + 63) / 64 * 64;
    b.resize(rec + 64 + data.size());
    put_le(b, rec, 0xDEADBEEF, 4);
    put_le(b, rec + 4, code, 4);
    put_le(b, rec + 8, data.size(), 8);
    put_le(b, rec + 16, rec + 64, 8);
    put_le(b, rec + 24, unused_bits, 8);
    std::memcpy(b.data() + rec + 64, data.data(), data.size());
    put_le(b, 0, ++count, 4);
    return rec;
  }
  void write(const std::string& path) const { write_bytes(path, std::string(reinterpret_cast<const char*>(b.data()), b.size())); }
  std::uint32_t count = 0;
};

// Two 4-bit values a byte, the first in the low nibble.
std::vector<std::byte> nibbles(const std::vector<int>& v) {
  std::vector<std::byte> out((v.size() + 1) / 2, std::byte{0});
  for (std::size_t i = 0; i < v.size(); ++i) out[i / 2] |= std::byte((v[i] & 0xf) << (i % 2 ? 4 : 0));
  return out;
}
std::vector<std::byte> halves(const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * 2);
  for (std::size_t i = 0; i < v.size(); ++i) put_le(out, 2 * i, float_to_half(v[i]), 2);
  return out;
}

std::string conv_tail(bool ios16) {
  const auto str = [&](const std::string& s) { return ios16 ? "tensor<string, []>(\"" + s + "\")" : "string(\"" + s + "\")"; };
  const std::string i32 = ios16 ? "tensor<int32, []>" : "int32";
  const std::string str_t = ios16 ? "tensor<string, []>" : "string";
  return "        tensor<int32, [2]> st = const()[name = " + str("st") + ", val = tensor<int32, [2]>([1, 1])];\n"
         "        tensor<int32, [2]> di = const()[name = " + str("di") + ", val = tensor<int32, [2]>([1, 1])];\n"
         "        tensor<int32, [4]> pd = const()[name = " + str("pd") + ", val = tensor<int32, [4]>([0, 0, 0, 0])];\n"
         "        " + str_t + " pt = const()[name = " + str("pt") + ", val = " + str("valid") + "];\n"
         "        " + i32 + " gr = const()[name = " + str("gr") + ", val = " + i32 + "(1)];\n"
         "        tensor<fp16, [1, 64, 1, 384]> y = conv(dilations = di, groups = gr, pad = pd, pad_type = pt, strides = st, weight = w, x = x)[name = " +
         str("y") + "];\n";
}

// The conv of x by the dense weight `w` [O, C] (fp16 values), against the device's output: the
// largest error relative to 1 + |want|.
double worst_error(const std::vector<float>& w, const std::vector<float>& x, const std::vector<float>& got) {
  double worst = 0;
  for (std::size_t o = 0; o < kO; ++o)
    for (std::size_t s = 0; s < kS; ++s) {
      double want = 0;
      for (std::size_t c = 0; c < kC; ++c) want += static_cast<double>(w[o * kC + c]) * x[c * kS + s];
      worst = std::max(worst, std::abs(want - got[o * kS + s]) / (1.0 + std::abs(want)));
    }
  return worst;
}

std::vector<float> input() {
  std::vector<float> x(kC * kS);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = value_at(i, 5);
  return x;
}

int code_of(std::size_t i) { return static_cast<int>((i * 5 + i / kC) % 16); }

// The program in `dir` run on ane-sim in default and faithful mode, for the M1/M2 target or not,
// each time against the conv of the input by the dense weight `w` [O, C].
void expect_the_conv(const std::string& dir, const std::vector<float>& w, bool m1_m2 = false) {
  const std::vector<float> x = input();
  for (const bool faithful : {false, true}) {
    AneSimOptions o;
    o.faithful = faithful;
    o.target.m1_m2 = m1_m2;
    EXPECT_LT(worst_error(w, x, run_once(dir, o, {x}, kO * kS)), 2e-3) << (faithful ? "faithful" : "default");
  }
}

TEST(Conformance4Bit, GroupedLutAsCoreMlWritesIt) {
  TempDir dir;
  constexpr std::size_t kTables = 8;  // one per 8 output channels, as Anemll's LUT4 models
  std::vector<int> codes(kO * kC);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = code_of(i);
  std::vector<float> lut(kTables * 16);
  for (std::size_t i = 0; i < lut.size(); ++i) lut[i] = (static_cast<float>(i % 16) - 7.5f) / 16.0f * static_cast<float>(i / 16 + 1) / 8.0f;
  HandBlob blob;
  const std::size_t idx_at = blob.add(11, nibbles(codes));  // uint4
  const std::size_t lut_at = blob.add(1, halves(lut));
  std::filesystem::create_directories(dir.path() + "/weights");
  blob.write(dir.path() + "/weights/weight.bin");
  const std::string file = "path = string(\"@model_path/weights/weight.bin\")";
  write_bytes(dir.path() + "/model.mil",
              conformance_program("tensor<fp16, [1, 64, 1, 384]> x",
                                  "        tensor<fp16, [64, 64, 1, 1]> w = constexpr_lut_to_dense(indices = tensor<uint4, [64, 64, 1, 1]>(BLOBFILE(" + file +
                                      ", offset = uint64(" + std::to_string(idx_at) + "))), lut = tensor<fp16, [8, 1, 1, 1, 16, 1]>(BLOBFILE(" + file +
                                      ", offset = uint64(" + std::to_string(lut_at) + "))))[name = string(\"w\")];\n" + conv_tail(false),
                                  "y"));
  std::vector<float> w(kO * kC);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = half_to_float(float_to_half(lut[i / kC / (kO / kTables) * 16 + static_cast<std::size_t>(codes[i])]));
  expect_the_conv(dir.path(), w);
}

TEST(Conformance4Bit, OneLutInTheIos16FormOnTheM1Target) {
  TempDir dir;
  std::vector<int> codes(kO * kC);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = code_of(i);
  std::vector<float> lut(16);
  for (std::size_t k = 0; k < 16; ++k) lut[k] = (static_cast<float>(k) - 8.0f) / 32.0f;
  std::filesystem::create_directories(dir.path() + "/weights");
  HandBlob indices, table;  // one file per tensor, as M1 takes them (ANE039)
  indices.add(3, nibbles(codes));  // packed codes as uint8 bytes
  table.add(1, halves(lut));
  indices.write(dir.path() + "/weights/indices.bin");
  table.write(dir.path() + "/weights/lut.bin");
  const auto blobfile = [](const std::string& f) {
    return "(BLOBFILE(path = tensor<string, []>(\"@model_path/weights/" + f + "\"), offset = tensor<uint64, []>(64)))";
  };
  write_bytes(dir.path() + "/model.mil",
              "program(1.0)\n[buildInfo = dict<tensor<string, []>, tensor<string, []>>({{\"coremlc-version\", \"3505.4.1\"}})]\n{\n"
              "    func main<ios16>(tensor<fp16, [1, 64, 1, 384]> x) {\n"
              "        tensor<fp16, [64, 64, 1, 1]> w = constexpr_lut_to_dense()[indices = tensor<uint8, [2048]>" + blobfile("indices.bin") +
                  ", lut = tensor<fp16, [16]>" + blobfile("lut.bin") +
                  ", name = tensor<string, []>(\"w\"), shape = tensor<uint32, [4]>([64, 64, 1, 1])];\n" + conv_tail(true) +
                  "    } -> (y);\n}\n");
  std::vector<float> w(kO * kC);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = lut[static_cast<std::size_t>(codes[i])];
  expect_the_conv(dir.path(), w, true);
}

// int4 data with fp16 scales per 32 input channels, named consts as the int8 programs that ran
// wrote them: not seen on the ANE (ANE043), a warning; ane-sim runs it.
TEST(Conformance4Bit, Int4BlockwiseRunsWithTheRecordsWarning) {
  TempDir dir;
  std::vector<int> q(kO * kC);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = code_of(i) - 8;
  std::vector<float> scales(kO * 2);
  for (std::size_t i = 0; i < scales.size(); ++i) scales[i] = static_cast<float>(i + 1) / 1024.0f;
  HandBlob blob;
  const std::size_t q_at = blob.add(8, nibbles(q));  // int4
  const std::size_t s_at = blob.add(1, halves(scales));
  std::filesystem::create_directories(dir.path() + "/weights");
  blob.write(dir.path() + "/weights/weight.bin");
  const std::string file = "path = string(\"@model_path/weights/weight.bin\")";
  write_bytes(dir.path() + "/model.mil",
              conformance_program(
                  "tensor<fp16, [1, 64, 1, 384]> x",
                  "        tensor<int4, [64, 64, 1, 1]> wq = const()[name = string(\"wq\"), val = tensor<int4, [64, 64, 1, 1]>(BLOBFILE(" + file +
                      ", offset = uint64(" + std::to_string(q_at) + ")))];\n"
                      "        tensor<fp16, [64, 2, 1, 1]> ws = const()[name = string(\"ws\"), val = tensor<fp16, [64, 2, 1, 1]>(BLOBFILE(" + file +
                      ", offset = uint64(" + std::to_string(s_at) + ")))];\n"
                      "        tensor<fp16, [64, 64, 1, 1]> w = constexpr_blockwise_shift_scale(data = wq, scale = ws)[name = string(\"w\")];\n" +
                      conv_tail(false),
                  "y"));
  std::vector<float> w(kO * kC);
  for (std::size_t i = 0; i < w.size(); ++i)
    w[i] = half_to_float(float_to_half(half_to_float(float_to_half(scales[i / kC * 2 + i % kC / 32])) * static_cast<float>(q[i])));
  expect_the_conv(dir.path(), w);
  std::ifstream in(dir.path() + "/model.mil", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const ir::Graph g = compile::parse_mil(text, "model.mil", dir.path());
  bool warned = false;
  for (const compile::AneViolation& v : compile::check_kernel_graph(g, {})) warned = warned || (v.rule->id == "ANE043" && !v.is_error());
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace orion::device
