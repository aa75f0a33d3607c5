// conv against a naive fp64 convolution written from the op table's definition: odd sizes,
// strides, uneven padding, dilations, groups (depthwise included), and the 1x1 case that runs
// through the matmul kernel.
#include "exec/op_test_util.h"

namespace orion::test {
namespace {

using ir::Op;

[[maybe_unused]] const bool kConvRegistered = mark_tested({Op::conv});

struct ConvCase {
  std::int64_t n, cin, h, w, cout, kh, kw;
  std::vector<std::int64_t> strides, pads, dilations;
  std::int64_t groups;
};

const ConvCase kCases[] = {
    {1, 1, 1, 1, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
    {1, 7, 1, 37, 5, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},     // 1x1 on [1, C, 1, S]: matmul path
    {1, 96, 1, 64, 80, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},   // large enough to use threads
    {3, 5, 4, 3, 2, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},      // batched 1x1
    {1, 6, 1, 9, 4, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 2},      // grouped 1x1: direct path
    {1, 3, 5, 7, 4, 3, 3, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
    {2, 3, 5, 7, 4, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
    {1, 4, 9, 11, 6, 3, 2, {2, 3}, {1, 0, 2, 1}, {1, 1}, 2},
    {1, 2, 8, 8, 3, 2, 3, {1, 2}, {0, 3, 1, 0}, {3, 2}, 1},
    {2, 6, 7, 5, 6, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 6},      // depthwise
    {1, 4, 3, 3, 8, 3, 3, {1, 1}, {2, 2, 2, 2}, {2, 2}, 4},      // kernel mostly in the padding
    {1, 3, 1, 33, 5, 1, 5, {1, 2}, {0, 0, 2, 2}, {1, 1}, 1},     // 1 x k along the sequence
};

TEST(Conv, MatchesNaiveConvolution) {
  std::uint64_t seed = 500;
  for (const ConvCase& c : kCases) {
    Rng rng(seed++);
    const Shape xs = {c.n, c.cin, c.h, c.w};
    const Shape ws = {c.cout, c.cin / c.groups, c.kh, c.kw};
    const Input x = float_input(rng, "x", xs, -1, 1);
    const Input w = float_input(rng, "w", ws, -1, 1);
    const std::int64_t oh = (c.h + c.pads[0] + c.pads[1] - c.dilations[0] * (c.kh - 1) - 1) / c.strides[0] + 1;
    const std::int64_t ow = (c.w + c.pads[2] + c.pads[3] - c.dilations[1] * (c.kw - 1) - 1) / c.strides[1] + 1;
    const Shape os = {c.n, c.cout, oh, ow};
    const std::string what = cat("conv x", str(xs), " w", str(ws), " groups ", c.groups);
    for (Numerics m : kModes) {
      const std::vector<double> xv = x.stored(m), wv = w.stored(m);
      std::vector<double> ref, scale;
      const std::int64_t cin_g = c.cin / c.groups, cout_g = c.cout / c.groups;
      for (std::int64_t b = 0; b < c.n; ++b)
        for (std::int64_t co = 0; co < c.cout; ++co)
          for (std::int64_t y = 0; y < oh; ++y)
            for (std::int64_t xo = 0; xo < ow; ++xo) {
              double sum = 0, mag = 0;
              const std::int64_t g = co / cout_g;
              for (std::int64_t ci = 0; ci < cin_g; ++ci)
                for (std::int64_t i = 0; i < c.kh; ++i)
                  for (std::int64_t j = 0; j < c.kw; ++j) {
                    const std::int64_t iy = y * c.strides[0] - c.pads[0] + i * c.dilations[0];
                    const std::int64_t ix = xo * c.strides[1] - c.pads[2] + j * c.dilations[1];
                    if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                    const double a = xv[static_cast<std::size_t>(((b * c.cin + g * cin_g + ci) * c.h + iy) * c.w + ix)];
                    const double k = wv[static_cast<std::size_t>(((co * cin_g + ci) * c.kh + i) * c.kw + j)];
                    sum += a * k;
                    mag += std::fabs(a * k);
                  }
              ref.push_back(sum);
              scale.push_back(mag);
            }
      const Tensor got = run_op({x, w}, [&](ir::Builder& bld, const std::vector<ir::Value>& v) {
        return bld.conv(v[0], v[1], c.strides, c.pads, c.dilations, c.groups);
      }, m);
      // In f16 mode the output is rounded to fp16 once: the relative term covers it.
      expect_close(got, os, ref, m, what, {static_cast<double>(cin_g * c.kh * c.kw), &scale});
    }
  }
}

TEST(Conv, SameResultOnOneThreadAndTwo) {
  Rng rng(77);
  const Input x = float_input(rng, "x", {1, 64, 1, 128}, -1, 1);
  const Input w = float_input(rng, "w", {96, 64, 1, 1}, -1, 1);
  auto make = [](ir::Builder& b, const std::vector<ir::Value>& v) { return b.conv(v[0], v[1]); };
  const Tensor one = run_op({x, w}, make, Numerics::f32, nullptr, 1);
  const Tensor two = run_op({x, w}, make, Numerics::f32, nullptr, 2);
  EXPECT_EQ(one.to_floats(), two.to_floats());
}

}  // namespace
}  // namespace orion::test
