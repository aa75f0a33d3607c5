#include "compile/passes/lut4_weights.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "compile/mil/mil_constexpr.h"
#include "core/error.h"
#include "core/half.h"

namespace orion::compile {

namespace {

using Table = std::array<float, kLut4Entries>;

[[noreturn]] void fail_lut(std::string_view name, const std::string& problem) {
  throw Error("LUT4 weight " + std::string(name) + ": " + problem);
}

// The midpoints between neighbouring entries of an ascending table: the value v is nearest entry
// (the number of midpoints below v), the lower one on a tie, as fit_table assigns it.
std::array<float, kLut4Entries - 1> midpoints(const Table& c) {
  std::array<float, kLut4Entries - 1> m;
  for (std::size_t k = 0; k < m.size(); ++k) m[k] = 0.5f * (c[k] + c[k + 1]);
  return m;
}

// Lloyd's k-means on sorted values: the values nearest centroid k are a contiguous run, found by
// binary search at the midpoints, and their mean comes from prefix sums.
Table fit_table(std::vector<float>& v, int iterations) {
  std::sort(v.begin(), v.end());
  const float lo = v.front(), hi = v.back();
  Table c;
  for (std::size_t k = 0; k < c.size(); ++k) c[k] = lo + (hi - lo) * static_cast<float>(k) / static_cast<float>(c.size() - 1);
  std::vector<double> prefix(v.size() + 1, 0.0);
  for (std::size_t i = 0; i < v.size(); ++i) prefix[i + 1] = prefix[i] + v[i];
  for (int it = 0; it < iterations; ++it) {
    bool moved = false;
    std::size_t begin = 0;
    for (std::size_t k = 0; k < c.size(); ++k) {
      const std::size_t end = k + 1 == c.size()
                                  ? v.size()
                                  : static_cast<std::size_t>(std::upper_bound(v.begin(), v.end(), 0.5f * (c[k] + c[k + 1])) - v.begin());
      if (end > begin) {  // an empty cluster keeps its centroid
        const auto mean = static_cast<float>((prefix[end] - prefix[begin]) / static_cast<double>(end - begin));
        moved = moved || mean != c[k];
        c[k] = mean;
      }
      begin = std::max(begin, end);
    }
    if (!moved) break;
  }
  // The table as stored: fp16, still ascending.
  for (float& x : c) x = half_to_float(float_to_half(x));
  std::sort(c.begin(), c.end());
  return c;
}

}  // namespace

Lut4Weight palettize_lut4(const Tensor& w, std::int64_t group, std::string_view name, int iterations) {
  if (w.rank() != 2) fail_lut(name, "the weight " + std::string(dtype_name(w.dtype())) + shape_str(w.shape()) + " is not [O, C]");
  const std::int64_t rows = w.shape()[0], cols = w.shape()[1];
  const std::int64_t g = group == 0 ? rows : group;
  if (g <= 0 || rows % g != 0)
    fail_lut(name, "groups of " + std::to_string(g) + " output channels do not divide its " + std::to_string(rows));
  const Tensor f = w.to(DType::f32).contiguous();
  const float* x = f.data<float>();
  for (std::int64_t i = 0; i < f.numel(); ++i)
    if (!std::isfinite(x[i])) fail_lut(name, "weight " + std::to_string(i) + " is not finite");
  Lut4Weight out{Tensor(DType::f16, {rows / g, kLut4Entries}), Tensor(DType::u8, {rows, cols})};
  std::vector<float> values;
  for (std::int64_t t = 0; t < rows / g; ++t) {
    const float* first = x + t * g * cols;
    values.assign(first, first + g * cols);
    const Table c = fit_table(values, iterations);
    for (std::size_t k = 0; k < c.size(); ++k) out.lut.data<std::uint16_t>()[t * kLut4Entries + static_cast<std::int64_t>(k)] = float_to_half(c[k]);
    const auto mid = midpoints(c);
    for (std::int64_t i = 0; i < g * cols; ++i)
      out.codes.data<std::uint8_t>()[t * g * cols + i] =
          static_cast<std::uint8_t>(std::lower_bound(mid.begin(), mid.end(), first[i]) - mid.begin());
  }
  return out;
}

ir::ValueId add_lut4_weight(ir::GraphRewriter& rw, const Lut4Weight& w, const Shape& shape, bool ios16, std::string_view name) {
  const std::string n(name);
  const Shape& cs = w.codes.shape();
  if (shape.size() < 2 || shape[0] != cs[0] || shape_numel(shape) != w.codes.numel())
    fail_lut(name, "codes " + shape_str(cs) + " do not make a weight of " + shape_str(shape));
  const std::int64_t tables = w.lut.shape()[0];
  if (ios16 && tables != 1) fail_lut(name, std::to_string(tables) + " tables; the iOS16 form has one");
  Shape table_dims(shape.size(), 1);
  table_dims[0] = tables;
  Shape lut_shape = table_dims;
  lut_shape.push_back(kLut4Entries);
  lut_shape.push_back(1);
  std::vector<std::int32_t> codes(static_cast<std::size_t>(w.codes.numel()));
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = w.codes.data<std::uint8_t>()[i];
  const ir::ValueId lut = rw.constant(ios16 ? w.lut.reshape({kLut4Entries}) : w.lut.reshape(lut_shape), n + "_lut");
  const ir::ValueId flat = rw.op(ir::Op::reshape, {lut}, {{"shape", std::vector<std::int64_t>{w.lut.numel()}}}, n + "_lut_flat");
  const ir::ValueId indices =
      rw.constant(lut_flat_indices(shape, ios16 ? Shape{} : table_dims, kLut4Entries, codes), n + "_indices");
  return rw.op(ir::Op::gather, {flat, indices}, {{"axis", std::int64_t{0}}}, n);
}

}  // namespace orion::compile
