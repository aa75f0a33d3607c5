// The forms the public record shows running on the hardware, hand-written here from the
// projects' descriptions, run on ane-sim in default and faithful mode, each output checked
// against naive loops in this file: the refusals ane-sim used to make where the hardware ran.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "conformance_test_util.h"
#include "core/error.h"
#include "core/half.h"
#include "core/testing_temp_dir.h"
#include "device/ane_sim.h"

namespace orion::device {
namespace {

using namespace conformance;
using testing_util::TempDir;

// A weight file written byte by byte as a public benchmark's writer writes it: header count 1
// whatever the number of blobs, and records with neither a data offset nor a size.
std::vector<std::byte> sloppy_blob_file(const std::vector<std::vector<float>>& tensors) {
  std::vector<std::byte> b(64);
  put_le(b, 0, 1, 4);  // count: 1
  put_le(b, 4, 2, 4);  // version 2
  for (const auto& t : tensors) {
    const std::size_t rec = b.size();
    b.resize(rec + 64 + (t.size() * 2 + 63) / 64 * 64);
    put_le(b, rec, 0xDEADBEEF, 4);
    put_le(b, rec + 4, 1, 4);  // fp16
    for (std::size_t i = 0; i < t.size(); ++i) put_le(b, rec + 64 + 2 * i, float_to_half(t[i]), 2);
  }
  return b;
}

// concat in the named-const form (axis, interleave false) of two [1, 768, 1, 16] inputs, each in
// a 49,152-byte surface, times a per-channel weight read from a sloppy blob file.
TEST(Conformance, NamedConstConcatOfSixteenColumnInputsTimesASloppyBlob) {
  TempDir dir;
  constexpr std::size_t C = 768, W = 16;
  std::vector<float> gain(C);
  for (std::size_t c = 0; c < C; ++c) gain[c] = value_at(c, 3);
  const std::vector<std::byte> blob = sloppy_blob_file({gain});
  std::filesystem::create_directories(dir.path() + "/weights");
  write_bytes(dir.path() + "/weights/weight.bin", std::string(reinterpret_cast<const char*>(blob.data()), blob.size()));
  const std::string in = "tensor<fp16, [1, 768, 1, 16]>";
  write_bytes(dir.path() + "/model.mil",
              conformance_program(in + " a, " + in + " b",
                                  "        int32 ax = const()[name = string(\"ax\"), val = int32(3)];\n"
                                  "        bool il = const()[name = string(\"il\"), val = bool(false)];\n"
                                  "        tensor<fp16, [1, 768, 1, 32]> ab = concat(axis = ax, interleave = il, values = (a, b))[name = string(\"ab\")];\n"
                                  "        tensor<fp16, [1, 768, 1, 1]> g = const()[name = string(\"g\"), val = tensor<fp16, [1, 768, 1, 1]>(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(64)))];\n"
                                  "        tensor<fp16, [1, 768, 1, 32]> y = mul(x = ab, y = g)[name = string(\"y\")];\n",
                                  "y"));
  std::vector<float> a(C * W), b(C * W);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = value_at(i, 0), b[i] = value_at(i, 5);
  for (const bool faithful : {false, true}) {
    AneSimOptions o;
    o.faithful = faithful;
    const std::vector<float> got = run_once(dir.path(), o, {a, b}, C * 2 * W);
    int wrong = 0;
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t s = 0; s < 2 * W; ++s) {
        const float x = s < W ? a[c * W + s] : b[c * W + s - W];
        wrong += got[c * 2 * W + s] != half_to_float(float_to_half(x * gain[c]));
      }
    EXPECT_EQ(wrong, 0) << (faithful ? "faithful" : "default");
  }
}

// 4-D [1, C, H, W] I/O through a 1x1 conv, as conv benchmarks ran it.
TEST(Conformance, FourDimensionalIoThroughAConv) {
  TempDir dir;
  constexpr std::size_t C = 32, O = 32, H = 16, W = 48;  // 32 * 16 * 48 * 2 = 49,152 bytes
  std::vector<float> w(O * C);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = value_at(i, 1) / 4.0f;
  const std::vector<std::byte> blob = sloppy_blob_file({w});
  std::filesystem::create_directories(dir.path() + "/weights");
  write_bytes(dir.path() + "/weights/weight.bin", std::string(reinterpret_cast<const char*>(blob.data()), blob.size()));
  write_bytes(dir.path() + "/model.mil",
              conformance_program("tensor<fp16, [1, 32, 16, 48]> x",
                                  "        tensor<fp16, [32, 32, 1, 1]> k = const()[name = string(\"k\"), val = tensor<fp16, [32, 32, 1, 1]>(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(64)))];\n"
                                  "        tensor<int32, [2]> st = const()[name = string(\"st\"), val = tensor<int32, [2]>([1, 1])];\n"
                                  "        tensor<int32, [2]> di = const()[name = string(\"di\"), val = tensor<int32, [2]>([1, 1])];\n"
                                  "        tensor<int32, [4]> pd = const()[name = string(\"pd\"), val = tensor<int32, [4]>([0, 0, 0, 0])];\n"
                                  "        string pt = const()[name = string(\"pt\"), val = string(\"valid\")];\n"
                                  "        int32 gr = const()[name = string(\"gr\"), val = int32(1)];\n"
                                  "        tensor<fp16, [1, 32, 16, 48]> y = conv(dilations = di, groups = gr, pad = pd, pad_type = pt, strides = st, weight = k, x = x)[name = string(\"y\")];\n",
                                  "y"));
  std::vector<float> x(C * H * W);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = value_at(i, 2);
  const std::vector<float> got = run_once(dir.path(), {}, {x}, O * H * W);
  double worst = 0;
  for (std::size_t o = 0; o < O; ++o)
    for (std::size_t p = 0; p < H * W; ++p) {
      double want = 0;
      for (std::size_t c = 0; c < C; ++c) want += static_cast<double>(half_to_float(float_to_half(w[o * C + c]))) * x[c * H * W + p];
      worst = std::max(worst, std::abs(want - got[o * H * W + p]) / (1.0 + std::abs(want)));
    }
  EXPECT_LT(worst, 2e-3);  // fp16 output rounding
}

// The inline form of concat is the one the hardware refused: ane-sim refuses it by default,
// and faithful mode fails the compile without a diagnosis, as the device did.
TEST(Conformance, InlineConcatIsStillRefused) {
  TempDir dir;
  const std::string in = "tensor<fp16, [1, 768, 1, 32]>";
  write_bytes(dir.path() + "/model.mil",
              conformance_program(in + " a, " + in + " b",
                                  "        tensor<fp16, [1, 1536, 1, 32]> y = concat(axis = int32(1), values = (a, b))[name = string(\"y\")];\n",
                                  "y"));
  AneSim loud;
  try {
    loud.compile(dir.path());
    ADD_FAILURE() << "compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ANE004"), std::string::npos) << e.what();
  }
  AneSimOptions o;
  o.faithful = true;
  AneSim faithful(o);
  try {
    faithful.compile(dir.path());
    ADD_FAILURE() << "compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("without a diagnosis"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace orion::device

namespace orion::device {
namespace {

// A blob file of int8 data and fp16 scales as one int8 benchmark wrote it: the int8 record
// carries type code 1 (fp16's), and the header counts 1 blob of 2.
std::vector<std::byte> int8_blob_file(const std::vector<std::int8_t>& q, const std::vector<float>& scales,
                                      std::uint64_t* scale_at) {
  std::vector<std::byte> b(64);
  put_le(b, 0, 1, 4);
  put_le(b, 4, 2, 4);
  const auto record = [&](std::uint32_t code, std::size_t bytes) {
    const std::size_t rec = b.size();
    b.resize(rec + 64 + (bytes + 63) / 64 * 64);
    put_le(b, rec, 0xDEADBEEF, 4);
    put_le(b, rec + 4, code, 4);
    put_le(b, rec + 8, bytes, 8);
    put_le(b, rec + 16, rec + 64, 8);
    return rec;
  };
  const std::size_t qr = record(1, q.size());
  std::memcpy(b.data() + qr + 64, q.data(), q.size());
  const std::size_t sr = record(1, scales.size() * 2);
  for (std::size_t i = 0; i < scales.size(); ++i) put_le(b, sr + 64 + 2 * i, float_to_half(scales[i]), 2);
  *scale_at = sr;
  return b;
}

// int8 weights dequantized in the program: constexpr_blockwise_shift_scale of an int8 blob and
// per-row fp16 scales feeding a conv, and constexpr_affine_dequantize with inline attribute
// literals, both against naive loops.
TEST(Conformance, Int8WeightsDequantizedInTheProgram) {
  TempDir dir;
  constexpr std::size_t C = 64, O = 64, S = 384;  // 64 * 384 * 2 = 49,152 bytes
  std::vector<std::int8_t> q(O * C);
  std::vector<float> scales(O);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<std::int8_t>(static_cast<int>((i * 37) % 255) - 127);
  for (std::size_t o = 0; o < O; ++o) scales[o] = static_cast<float>(o + 1) / 4096.0f;
  std::uint64_t scale_at = 0;
  const std::vector<std::byte> blob = int8_blob_file(q, scales, &scale_at);
  std::filesystem::create_directories(dir.path() + "/weights");
  write_bytes(dir.path() + "/weights/weight.bin", std::string(reinterpret_cast<const char*>(blob.data()), blob.size()));
  const std::string conv_tail =
      "        tensor<int32, [2]> st = const()[name = string(\"st\"), val = tensor<int32, [2]>([1, 1])];\n"
      "        tensor<int32, [2]> di = const()[name = string(\"di\"), val = tensor<int32, [2]>([1, 1])];\n"
      "        tensor<int32, [4]> pd = const()[name = string(\"pd\"), val = tensor<int32, [4]>([0, 0, 0, 0])];\n"
      "        string pt = const()[name = string(\"pt\"), val = string(\"valid\")];\n"
      "        int32 gr = const()[name = string(\"gr\"), val = int32(1)];\n"
      "        tensor<fp16, [1, 64, 1, 384]> y = conv(dilations = di, groups = gr, pad = pd, pad_type = pt, strides = st, weight = w, x = x)[name = string(\"y\")];\n";
  const std::string data = "tensor<int8, [64, 64, 1, 1]>(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(64)))";
  const std::string blockwise =
      "        tensor<int8, [64, 64, 1, 1]> wq = const()[name = string(\"wq\"), val = " + data + "];\n"
      "        tensor<fp16, [64, 1, 1, 1]> sc = const()[name = string(\"sc\"), val = tensor<fp16, [64, 1, 1, 1]>(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(" +
      std::to_string(scale_at) + ")))];\n"
      "        tensor<fp16, [64, 64, 1, 1]> w = constexpr_blockwise_shift_scale(data = wq, scale = sc)[name = string(\"w\")];\n";
  // One scale for all: the attribute-block form with inline literals.
  const std::string affine = "        tensor<fp16, [64, 64, 1, 1]> w = constexpr_affine_dequantize()[axis = int32(0), name = string(\"w\"), "
                             "quantized_data = " + data + ", scale = fp16(0x1p-8), zero_point = int8(3)];\n";
  std::vector<float> x(C * S);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = value_at(i, 4);
  for (const bool per_row : {true, false}) {
    write_bytes(dir.path() + "/model.mil", conformance_program("tensor<fp16, [1, 64, 1, 384]> x", (per_row ? blockwise : affine) + conv_tail, "y"));
    for (const bool faithful : {false, true}) {
      AneSimOptions o;
      o.faithful = faithful;
      const std::vector<float> got = run_once(dir.path(), o, {x}, O * S);
      double worst = 0;
      for (std::size_t oc = 0; oc < O; ++oc) {
        const float scale = per_row ? half_to_float(float_to_half(scales[oc])) : 1.0f / 256.0f;
        const float zero = per_row ? 0.0f : 3.0f;
        for (std::size_t s = 0; s < S; ++s) {
          double want = 0;
          for (std::size_t c = 0; c < C; ++c)
            want += static_cast<double>(half_to_float(float_to_half((q[oc * C + c] - zero) * scale))) * x[c * S + s];
          worst = std::max(worst, std::abs(want - got[oc * S + s]) / (1.0 + std::abs(want)));
        }
      }
      EXPECT_LT(worst, 2e-3) << (per_row ? "blockwise" : "affine") << (faithful ? ", faithful" : "");
    }
  }
}

// A weight file as the int8 benchmark's writer lays it out (maderix/ANE ane_int8_bench.m): header
// count 1, records 64 + data bytes apart with type code 1 on int8 data, no data offset, and one
// fixed size in every record, twice a record's data here. Following that size leads into the
// next record's data, and the last record's runs past the end of the file.
std::vector<std::byte> fixed_size_int8_file(const std::vector<std::vector<std::int8_t>>& tensors, std::uint64_t size) {
  std::vector<std::byte> b(64);
  put_le(b, 0, 1, 4);
  put_le(b, 4, 2, 4);
  for (const auto& q : tensors) {
    const std::size_t rec = b.size();
    b.resize(rec + 64 + q.size());
    put_le(b, rec, 0xDEADBEEF, 4);
    put_le(b, rec + 4, 1, 4);
    put_le(b, rec + 8, size, 8);
    std::memcpy(b.data() + rec + 64, q.data(), q.size());
  }
  return b;
}

// Two convs on int8 weights dequantized by constexpr_affine_dequantize, read from that file.
TEST(Conformance, Int8WeightsFromAFileWithOneSizeInEveryRecord) {
  TempDir dir;
  constexpr std::size_t C = 64, S = 384;  // 64 * 384 * 2 = 49,152 bytes
  std::vector<std::vector<std::int8_t>> q(2, std::vector<std::int8_t>(C * C));
  for (std::size_t k = 0; k < 2; ++k)
    for (std::size_t i = 0; i < C * C; ++i) q[k][i] = static_cast<std::int8_t>(static_cast<int>((i * 5 + k * 3) % 9) - 4);
  const std::vector<std::byte> blob = fixed_size_int8_file(q, 2 * C * C);
  std::filesystem::create_directories(dir.path() + "/weights");
  write_bytes(dir.path() + "/weights/weight.bin", std::string(reinterpret_cast<const char*>(blob.data()), blob.size()));
  const auto weight = [](int k, std::size_t at) {
    return "        tensor<fp16, [64, 64, 1, 1]> w" + std::to_string(k) + " = constexpr_affine_dequantize()[axis = int32(0), name = string(\"w" +
           std::to_string(k) + "\"), quantized_data = tensor<int8, [64, 64, 1, 1]>(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(" +
           std::to_string(at) + "))), scale = fp16(0x1p-3), zero_point = int8(0)];\n";
  };
  const std::string conv_args = "dilations = di, groups = gr, pad = pd, pad_type = pt, strides = st";
  write_bytes(dir.path() + "/model.mil",
              conformance_program("tensor<fp16, [1, 64, 1, 384]> x",
                                  weight(0, 64) + weight(1, 64 + 64 + C * C) +
                                  "        tensor<int32, [2]> st = const()[name = string(\"st\"), val = tensor<int32, [2]>([1, 1])];\n"
                                  "        tensor<int32, [2]> di = const()[name = string(\"di\"), val = tensor<int32, [2]>([1, 1])];\n"
                                  "        tensor<int32, [4]> pd = const()[name = string(\"pd\"), val = tensor<int32, [4]>([0, 0, 0, 0])];\n"
                                  "        string pt = const()[name = string(\"pt\"), val = string(\"valid\")];\n"
                                  "        int32 gr = const()[name = string(\"gr\"), val = int32(1)];\n"
                                  "        tensor<fp16, [1, 64, 1, 384]> h = conv(" + conv_args + ", weight = w0, x = x)[name = string(\"h\")];\n"
                                  "        tensor<fp16, [1, 64, 1, 384]> y = conv(" + conv_args + ", weight = w1, x = h)[name = string(\"y\")];\n",
                                  "y"));
  std::vector<float> x(C * S);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = value_at(i, 7);
  const auto h16 = [](double v) { return static_cast<double>(half_to_float(float_to_half(static_cast<float>(v)))); };
  for (const bool faithful : {false, true}) {
    AneSimOptions o;
    o.faithful = faithful;
    const std::vector<float> got = run_once(dir.path(), o, {x}, C * S);
    double worst = 0;
    for (std::size_t s = 0; s < S; ++s) {
      std::vector<double> h(C);
      for (std::size_t j = 0; j < C; ++j) {
        double acc = 0;
        for (std::size_t c = 0; c < C; ++c) acc += q[0][j * C + c] / 8.0 * x[c * S + s];
        h[j] = h16(acc);
      }
      for (std::size_t o2 = 0; o2 < C; ++o2) {
        double acc = 0;
        for (std::size_t j = 0; j < C; ++j) acc += q[1][o2 * C + j] / 8.0 * h[j];
        worst = std::max(worst, std::abs(acc - got[o2 * S + s]) / (1.0 + std::abs(acc)));
      }
    }
    EXPECT_LT(worst, 2e-3) << (faithful ? "faithful" : "default");
  }
}

}  // namespace
}  // namespace orion::device

namespace orion::device {
namespace {

// A fused FFN in the ios16 dialect with its verbose scalar spelling, one weight file per tensor
// (portable to M1), run with the M1/M2 target's rules: conv, relu, conv.
TEST(Conformance, FusedFfnInTheIos16DialectOnTheM1Target) {
  TempDir dir;
  constexpr std::size_t C = 64, H = 128, S = 384;
  std::vector<float> w1(H * C), w2(C * H);
  for (std::size_t i = 0; i < w1.size(); ++i) w1[i] = value_at(i, 6) / 8.0f;
  for (std::size_t i = 0; i < w2.size(); ++i) w2[i] = value_at(i, 9) / 8.0f;
  std::filesystem::create_directories(dir.path() + "/weights");
  for (const auto& [name, w] : {std::pair<std::string, const std::vector<float>*>{"w1", &w1}, {"w2", &w2}}) {
    const std::vector<std::byte> blob = sloppy_blob_file({*w});
    write_bytes(dir.path() + "/weights/" + name + ".bin", std::string(reinterpret_cast<const char*>(blob.data()), blob.size()));
  }
  const auto conv = [](const std::string& out, const std::string& in, const std::string& w, int o) {
    const std::string t = "tensor<fp16, [1, " + std::to_string(o) + ", 1, 384]>";
    return "        " + t + " " + out + " = conv(dilations = di, groups = gr, pad = pd, pad_type = pt, strides = st, weight = " + w +
           ", x = " + in + ")[name = tensor<string, []>(\"" + out + "\")];\n";
  };
  const std::string body =
      "        tensor<fp16, [128, 64, 1, 1]> w1 = const()[name = tensor<string, []>(\"w1\"), val = tensor<fp16, [128, 64, 1, 1]>(BLOBFILE(path = tensor<string, []>(\"@model_path/weights/w1.bin\"), offset = tensor<uint64, []>(64)))];\n"
      "        tensor<fp16, [64, 128, 1, 1]> w2 = const()[name = tensor<string, []>(\"w2\"), val = tensor<fp16, [64, 128, 1, 1]>(BLOBFILE(path = tensor<string, []>(\"@model_path/weights/w2.bin\"), offset = tensor<uint64, []>(64)))];\n"
      "        tensor<int32, [2]> st = const()[name = tensor<string, []>(\"st\"), val = tensor<int32, [2]>([1, 1])];\n"
      "        tensor<int32, [2]> di = const()[name = tensor<string, []>(\"di\"), val = tensor<int32, [2]>([1, 1])];\n"
      "        tensor<int32, [4]> pd = const()[name = tensor<string, []>(\"pd\"), val = tensor<int32, [4]>([0, 0, 0, 0])];\n"
      "        tensor<string, []> pt = const()[name = tensor<string, []>(\"pt\"), val = tensor<string, []>(\"valid\")];\n"
      "        tensor<int32, []> gr = const()[name = tensor<string, []>(\"gr\"), val = tensor<int32, []>(1)];\n" +
      conv("h", "x", "w1", 128) + "        tensor<fp16, [1, 128, 1, 384]> r = relu(x = h)[name = tensor<string, []>(\"r\")];\n" +
      conv("y", "r", "w2", 64);
  write_bytes(dir.path() + "/model.mil",
              "program(1.0)\n[buildInfo = dict<tensor<string, []>, tensor<string, []>>({{\"coremlc-version\", \"3505.4.1\"}})]\n{\n"
              "    func main<ios16>(tensor<fp16, [1, 64, 1, 384]> x) {\n" + body + "    } -> (y);\n}\n");
  std::vector<float> x(C * S);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = value_at(i, 11);
  AneSimOptions o;
  o.target.m1_m2 = true;
  const std::vector<float> got = run_once(dir.path(), o, {x}, C * S);
  const auto h16 = [](double v) { return static_cast<double>(half_to_float(float_to_half(static_cast<float>(v)))); };
  double worst = 0;
  for (std::size_t s = 0; s < S; ++s) {
    std::vector<double> r(H);
    for (std::size_t j = 0; j < H; ++j) {
      double acc = 0;
      for (std::size_t c = 0; c < C; ++c) acc += h16(w1[j * C + c]) * x[c * S + s];
      r[j] = std::max(0.0, h16(acc));
    }
    for (std::size_t c = 0; c < C; ++c) {
      double acc = 0;
      for (std::size_t j = 0; j < H; ++j) acc += h16(w2[c * H + j]) * r[j];
      worst = std::max(worst, std::abs(acc - got[c * S + s]) / (1.0 + std::abs(acc)));
    }
  }
  EXPECT_LT(worst, 4e-3);
}

}  // namespace
}  // namespace orion::device
