// Data movement (reshape, transpose, slice, concat, gather) and cast, compared exactly with
// references that index element by element.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "exec/op_test_util.h"

namespace orion::test {
namespace {

using ir::Op;

[[maybe_unused]] const bool kLayoutRegistered =
    mark_tested({Op::reshape, Op::transpose, Op::slice, Op::concat, Op::gather, Op::cast});

// Float data for data-movement ops, or integer data when dt is i32.
Input data_input(Rng& rng, std::string name, const Shape& s, DType dt = DType::f32) {
  Input in = float_input(rng, std::move(name), s, -100, 100);
  in.dtype = dt;
  if (dt == DType::i32)
    for (float& v : in.values) v = std::round(v * 1000);
  return in;
}

TEST(Layout, Reshape) {
  const std::pair<Shape, std::vector<std::int64_t>> cases[] = {
      {{6}, {2, 3}}, {{2, 3}, {3, 2}}, {{2, 3, 4}, {-1, 4}}, {{2, 3, 4}, {4, -1, 3}},
      {{1}, {}}, {{}, {1, 1}}, {{5, 1}, {5}}, {{7, 11, 13}, {13, 77}}, {{0, 3}, {3, 0}},
  };
  std::uint64_t seed = 6000;
  for (const auto& c : cases) {
    const Shape& from = c.first;
    const std::vector<std::int64_t>& to = c.second;
    Rng rng(seed++);
    const Input x = data_input(rng, "x", from);
    Shape want(to.begin(), to.end());
    for (std::int64_t& d : want)
      if (d == -1) d = shape_numel(from) / -std::accumulate(to.begin(), to.end(), std::int64_t{1}, std::multiplies<>());
    for (Numerics m : kModes) {
      const Tensor got = run_op({x}, [&](ir::Builder& b, const auto& v) { return b.reshape(v[0], to); }, m);
      expect_equal(got, want, x.stored(m), cat("reshape ", str(from), " to ", str(Shape(to.begin(), to.end()))));
    }
  }
}

TEST(Layout, TransposeEveryPermutation) {
  const Shape shapes[] = {{5}, {3, 4}, {2, 3, 4}, {2, 1, 3, 5}, {3, 4, 1}, {1, 1}, {37, 61}, {4, 33, 65}};
  std::uint64_t seed = 6100;
  for (const Shape& s : shapes) {
    for (const DType dt : {DType::f32, DType::i32}) {
      std::vector<std::int64_t> perm(s.size());
      std::iota(perm.begin(), perm.end(), 0);
      do {
        Rng rng(seed++);
        const Input x = data_input(rng, "x", s, dt);
        Shape out_shape;
        for (std::int64_t p : perm) out_shape.push_back(s[static_cast<std::size_t>(p)]);
        for (Numerics m : kModes) {
          const std::vector<double> xv = x.stored(m);
          std::vector<double> ref(xv.size());
          for (std::size_t i = 0; i < ref.size(); ++i) {
            const auto oidx = unravel(static_cast<std::int64_t>(i), out_shape);
            std::vector<std::int64_t> iidx(s.size());
            for (std::size_t d = 0; d < perm.size(); ++d) iidx[static_cast<std::size_t>(perm[d])] = oidx[d];
            ref[i] = xv[static_cast<std::size_t>(ravel(iidx, s))];
          }
          const Tensor got = run_op({x}, [&](ir::Builder& b, const auto& v) { return b.transpose(v[0], perm); }, m);
          expect_equal(got, out_shape, ref, cat("transpose ", str(s), " perm ", str(Shape(perm.begin(), perm.end()))));
        }
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
  }
}

TEST(Layout, SliceRandomBoxes) {
  const Shape shapes[] = {{7}, {3, 5}, {2, 1, 4}, {4, 3, 6}, {2, 3, 4, 5}, {1, 1}, {40, 300}};
  std::uint64_t seed = 6200;
  for (const Shape& s : shapes) {
    for (int trial = 0; trial < 12; ++trial) {
      Rng rng(seed++);
      const Input x = data_input(rng, "x", s, trial % 2 ? DType::i32 : DType::f32);
      std::vector<std::int64_t> begin, end;
      for (std::int64_t d : s) {
        // Whole axis, empty range (trial 11 only), or a random sub-range.
        const auto lo = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(d)));
        const auto hi = lo + 1 + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(d - lo)));
        if (trial == 0) {
          begin.push_back(0);
          end.push_back(d);
        } else if (trial == 11 && begin.empty()) {
          begin.push_back(lo);
          end.push_back(lo);
        } else {
          begin.push_back(lo);
          end.push_back(hi);
        }
      }
      Shape out_shape;
      for (std::size_t d = 0; d < s.size(); ++d) out_shape.push_back(end[d] - begin[d]);
      for (Numerics m : kModes) {
        const std::vector<double> xv = x.stored(m);
        std::vector<double> ref(static_cast<std::size_t>(shape_numel(out_shape)));
        for (std::size_t i = 0; i < ref.size(); ++i) {
          auto idx = unravel(static_cast<std::int64_t>(i), out_shape);
          for (std::size_t d = 0; d < s.size(); ++d) idx[d] += begin[d];
          ref[i] = xv[static_cast<std::size_t>(ravel(idx, s))];
        }
        const Tensor got = run_op({x}, [&](ir::Builder& b, const auto& v) { return b.slice(v[0], begin, end); }, m);
        expect_equal(got, out_shape, ref,
                     cat("slice ", str(s), " begin ", str(Shape(begin.begin(), begin.end())), " end ",
                         str(Shape(end.begin(), end.end()))));
      }
    }
  }
}

