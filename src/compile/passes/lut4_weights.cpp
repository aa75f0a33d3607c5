#include "compile/passes/lut4_weights.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
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

// The code of v in an ascending table: how many midpoints between neighbouring entries lie below
// it, so the nearest entry, the lower one on a tie (as fit_table assigns values).
int code_of(const std::array<float, kLut4Entries - 1>& mid, float v) {
  int code = 0;
  for (float m : mid) code += v > m ? 1 : 0;
  return code;
}

std::array<float, kLut4Entries - 1> midpoints(const Table& c) {
  std::array<float, kLut4Entries - 1> m;
  for (std::size_t k = 0; k < m.size(); ++k) m[k] = 0.5f * (c[k] + c[k + 1]);
  return m;
}

// The fp16 bits of v as a key that sorts as the values do (negatives reversed below positives).
std::uint16_t order_key(float v) {
  const std::uint16_t h = float_to_half(v);
  return (h & 0x8000u) != 0 ? static_cast<std::uint16_t>(~h) : static_cast<std::uint16_t>(h | 0x8000u);
}
float key_value(std::uint16_t k) {
  return half_to_float((k & 0x8000u) != 0 ? static_cast<std::uint16_t>(k & 0x7fffu) : static_cast<std::uint16_t>(~k));
}

// The values as fp16 (what a kernel's weights are by then), ascending: a radix sort of their
// order keys, two passes of a byte.
std::vector<float> sorted_fp16(std::span<const float> v) {
  std::vector<std::uint16_t> a(v.size()), b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) a[i] = order_key(v[i]);
  for (int shift : {0, 8}) {
    std::array<std::size_t, 257> at{};
    for (std::uint16_t k : a) ++at[static_cast<std::size_t>((k >> shift) & 0xffu) + 1];
    for (std::size_t d = 1; d < at.size(); ++d) at[d] += at[d - 1];
    for (std::uint16_t k : a) b[at[(k >> shift) & 0xffu]++] = k;
    a.swap(b);
  }
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = key_value(a[i]);
  return out;
}

// Lloyd's k-means in one dimension on the sorted values: the values nearest centroid k are a
// contiguous run, found by binary search at the midpoints, and their mean comes from prefix
// sums, so that an iteration costs 16 searches, not the values.
Table fit_table(std::span<const float> values, int iterations) {
  const std::vector<float> v = sorted_fp16(values);
  const float lo = v.front(), hi = v.back();
  Table c;
  for (std::size_t k = 0; k < c.size(); ++k) c[k] = lo + (hi - lo) * static_cast<float>(k) / static_cast<float>(c.size() - 1);
  std::vector<double> prefix(v.size() + 1, 0.0);
  for (std::size_t i = 0; i < v.size(); ++i) prefix[i + 1] = prefix[i] + v[i];
  for (int it = 0; it < iterations; ++it) {
    const auto mid = midpoints(c);
    bool moved = false;
    std::size_t begin = 0;
    for (std::size_t k = 0; k < c.size(); ++k) {
      const std::size_t end =
          k == mid.size() ? v.size() : static_cast<std::size_t>(std::upper_bound(v.begin(), v.end(), mid[k]) - v.begin());
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
  std::uint16_t* lut = out.lut.data<std::uint16_t>();
  std::uint8_t* codes = out.codes.data<std::uint8_t>();
  const std::int64_t per_table = g * cols;
  for (std::int64_t t = 0; t < rows / g; ++t) {
    const std::span<const float> values(x + t * per_table, static_cast<std::size_t>(per_table));
    const Table c = fit_table(values, iterations);
    for (std::size_t k = 0; k < c.size(); ++k) lut[t * kLut4Entries + static_cast<std::int64_t>(k)] = float_to_half(c[k]);
    const auto mid = midpoints(c);
    for (std::size_t i = 0; i < values.size(); ++i)
      codes[static_cast<std::size_t>(t * per_table) + i] = static_cast<std::uint8_t>(code_of(mid, values[i]));
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
