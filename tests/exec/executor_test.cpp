// The CPU executor as a whole: binding errors, storage precision of f16/bf16 values, multi-op
// graphs against fp64 references, independence of outputs across runs, and op coverage.
#include <cmath>

#include "core/error.h"
#include "exec/cpu/kernels.h"
#include "exec/op_test_util.h"

namespace orion::test {
namespace {

using exec::CpuExecutor;
using ir::Builder;
using ir::Value;

std::string error_of(CpuExecutor& ex, const TensorMap& b) {
  try {
    ex.run(b);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

Tensor filled(const Shape& s, float v) {
  return Tensor::from_floats(s, std::vector<float>(static_cast<std::size_t>(shape_numel(s)), v));
}

TEST(Executor, EveryOpOfTheTableIsTestedAndHasAKernel) {
  for (const ir::OpInfo& info : ir::all_ops()) {
    if (info.cls == ir::OpClass::source) {
      EXPECT_THROW(exec::cpu::kernel_for(info.op), Error) << info.name;
      continue;
    }
    EXPECT_NE(exec::cpu::kernel_for(info.op), nullptr) << info.name;
    EXPECT_TRUE(tested_ops().count(info.op)) << "op " << info.name << " has no test against a reference";
  }
}

TEST(Executor, UnboundInputOrParamIsNamed) {
  Builder b;
  const Value x = b.input("tokens_in", DType::f32, {2, 3});
  const Value w = b.param("layer0.weight", DType::f32, {3, 4});
  b.output(b.matmul(x, w));
  CpuExecutor ex(b.finish());
  std::string msg = error_of(ex, {{"layer0.weight", filled({3, 4}, 1)}});
  EXPECT_NE(msg.find("%tokens_in"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not bound"), std::string::npos) << msg;
  msg = error_of(ex, {{"tokens_in", filled({2, 3}, 1)}, {"layer0.weigth", filled({3, 4}, 1)}});
  EXPECT_NE(msg.find("%layer0.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not bound"), std::string::npos) << msg;
}

TEST(Executor, WrongShapeOrDtypeIsNamedWithBothTypes) {
  Builder b;
  const Value x = b.input("x", DType::f32, {2, 3});
  b.output(b.relu(x));
  CpuExecutor ex(b.finish());
  std::string msg = error_of(ex, {{"x", filled({3, 2}, 1)}});
  EXPECT_NE(msg.find("%x"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 2]"), std::string::npos) << msg;
  msg = error_of(ex, {{"x", Tensor::from_ints({2, 3}, std::vector<std::int32_t>(6, 1))}});
  EXPECT_NE(msg.find("%x"), std::string::npos) << msg;
  EXPECT_NE(msg.find("i32"), std::string::npos) << msg;
  // Any float dtype binds to a float input.
  EXPECT_NO_THROW(ex.run({{"x", filled({2, 3}, 1).to(DType::f16)}}));
}

float to_half(float v) { return half_to_float(float_to_half(v)); }
float to_bf16(float v) { return bf16_to_float(float_to_bf16(v)); }

// Values declared f16 or bf16 are rounded when bound and when written, in f32 numerics too; in
// f16 numerics every float value is.
TEST(Executor, HalfAndBf16ValuesAreRoundedWhereStored) {
  Rng rng(11);
  const Shape s{257};
  const std::vector<float> xv = random_floats(rng, 257, -3, 3);
  Builder b;
  const Value xb = b.input("xb", DType::bf16, s);
  const Value xh = b.input("xh", DType::f16, s);
  const Value xf = b.input("xf", DType::f32, s);
  b.output(b.add(b.mul(xb, xb), xb));  // bf16
  b.output(b.add(b.mul(xh, xh), xh));  // f16
  b.output(b.add(b.mul(xf, xf), xf));  // f32
  b.output(xh);                        // a source as output
  const ir::Graph g = b.finish();
  const Tensor t = Tensor::from_floats(s, xv);
  const std::vector<float> before = t.to_floats();
  for (Numerics m : kModes) {
    CpuExecutor ex(g, {m, 0});
    const auto out = ex.run({{"xb", t}, {"xh", t}, {"xf", t}});
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[0].dtype(), DType::bf16);
    EXPECT_EQ(out[1].dtype(), DType::f16);
    EXPECT_EQ(out[2].dtype(), DType::f32);
    EXPECT_EQ(out[3].dtype(), DType::f16);
    const std::vector<float> ob = out[0].to_floats(), oh = out[1].to_floats(), of = out[2].to_floats(),
                             os = out[3].to_floats();
    int bad = 0;
    for (std::size_t i = 0; i < xv.size(); ++i) {
      // In f16 numerics a bf16 value is stored as bf16 and then as fp16.
      auto bf = [&](float v) { return m == Numerics::f16 ? to_half(to_bf16(v)) : to_bf16(v); };
      const float rb = bf(xv[i]);
      const float eb = bf(bf(rb * rb) + rb);  // the product of two bf16 values is exact in fp32
      const float rh = to_half(xv[i]);
      const float eh = to_half(to_half(rh * rh) + rh);
      const float rf = m == Numerics::f16 ? rh : xv[i];
      const float sq = rf * rf;  // separate statements: no fused multiply-add
      const float ef = m == Numerics::f16 ? eh : sq + rf;
      if (ob[i] != eb || oh[i] != eh || of[i] != ef || os[i] != rh) ++bad;
      if (bad == 1 && (ob[i] != eb || oh[i] != eh || of[i] != ef || os[i] != rh))
        ADD_FAILURE() << mode_str(m) << " element " << i << ": bf16 " << ob[i] << " vs " << eb << ", f16 "
                      << oh[i] << " vs " << eh << ", f32 " << of[i] << " vs " << ef << ", source " << os[i]
                      << " vs " << rh;
    }
    EXPECT_EQ(bad, 0) << mode_str(m);
  }
  EXPECT_EQ(t.to_floats(), before) << "the caller's tensor was rounded in place";
}

// A tiny MLP: gelu(x @ w1 + b1) @ w2 + b2.
struct Mlp {
  static constexpr std::int64_t kB = 5, kIn = 16, kHidden = 48, kOut = 7;
  ir::Graph graph;
  Mlp() {
    Builder b("mlp");
    const Value x = b.input("x", DType::f32, {kB, kIn});
    const Value h = b.gelu(b.add(b.matmul(x, b.param("w1", DType::f32, {kIn, kHidden})),
                                 b.param("b1", DType::f32, {kHidden})));
    b.output(b.add(b.matmul(h, b.param("w2", DType::f32, {kHidden, kOut})), b.param("b2", DType::f32, {kOut})));
    graph = b.finish();
  }
  static TensorMap random_bindings(std::uint64_t seed) {
    Rng rng(seed);
    auto t = [&](const Shape& s, float scale) {
      return Tensor::from_floats(s, random_floats(rng, shape_numel(s), -scale, scale));
    };
    return {{"x", t({kB, kIn}, 2)}, {"w1", t({kIn, kHidden}, 0.5f)}, {"b1", t({kHidden}, 0.5f)},
            {"w2", t({kHidden, kOut}, 0.5f)}, {"b2", t({kOut}, 0.5f)}};
  }
  // fp64 reference; with `half` every op's result is rounded to fp16 as the executor stores it.
  static std::vector<double> reference(const TensorMap& bind, bool half) {
    auto get = [&](const char* name) {
      std::vector<double> v;
      for (float f : bind.at(name).to_floats()) v.push_back(half ? to_half(f) : f);
      return v;
    };
    auto store = [&](double v) { return half ? static_cast<double>(to_half(static_cast<float>(v))) : v; };
    const auto x = get("x"), w1 = get("w1"), b1 = get("b1"), w2 = get("w2"), b2 = get("b2");
    const double pi = 3.14159265358979323846;
    std::vector<double> out;
    for (std::int64_t i = 0; i < kB; ++i) {
      std::vector<double> h(kHidden);
      for (std::int64_t j = 0; j < kHidden; ++j) {
        double s = 0;
        for (std::int64_t k = 0; k < kIn; ++k) s += x[static_cast<std::size_t>(i * kIn + k)] * w1[static_cast<std::size_t>(k * kHidden + j)];
        const double a = store(store(s) + b1[static_cast<std::size_t>(j)]);
        h[static_cast<std::size_t>(j)] = store(0.5 * a * (1 + std::tanh(std::sqrt(2 / pi) * (a + 0.044715 * a * a * a))));
      }
      for (std::int64_t j = 0; j < kOut; ++j) {
        double s = 0;
        for (std::int64_t k = 0; k < kHidden; ++k) s += h[static_cast<std::size_t>(k)] * w2[static_cast<std::size_t>(k * kOut + j)];
        out.push_back(store(store(s) + b2[static_cast<std::size_t>(j)]));
      }
    }
    return out;
  }
};

void expect_mlp_output(const Tensor& got, const TensorMap& bind, Numerics m, const std::string& what) {
  const std::vector<double> ref = Mlp::reference(bind, m == Numerics::f16);
  const std::vector<float> g = got.to_floats();
  ASSERT_EQ(got.shape(), (Shape{Mlp::kB, Mlp::kOut})) << what;
  // Outputs are O(1); fp32 errors stay near 1e-6, fp16 rounding of every intermediate (which
  // the reference repeats, but may round the other way at a boundary) near 1e-2.
  const double tol = m == Numerics::f16 ? 2e-2 : 2e-5;
  for (std::size_t i = 0; i < ref.size(); ++i)
    EXPECT_NEAR(g[i], ref[i], tol * (1 + std::fabs(ref[i]))) << what << " [" << mode_str(m) << "] element " << i;
}

TEST(Executor, TinyMlpMatchesReference) {
  const Mlp mlp;
  for (Numerics m : kModes) {
    CpuExecutor ex(mlp.graph, {m, 0});
    for (std::uint64_t seed : {1, 2, 3}) {
      const TensorMap bind = Mlp::random_bindings(seed);
      expect_mlp_output(ex.run(bind).at(0), bind, m, cat("mlp seed ", seed));
    }
  }
}

// The outputs of one run are the caller's: a later run reuses the executor's buffers but must
// not write into what an earlier run returned.
TEST(Executor, OutputsOfConsecutiveRunsAreIndependent) {
  Builder b;
  const Value x = b.input("x", DType::f32, {3, 40});
  const Value t1 = b.tanh(x);
  const Value t2 = b.sigmoid(t1);
  const Value t3 = b.mul(t2, x);
  const Value t4 = b.exp(t3);
  b.output(t2);  // an intermediate that is also read later
  b.output(b.add(t4, t1));
  b.output(x);   // a source
  CpuExecutor ex(b.finish());
  Rng rng(5);
  Tensor in1 = Tensor::from_floats({3, 40}, random_floats(rng, 120, -2, 2));
  const Tensor in2 = Tensor::from_floats({3, 40}, random_floats(rng, 120, -2, 2));
  auto expected = [](const Tensor& in) {
    std::vector<std::vector<double>> r(3);
    for (float v : in.to_floats()) {
      const double a = std::tanh(static_cast<double>(v)), s = 1 / (1 + std::exp(-a));
      r[0].push_back(s);
      r[1].push_back(std::exp(s * v) + a);
      r[2].push_back(v);
    }
    return r;
  };
  const auto want1 = expected(in1);
  const std::vector<Tensor> out1 = ex.run({{"x", in1}});
  std::vector<Tensor> out2 = ex.run({{"x", in2}});
  in1.span<float>()[0] = 1234.0f;  // the returned source is a copy
  const auto want2 = expected(in2);
  for (std::size_t k = 0; k < 3; ++k) {
    expect_close(out1[k], {3, 40}, want1[k], Numerics::f32, cat("run 1 output ", k));
    expect_close(out2[k], {3, 40}, want2[k], Numerics::f32, cat("run 2 output ", k));
    EXPECT_NE(out1[k].raw(), out2[k].raw());
  }
  // Outputs the caller released are recycled (the executor keeps their buffers); a third run
  // after releasing run 2's but holding run 1's must overwrite neither run 1's values nor
  // its own, and must give run 1's answer for run 1's input.
  const std::vector<const std::byte*> addresses2 = {out2[0].raw(), out2[1].raw()};
  out2.clear();
  const Tensor in3 = Tensor::from_floats({3, 40}, random_floats(rng, 120, -2, 2));
  const std::vector<Tensor> out3 = ex.run({{"x", in3}});
  const auto want3 = expected(in3);
  for (std::size_t k = 0; k < 3; ++k) {
    expect_close(out1[k], {3, 40}, want1[k], Numerics::f32, cat("run 1 output after run 3 ", k));
    expect_close(out3[k], {3, 40}, want3[k], Numerics::f32, cat("run 3 output ", k));
  }
  EXPECT_EQ(out3[0].raw(), addresses2[0]) << "a released output's buffer is reused";
  EXPECT_EQ(out3[1].raw(), addresses2[1]);
}

// Random graphs of elementwise ops over a few broadcastable shapes, many values alive at once:
// a memory plan that let two live values share a buffer would corrupt one of them.
TEST(Executor, RandomElementwiseGraphsMatchReference) {
  const Shape shapes[] = {{4, 9}, {9}, {4, 1}, {2, 4, 9}};
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    Rng rng(seed + 900);
    Builder b;
    struct Ref {
      Value v;
      Shape shape;
      std::vector<double> data;
    };
    std::vector<Ref> vals;
    TensorMap bind;
    for (int i = 0; i < 3; ++i) {
      const Shape s = shapes[rng.below(4)];
      const std::string name = cat("in", i);
      const std::vector<float> data = random_floats(rng, shape_numel(s), -1, 1);
      bind[name] = Tensor::from_floats(s, data);
      vals.push_back({b.input(name, DType::f32, s), s, std::vector<double>(data.begin(), data.end())});
    }
    const int n_ops = 10 + static_cast<int>(rng.below(30));
    for (int i = 0; i < n_ops; ++i) {
      // Mostly recent values, so that lifetimes are short and slots get reused.
      auto pick = [&]() -> const Ref& {
        const std::size_t n = vals.size();
        return vals[rng.uniform() < 0.7f ? n - 1 - rng.below(std::min<std::size_t>(n, 3)) : rng.below(n)];
      };
      const Ref& a = pick();
      const Ref& c = pick();
      Ref r;
      const auto kind = rng.below(5);
      if (kind < 3) {  // binary, broadcast
        Shape os = a.shape.size() >= c.shape.size() ? a.shape : c.shape;
        const std::size_t rnk = os.size();
        for (std::size_t d = 0; d < rnk; ++d) {
          const std::int64_t da = d + a.shape.size() >= rnk ? a.shape[d + a.shape.size() - rnk] : 1;
          const std::int64_t dc = d + c.shape.size() >= rnk ? c.shape[d + c.shape.size() - rnk] : 1;
          os[d] = std::max(da, dc);
        }
        r.shape = os;
        r.v = kind == 0 ? b.add(a.v, c.v) : kind == 1 ? b.sub(a.v, c.v) : b.mul(a.v, c.v);
        for (std::int64_t i2 = 0; i2 < shape_numel(os); ++i2) {
          const auto idx = unravel(i2, os);
          const double p = a.data[static_cast<std::size_t>(broadcast_source(idx, a.shape))];
          const double q = c.data[static_cast<std::size_t>(broadcast_source(idx, c.shape))];
          r.data.push_back(kind == 0 ? p + q : kind == 1 ? p - q : p * q);
        }
      } else {  // unary, keeps values bounded
        r.shape = a.shape;
        r.v = kind == 3 ? b.tanh(a.v) : b.sigmoid(a.v);
        for (double p : a.data) r.data.push_back(kind == 3 ? std::tanh(p) : 1 / (1 + std::exp(-p)));
      }
      vals.push_back(std::move(r));
    }
    std::vector<std::size_t> outs = {vals.size() - 1};
    for (int i = 0; i < 3; ++i) outs.push_back(3 + rng.below(vals.size() - 3));
    for (std::size_t o : outs) b.output(vals[o].v);
    CpuExecutor ex(b.finish());
    for (int run = 0; run < 2; ++run) {
      const auto got = ex.run(bind);
      for (std::size_t k = 0; k < outs.size(); ++k) {
        const Ref& r = vals[outs[k]];
        const std::vector<float> g = got[k].to_floats();
        ASSERT_EQ(got[k].shape(), r.shape);
        for (std::size_t i = 0; i < g.size(); ++i)
          ASSERT_NEAR(g[i], r.data[i], 1e-4 * (1 + std::fabs(r.data[i])))
              << "graph " << seed << " run " << run << " output " << k << " element " << i;
      }
    }
  }
}

// Tensors with a zero dimension run through every kind of kernel; a reduction over an empty
// axis gives the reduction's identity (sum 0, max -inf) and mean 0 / 0.
TEST(Executor, ZeroSizeTensors) {
  Builder b;
  const Value e = b.input("e", DType::f32, {0, 3});
  const Value z = b.input("z", DType::f32, {3, 0});
  const Value r = b.input("r", DType::f32, {3});
  b.output(b.exp(b.add(e, r)));
  b.output(b.softmax(z, 1));
  b.output(b.layer_norm(e, r, r));
  b.output(b.matmul(e, b.input("w", DType::f32, {3, 4})));
  b.output(b.concat({e, b.reshape(r, {1, 3})}, 0));
  b.output(b.reduce_sum(z, {1}));
  b.output(b.reduce_max(z, {1}, true));
  b.output(b.reduce_mean(z, {1}));
  b.output(b.gather(r, b.input("i", DType::i32, {0})));
  CpuExecutor ex(b.finish());
  const auto out = ex.run({{"e", Tensor(DType::f32, {0, 3})},
                           {"z", Tensor(DType::f32, {3, 0})},
                           {"r", Tensor::from_floats({3}, std::vector<float>{1, 2, 3})},
                           {"w", filled({3, 4}, 1)},
                           {"i", Tensor(DType::i32, {0})}});
  ASSERT_EQ(out.size(), 9u);
  EXPECT_EQ(out[0].shape(), (Shape{0, 3}));
  EXPECT_EQ(out[1].shape(), (Shape{3, 0}));
  EXPECT_EQ(out[2].shape(), (Shape{0, 3}));
  EXPECT_EQ(out[3].shape(), (Shape{0, 4}));
  EXPECT_EQ(out[4].to_floats(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(out[5].to_floats(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(out[6].shape(), (Shape{3, 1}));
  for (float v : out[6].to_floats()) EXPECT_EQ(v, -INFINITY);
  for (float v : out[7].to_floats()) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(out[8].shape(), (Shape{0}));
}

TEST(Executor, ThreadCountDoesNotChangeResults) {
  const Mlp mlp;
  const TensorMap bind = Mlp::random_bindings(9);
  CpuExecutor one(mlp.graph, {Numerics::f32, 1});
  CpuExecutor three(mlp.graph, {Numerics::f32, 3});
  EXPECT_EQ(one.run(bind).at(0).to_floats(), three.run(bind).at(0).to_floats());
}

// A kernel error leaves the executor usable.
TEST(Executor, RunsAgainAfterAKernelError) {
  Builder b;
  const Value t = b.input("t", DType::f32, {4, 2});
  const Value i = b.input("i", DType::i32, {3});
  b.output(b.relu(b.gather(b.tanh(t), i)));
  CpuExecutor ex(b.finish());
  const Tensor table = filled({4, 2}, 0.5f);
  const std::string msg = error_of(ex, {{"t", table}, {"i", Tensor::from_ints({3}, std::vector<std::int32_t>{0, 9, 1})}});
  EXPECT_NE(msg.find("(gather)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("9"), std::string::npos) << msg;
  const auto out = ex.run({{"t", table}, {"i", Tensor::from_ints({3}, std::vector<std::int32_t>{3, 0, 1})}});
  for (float v : out.at(0).to_floats()) EXPECT_FLOAT_EQ(v, std::tanh(0.5f));
}

}  // namespace
}  // namespace orion::test