TEST(Layout, ConcatAlongEveryAxis) {
  const Shape shapes[] = {{3}, {3, 5}, {2, 1, 4}, {2, 3, 4, 5}, {1, 1}, {30, 200}};
  std::uint64_t seed = 6300;
  for (const Shape& s : shapes) {
    const int rank = static_cast<int>(s.size());
    for (int axis = -rank; axis < rank; ++axis) {
      const auto ax = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
      for (int n_in = 1; n_in <= 4; ++n_in) {
        Rng rng(seed++);
        std::vector<Input> ins;
        Shape out_shape = s;
        out_shape[ax] = 0;
        for (int k = 0; k < n_in; ++k) {
          Shape si = s;
          si[ax] = static_cast<std::int64_t>(rng.below(4));  // 0 to 3 along the axis
          out_shape[ax] += si[ax];
          ins.push_back(data_input(rng, cat("x", k), si, n_in == 3 ? DType::i32 : DType::f32));
        }
        for (Numerics m : kModes) {
          std::vector<double> ref(static_cast<std::size_t>(shape_numel(out_shape)));
          std::vector<std::vector<double>> stored;
          for (const Input& in : ins) stored.push_back(in.stored(m));
          for (std::size_t i = 0; i < ref.size(); ++i) {
            auto idx = unravel(static_cast<std::int64_t>(i), out_shape);
            std::size_t k = 0;
            while (idx[ax] >= ins[k].shape[ax]) idx[ax] -= ins[k++].shape[ax];
            ref[i] = stored[k][static_cast<std::size_t>(ravel(idx, ins[k].shape))];
          }
          const Tensor got = run_op(ins, [&](ir::Builder& b, const auto& v) { return b.concat(v, axis); }, m);
          expect_equal(got, out_shape, ref,
                       cat("concat of ", n_in, " ", str(s), " axis ", axis));
        }
      }
    }
  }
}

