// ane-sim's live-column evaluation (device/ane_live_columns.h): on a program that computes each
// column by itself, evaluate_live gives the live columns of a full evaluation bit for bit and
// zeros elsewhere; a program that mixes columns is found out at compile and still evaluates
// every column.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/half.h"
#include "core/testing_temp_dir.h"
#include "device/ane_sim.h"
#include "device/device_test_util.h"

namespace orion::device {
namespace {

using testing_util::TempDir;
using namespace test_programs;

// A surface of x[c][s] = ((c * 5 + s * 3) % 19 - 9) / 8, every column different.
AneSurface input_surface() {
  std::vector<std::uint16_t> h(C * S);
  for (int c = 0; c < C; ++c)
    for (int s = 0; s < S; ++s) h[c * S + s] = float_to_half(static_cast<float>((c * 5 + s * 3) % 19 - 9) / 8.0f);
  AneSurface out(C * S * 2);
  std::memcpy(out.bytes().data(), h.data(), h.size() * 2);
  return out;
}

std::vector<std::uint16_t> halves_of(const AneSurface& s) {
  std::vector<std::uint16_t> h(C * S);
  std::memcpy(h.data(), s.bytes().data(), h.size() * 2);
  return h;
}

inline const std::string kColumnIo = "tensor<fp16, [1, 1, 1, 384]>";

// What a decode kernel does to a column: a 1x1 conv, a layer norm written with reductions over
// the channels, tanh, a clip and a slice (whole: the rules want slices whole along the columns).
std::string column_independent_program() {
  return program(
      kIo + " x",
      "    tensor<fp16, [64, 64, 1, 1]> W = const()[name = string(\"W\"), val = tensor<fp16, [64, 64, 1, 1]>"
      "(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(64)))];\n" +
          kConvConsts + "    " + kIo +
          " h = conv(dilations = dl, groups = gr, pad = pd, pad_type = pt, strides = st, weight = W, x = x)"
          "[name = string(\"h\")];\n"
          "    tensor<int32, [1]> ax = const()[name = string(\"ax\"), val = tensor<int32, [1]>([1])];\n"
          "    bool kd = const()[name = string(\"kd\"), val = bool(true)];\n    " +
          kColumnIo + " mean = reduce_mean(axes = ax, keep_dims = kd, x = h)[name = string(\"mean\")];\n    " + kIo +
          " d = sub(x = h, y = mean)[name = string(\"d\")];\n    " + kIo +
          " sq = mul(x = d, y = d)[name = string(\"sq\")];\n    " + kColumnIo +
          " var = reduce_mean(axes = ax, keep_dims = kd, x = sq)[name = string(\"var\")];\n"
          "    fp16 eps = const()[name = string(\"eps\"), val = fp16(0x1.0p-10)];\n    " +
          kColumnIo + " ve = add(x = var, y = eps)[name = string(\"ve\")];\n"
          "    fp16 mh = const()[name = string(\"mh\"), val = fp16(-0x1.0p-1)];\n    " +
          kColumnIo + " rs = pow(x = ve, y = mh)[name = string(\"rs\")];\n    " + kIo +
          " n = mul(x = d, y = rs)[name = string(\"n\")];\n    " + kIo +
          " t = tanh(x = n)[name = string(\"t\")];\n"
          "    fp16 lo = const()[name = string(\"lo\"), val = fp16(-0x1.0p-1)];\n"
          "    fp16 hi = const()[name = string(\"hi\"), val = fp16(0x1.0p-1)];\n    " +
          kIo + " cl = clip(alpha = lo, beta = hi, x = t)[name = string(\"cl\")];\n"
          "    tensor<int32, [4]> b0 = const()[name = string(\"b0\"), val = tensor<int32, [4]>([0, 0, 0, 0])];\n"
          "    tensor<int32, [4]> sz = const()[name = string(\"sz\"), val = tensor<int32, [4]>([1, 64, 1, 384])];\n    " +
          kIo + " y = slice_by_size(begin = b0, size = sz, x = cl)[name = string(\"y\")];\n",
      "y");
}

// x minus its mean over the columns: every column reads all the others.
std::string column_mixing_program() {
  return program(kIo + " x",
                 "    tensor<int32, [1]> ax = const()[name = string(\"ax\"), val = tensor<int32, [1]>([3])];\n"
                 "    bool kd = const()[name = string(\"kd\"), val = bool(true)];\n"
                 "    tensor<fp16, [1, 64, 1, 1]> m = reduce_mean(axes = ax, keep_dims = kd, x = x)[name = string(\"m\")];\n    " +
                     kIo + " y = sub(x = x, y = m)[name = string(\"y\")];\n",
                 "y");
}

// The outputs of a full evaluation and of evaluate_live with `live` columns.
struct Both {
  std::vector<std::uint16_t> full, live;
};
Both evaluate_both(AneSim& sim, AneProgramId id, std::int64_t live) {
  const AneSurface x = input_surface();
  AneSurface full(C * S * 2), part(C * S * 2);
  for (std::byte& b : part.bytes()) b = std::byte{0x55};  // nothing left over from before
  sim.evaluate(id, {&x}, {&full});
  sim.evaluate_live(id, {&x}, {&part}, live);
  return {halves_of(full), halves_of(part)};
}

bool any_nonzero_past(const std::vector<std::uint16_t>& h, std::int64_t live) {
  for (int c = 0; c < C; ++c)
    for (std::int64_t s = live; s < S; ++s)
      if (h[static_cast<std::size_t>(c * S + s)] != 0) return true;
  return false;
}

// `mil` written to `dir`, compiled and loaded.
AneProgramId loaded_program(AneSim& sim, const TempDir& dir, const std::string& mil) {
  write_folder(dir.path(), mil);
  const AneProgramId id = sim.compile(dir.path());
  sim.load(id);
  return id;
}

TEST(AneSimLiveColumns, LiveColumnsAreTheFullEvaluationsBits) {
  TempDir dir;
  AneSim sim;
  const AneProgramId id = loaded_program(sim, dir, column_independent_program());
  ASSERT_EQ(sim.live_column_width(id), S);
  for (std::int64_t live : {std::int64_t{1}, std::int64_t{5}, S - 1, S}) {
    const Both r = evaluate_both(sim, id, live);
    if (live < S) {
      ASSERT_TRUE(any_nonzero_past(r.full, live)) << "the padding columns must have had work to skip";
    }
    for (int c = 0; c < C; ++c)
      for (std::int64_t s = 0; s < S; ++s) {
        const auto i = static_cast<std::size_t>(c * S + s);
        if (s < live) {
          ASSERT_EQ(r.live[i], r.full[i]) << "live " << live << " channel " << c << " column " << s;
        } else {
          ASSERT_EQ(r.live[i], 0) << "live " << live << " channel " << c << " padding column " << s;
        }
      }
  }
}

TEST(AneSimLiveColumns, AProgramMixingColumnsEvaluatesThemAll) {
  TempDir dir;
  AneSim sim;
  const AneProgramId id = loaded_program(sim, dir, column_mixing_program());
  EXPECT_EQ(sim.live_column_width(id), 0);
  const Both r = evaluate_both(sim, id, 5);
  EXPECT_TRUE(any_nonzero_past(r.full, 5));
  EXPECT_EQ(r.live, r.full);
}

}  // namespace
}  // namespace orion::device
