#pragma once
// Shared by the op tests of the CPU executor: one-op graphs, random data, the values the
// executor stores in each numerics mode, and comparison with an fp64 reference.
//
// The references themselves live in each test file and are written from the op table's
// definitions; nothing here shares code with the kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/random.h"
#include "core/tensor.h"
#include "exec/cpu/executor.h"
#include "ir/builder.h"

namespace orion::test {

using exec::Numerics;

inline constexpr Numerics kModes[] = {Numerics::f32, Numerics::f16};

// Ops some test compares with a reference; checked against the op table by a test of its own.
inline std::set<ir::Op>& tested_ops() {
  static std::set<ir::Op> ops;
  return ops;
}
inline bool mark_tested(std::initializer_list<ir::Op> ops) {
  tested_ops().insert(ops.begin(), ops.end());
  return true;
}

// Numpy broadcasting of two compatible shapes, written here independently of ir::broadcast_shapes.
inline Shape broadcast(const Shape& a, const Shape& b) {
  const std::size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    const std::int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

inline std::string mode_str(Numerics m) { return std::string(exec::numerics_name(m)); }

// Messages are put together with a stream: `"literal" + std::string` trips a false -Wrestrict
// of g++ 12 (GCC bug 105329), which CI turns into an error.
template <class... Args> std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

inline std::vector<float> random_floats(Rng& rng, std::int64_t n, float lo, float hi) {
  std::vector<float> v(static_cast<std::size_t>(n));
  rng.fill_uniform(v, lo, hi);
  return v;
}

// One input of a one-op graph: float data (bound as f32, declared `dtype`), or i32 / bool data.
struct Input {
  std::string name;
  Shape shape;
  std::vector<float> values;  // for float, i32 and bool inputs alike (converted when bound)
  DType dtype = DType::f32;

  Tensor tensor() const {
    switch (dtype) {
      case DType::i32: {
        std::vector<std::int32_t> v(values.begin(), values.end());
        return Tensor::from_ints(shape, v);
      }
      case DType::boolean: {
        Tensor t(DType::boolean, shape);
        for (std::size_t i = 0; i < values.size(); ++i) t.data<std::uint8_t>()[i] = values[i] != 0 ? 1 : 0;
        return t;
      }
      default: return Tensor::from_floats(shape, values);
    }
  }

  // The values the kernels see: float inputs rounded to fp16 in f16 mode.
  std::vector<double> stored(Numerics m) const {
    std::vector<double> out(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const bool round = is_float(dtype) && m == Numerics::f16;
      out[i] = round ? static_cast<double>(half_to_float(float_to_half(values[i]))) : values[i];
    }
    return out;
  }
};

inline Input float_input(Rng& rng, std::string name, Shape shape, float lo, float hi) {
  const std::int64_t n = shape_numel(shape);
  return {std::move(name), std::move(shape), random_floats(rng, n, lo, hi)};
}

using OpMaker = std::function<ir::Value(ir::Builder&, const std::vector<ir::Value>&)>;

// Threads for a test executor: small ops run inline in the kernels anyway, so they get a pool
// of one (no worker threads to start and join, which is slow on a loaded machine); larger ones
// get two, so that the kernels' parallel paths are exercised even on a single core.
inline int test_threads(std::int64_t elements) { return elements < 4096 ? 1 : 2; }

// Builds input(s) -> one op -> output, runs it in mode `m` and returns the output (as stored in
// its declared dtype). The op node's description is written to `*node_desc` if given. `threads`
// 0 chooses by the size of the inputs and output.
inline Tensor run_op(const std::vector<Input>& ins, const OpMaker& make, Numerics m,
                     std::string* node_desc = nullptr, int threads = 0) {
  ir::Builder b("one_op");
  std::vector<ir::Value> vals;
  for (const Input& in : ins) vals.push_back(b.input(in.name, in.dtype, in.shape));
  const ir::Value out = make(b, vals);
  b.output(out);
  ir::Graph g = b.finish();
  if (node_desc) *node_desc = ir::describe(g.node(out.id));
  if (threads == 0) {
    std::int64_t elements = g.node(out.id).type.numel();
    for (const Input& in : ins) elements = std::max(elements, shape_numel(in.shape));
    threads = test_threads(elements);
  }
  exec::CpuExecutor ex(std::move(g), {m, threads});
  TensorMap bind;
  for (const Input& in : ins) bind[in.name] = in.tensor();
  std::vector<Tensor> outs = ex.run(bind);
  EXPECT_EQ(outs.size(), 1u);
  return outs.at(0);
}

// Tolerances. A result is accepted when
//   |got - ref| <= rel * |ref| + kF32Eps * growth * scale + abs
// where rel and abs depend on the mode (f32: 1e-5 and 1e-7; f16: two fp16 ulps, 2^-9 relative,
// and 1e-6), and the middle term bounds fp32 rounding inside a reduction of `growth` terms whose
// magnitudes add up to `scale` (0 when no scale is given).
inline constexpr double kF32Eps = 1.2e-7;

struct Tol {
  double growth = 0;                     // length of the reduction (0: elementwise op)
  const std::vector<double>* scale = nullptr;
  double f32_rel = 1e-5;
};

inline double allowed_error(double ref, double scale, double growth, Numerics m, double f32_rel) {
  const double rel = m == Numerics::f16 ? std::ldexp(1.0, -9) : f32_rel;
  const double abs = m == Numerics::f16 ? 1e-6 : 1e-7;
  return rel * std::fabs(ref) + kF32Eps * growth * scale + abs;
}

// Compares a float output with its reference; reports the first few mismatches.
inline void expect_close(const Tensor& got, const Shape& shape, const std::vector<double>& ref,
                         Numerics m, const std::string& what, Tol tol = {}) {
  ASSERT_EQ(got.shape(), shape) << what;
  const std::vector<float> g = got.to_floats();
  ASSERT_EQ(g.size(), ref.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double s = tol.scale ? (*tol.scale)[i] : 0.0;
    const double allowed = allowed_error(ref[i], s, tol.growth, m, tol.f32_rel);
    const double err = std::fabs(static_cast<double>(g[i]) - ref[i]);
    const bool same_special = (std::isnan(ref[i]) && std::isnan(g[i])) ||
                              (std::isinf(ref[i]) && static_cast<double>(g[i]) == ref[i]);
    if (!(err <= allowed) && !same_special) {
      if (++bad <= 5)
        ADD_FAILURE() << what << " [" << mode_str(m) << "]: element " << i << " is " << g[i]
                      << ", expected " << ref[i] << " (error " << err << " > " << allowed << ")";
    }
  }
  EXPECT_EQ(bad, 0) << what << " [" << mode_str(m) << "]: " << bad << " of " << g.size()
                    << " elements differ";
}

// Exact comparison (data movement, integer results).
inline void expect_equal(const Tensor& got, const Shape& shape, const std::vector<double>& ref,
                         const std::string& what) {
  ASSERT_EQ(got.shape(), shape) << what;
  // i32 values are read as they are: beyond 2^24 a float would round them.
  std::vector<double> g;
  if (got.dtype() == DType::i32) {
    for (std::int32_t v : got.contiguous().span<std::int32_t>()) g.push_back(v);
  } else {
    for (float v : got.to_floats()) g.push_back(v);
  }
  ASSERT_EQ(g.size(), ref.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const bool same = g[i] == ref[i] || (std::isnan(ref[i]) && std::isnan(g[i]));
    if (!same && ++bad <= 5)
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", expected " << ref[i];
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << g.size() << " elements differ";
}

// Index helpers for the references.
inline std::vector<std::int64_t> unravel(std::int64_t i, const Shape& shape) {
  std::vector<std::int64_t> idx(shape.size(), 0);
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

inline std::int64_t ravel(const std::vector<std::int64_t>& idx, const Shape& shape) {
  std::int64_t i = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + idx[d];
  return i;
}

// The element of a tensor of shape `in` that numpy broadcasting reads for output index `out_idx`.
inline std::int64_t broadcast_source(const std::vector<std::int64_t>& out_idx, const Shape& in) {
  const std::size_t lead = out_idx.size() - in.size();
  std::int64_t i = 0;
  for (std::size_t d = 0; d < in.size(); ++d) i = i * in[d] + (in[d] == 1 ? 0 : out_idx[lead + d]);
  return i;
}

inline std::string str(const Shape& s) { return shape_str(s); }

}  // namespace orion::test