TEST(Layout, GatherAlongEveryAxis) {
  const Shape tables[] = {{5}, {4, 3}, {2, 5, 3}, {3, 1, 4, 2}, {1}, {50, 64}};
  const Shape index_shapes[] = {{}, {1}, {6}, {2, 3}};
  std::uint64_t seed = 6400;
  for (const Shape& ts : tables) {
    const int rank = static_cast<int>(ts.size());
    for (int axis = -rank; axis < rank; ++axis) {
      const auto ax = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
      for (const Shape& is : index_shapes) {
        for (const DType dt : {DType::f32, DType::i32}) {
          Rng rng(seed++);
          const Input table = data_input(rng, "table", ts, dt);
          Input idx{"idx", is, {}, DType::i32};
          for (std::int64_t i = 0; i < shape_numel(is); ++i)
            idx.values.push_back(static_cast<float>(rng.below(static_cast<std::uint64_t>(ts[ax]))));
          Shape out_shape(ts.begin(), ts.begin() + static_cast<std::ptrdiff_t>(ax));
          out_shape.insert(out_shape.end(), is.begin(), is.end());
          out_shape.insert(out_shape.end(), ts.begin() + static_cast<std::ptrdiff_t>(ax) + 1, ts.end());
          for (Numerics m : kModes) {
            const std::vector<double> tv = table.stored(m);
            std::vector<double> ref(static_cast<std::size_t>(shape_numel(out_shape)));
            for (std::size_t i = 0; i < ref.size(); ++i) {
              const auto oidx = unravel(static_cast<std::int64_t>(i), out_shape);
              // out[pre, j..., post] = table[pre, idx[j...], post]
              const std::vector<std::int64_t> jidx(oidx.begin() + static_cast<std::ptrdiff_t>(ax),
                                                   oidx.begin() + static_cast<std::ptrdiff_t>(ax + is.size()));
              std::vector<std::int64_t> tidx(oidx.begin(), oidx.begin() + static_cast<std::ptrdiff_t>(ax));
              tidx.push_back(static_cast<std::int64_t>(idx.values[static_cast<std::size_t>(ravel(jidx, is))]));
              tidx.insert(tidx.end(), oidx.begin() + static_cast<std::ptrdiff_t>(ax + is.size()), oidx.end());
              ref[i] = tv[static_cast<std::size_t>(ravel(tidx, ts))];
            }
            const Tensor got =
                run_op({table, idx}, [&](ir::Builder& b, const auto& v) { return b.gather(v[0], v[1], axis); }, m);
            expect_equal(got, out_shape, ref, cat("gather ", str(ts), " axis ", axis, " indices ", str(is)));
          }
        }
      }
    }
  }
}

TEST(Layout, GatherRejectsOutOfRangeIndices) {
  for (const std::int32_t bad : {4, -1, 1000000, std::numeric_limits<std::int32_t>::min()}) {
    const Input table{"table", {4, 3}, std::vector<float>(12, 1.0f)};
    const Input idx{"idx", {3}, {0.0f, static_cast<float>(bad), 1.0f}, DType::i32};
    std::string node;
    try {
      ir::Builder b("one_op");
      const ir::Value out = b.gather(b.input("table", DType::f32, {4, 3}), b.input("idx", DType::i32, {3}), 0);
      b.output(out);
      ir::Graph g = b.finish();
      node = ir::describe(g.node(out.id));
      exec::CpuExecutor ex(std::move(g));
      ex.run({{"table", table.tensor()}, {"idx", idx.tensor()}});
      ADD_FAILURE() << "index " << bad << " was accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(node), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::to_string(bad)), std::string::npos) << msg;
    }
  }
}

// What the documented cast rules give for one value.
double cast_ref(double v, DType to) {
  auto saturate = [](double x, double lo, double hi) {
    if (std::isnan(x)) return 0.0;
    return std::clamp(std::trunc(x), lo, hi);
  };
  switch (to) {
    case DType::i32: return saturate(v, -2147483648.0, 2147483647.0);
    case DType::i8: return saturate(v, -128, 127);
    case DType::u8: return saturate(v, 0, 255);
    case DType::u32: return saturate(v, 0, 4294967295.0);
    case DType::boolean: return v != 0 ? 1 : 0;
    case DType::f16: return half_to_float(float_to_half(static_cast<float>(v)));
    case DType::bf16: return bf16_to_float(float_to_bf16(static_cast<float>(v)));
    case DType::f32: return static_cast<float>(v);
  }
  return NAN;
}

