#pragma once
// Shared by the IR transform tests and the ANE pass tests (tests/compile/passes_test_util.h): graphs from IR text, a pass applied and its result printed, and
// numerical comparison of two graphs on the CPU executor with seeded random bindings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/random.h"
#include "exec/cpu/executor.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace orion::ir::testing {

inline ir::Graph parse(std::string_view text) { return ir::parse_graph(text, "test"); }

// `pass` applied to the graph `before`, which must then verify; `changed` receives the pass's
// answer. Returns the printed result.
template <class F> std::string run_pass(std::string_view before, F&& pass, bool* changed = nullptr) {
  ir::Graph g = parse(before);
  const bool c = pass(g);
  if (changed) *changed = c;
  const auto problems = ir::check_graph(g);
  EXPECT_TRUE(problems.empty()) << problems.front() << "\n" << ir::print_graph(g);
  return ir::print_graph(g);
}

// Expected text must itself be a valid graph written in the printer's canonical form, so that
// a typo in a test shows up as such and not as a pass failure.
inline void expect_text(const std::string& got, std::string_view want) {
  EXPECT_EQ(ir::print_graph(parse(want)), want) << "the expected text is not canonical";
  EXPECT_EQ(got, want);
}

// Random values for every float input and param of `g` (uniform in [lo, hi)); i32 inputs get
// zeros.
inline TensorMap random_bindings(const ir::Graph& g, std::uint64_t seed, float lo = -3,
                                      float hi = 3) {
  Rng rng(seed);
  TensorMap b;
  for (const ir::Node& n : g.nodes()) {
    if (n.op != ir::Op::input && n.op != ir::Op::param) continue;
    Tensor t(n.type.dtype == DType::i32 ? DType::i32 : DType::f32, n.type.shape);
    if (t.dtype() == DType::f32) rng.fill_uniform(t.span<float>(), lo, hi);
    b.emplace(n.name, std::move(t));
  }
  return b;
}

inline std::vector<Tensor> run(const ir::Graph& g, const TensorMap& b,
                               exec::Numerics numerics = exec::Numerics::f32) {
  exec::CpuExecutor ex(g, {numerics, 2});
  return ex.run(b);
}

// The largest error of `got` against `want` over all outputs, each element's error measured
// relative to max(|want|, floor): relative for values of magnitude above `floor`, absolute
// (scaled by 1/floor) below it, where a relative error means nothing.
inline double max_rel_error(const std::vector<Tensor>& want, const std::vector<Tensor>& got,
                            double floor) {
  EXPECT_EQ(want.size(), got.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    EXPECT_EQ(want[i].shape(), got[i].shape()) << "output " << i;
    if (want[i].shape() != got[i].shape()) return INFINITY;
    const std::vector<float> a = want[i].to_floats(), b = got[i].to_floats();
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (std::isnan(a[k]) != std::isnan(b[k])) return INFINITY;
      if (std::isnan(a[k])) continue;
      const double err = std::fabs(static_cast<double>(a[k]) - b[k]) /
                         std::max(std::fabs(static_cast<double>(a[k])), floor);
      worst = std::max(worst, err);
    }
  }
  return worst;
}

}  // namespace orion::ir::testing