// A bool tensor from a caller may hold other bytes than 0 and 1; any non-zero byte is true.
TEST(Cast, AnyNonZeroBoolByteIsTrue) {
  Tensor t(DType::boolean, {4});
  const std::uint8_t bytes[] = {0, 1, 2, 255};
  for (int i = 0; i < 4; ++i) t.data<std::uint8_t>()[i] = bytes[i];
  for (const DType to : {DType::f32, DType::i32, DType::u8, DType::boolean}) {
    ir::Builder b("cast");
    b.output(b.cast(b.input("x", DType::boolean, {4}), to));
    exec::CpuExecutor ex(b.finish(), {Numerics::f32, 1});
    expect_equal(ex.run({{"x", t}}).at(0), {4}, {0, 1, 1, 1}, cat("cast bool -> ", dtype_name(to)));
  }
}

TEST(Cast, EveryPairOfDtypes) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> specials = {0.0f,  -0.0f, 0.5f,   -0.5f,  2.7f,   -2.7f,  127.9f, -128.9f,
                                       255.5f, 300.0f, -300.0f, 1e10f, -1e10f, 3.14159f, nan,   1.0f};
  const DType all[] = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i8, DType::u8, DType::boolean};
  std::uint64_t seed = 6500;
  for (const DType from : all) {
    for (const DType to : all) {
      for (const Shape& s : {Shape{16}, Shape{4, 1, 4}, Shape{300, 257}}) {
        Rng rng(seed++);
        Input x{"x", s, {}, from};
        const auto n = static_cast<std::size_t>(shape_numel(s));
        // Values the source dtype can hold: floats (specials first), integers in range, bools.
        for (std::size_t i = 0; i < n; ++i) {
          float v = i < specials.size() ? specials[i] : rng.uniform(-400, 400);
          if (from == DType::i32) v = std::isnan(v) ? 7.0f : std::clamp(std::trunc(v) * 1000, -2e9f, 2e9f);
          if (from == DType::i8) v = std::isnan(v) ? -7.0f : std::clamp(std::trunc(v), -128.0f, 127.0f);
          if (from == DType::u8) v = std::isnan(v) ? 7.0f : std::clamp(std::trunc(v), 0.0f, 255.0f);
          if (from == DType::boolean) v = v > 0 ? 1.0f : 0.0f;
          x.values.push_back(v);
        }
        ir::Builder b("cast");
        const ir::Value in = b.input("x", from, s);
        b.output(b.cast(in, to));
        const ir::Graph g = b.finish();
        // Integer and bool inputs are bound as such; float ones as f32 (rounded when bound to
        // their declared dtype).
        Tensor bound;
        if (is_float(from)) {
          bound = Tensor::from_floats(s, x.values);
        } else {
          bound = Tensor::from_floats(s, x.values).to(from);
        }
        const std::string what = cat("cast ", dtype_name(from), " -> ", dtype_name(to), " ", str(s));
        for (Numerics m : kModes) {
          std::vector<double> ref(n);
          for (std::size_t i = 0; i < n; ++i) {
            double v = x.values[i];
            if (from == DType::bf16) v = bf16_to_float(float_to_bf16(static_cast<float>(v)));
            if (from == DType::f16 || (is_float(from) && m == Numerics::f16)) v = half_to_float(float_to_half(static_cast<float>(v)));
            ref[i] = cast_ref(v, to);
            if (to == DType::bf16 && m == Numerics::f16) ref[i] = cast_ref(ref[i], DType::f16);
            if (to == DType::f32 && m == Numerics::f16) ref[i] = cast_ref(ref[i], DType::f16);
          }
          exec::CpuExecutor ex(g, {m, test_threads(shape_numel(s))});
          const Tensor got = ex.run({{"x", bound}}).at(0);
          EXPECT_EQ(got.dtype(), to) << what;
          expect_equal(got, s, ref, cat(what, " [", mode_str(m), "]"));
        }
      }
    }
  }
}

}  // namespace
}  // namespace orion::test
