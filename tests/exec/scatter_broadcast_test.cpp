// scatter_add (gather's adjoint, repeated indices adding up) and broadcast_to against fp64
// references written here.
#include <cmath>

#include "core/error.h"
#include "exec/op_test_util.h"

namespace orion::test {
namespace {

using ir::Op;

[[maybe_unused]] const bool kScatterBroadcastRegistered = mark_tested({Op::scatter_add, Op::broadcast_to});

struct ScatterCase {
  Shape updates;  // outer..., indices..., inner...
  std::size_t axis, index_rank;
  std::int64_t size;
};

TEST(Scatter, AddsEveryUpdateAtItsIndex) {
  // Repeated indices, every axis, and one large enough for the parallel path.
  const ScatterCase cases[] = {{{4, 3}, 0, 1, 5}, {{2, 3, 4}, 0, 2, 3}, {{2, 6, 3}, 1, 1, 4}, {{3, 5}, 1, 1, 2},
                               {{300, 768}, 0, 1, 40}};
  std::uint64_t seed = 70;
  for (const ScatterCase& c : cases) {
    Rng rng(seed++);
    const Input upd = float_input(rng, "upd", c.updates, -2, 2);
    const Shape is(c.updates.begin() + static_cast<std::ptrdiff_t>(c.axis),
                   c.updates.begin() + static_cast<std::ptrdiff_t>(c.axis + c.index_rank));
    Input idx{"idx", is, {}, DType::i32};
    for (std::int64_t j = 0; j < shape_numel(is); ++j) idx.values.push_back(static_cast<float>(rng.below(static_cast<std::uint64_t>(c.size))));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < c.axis; ++d) outer *= c.updates[d];
    for (std::size_t d = c.axis + c.index_rank; d < c.updates.size(); ++d) inner *= c.updates[d];
    Shape out(c.updates.begin(), c.updates.begin() + static_cast<std::ptrdiff_t>(c.axis));
    out.push_back(c.size);
    out.insert(out.end(), c.updates.begin() + static_cast<std::ptrdiff_t>(c.axis + c.index_rank), c.updates.end());
    const std::int64_t n = shape_numel(is);
    for (Numerics m : kModes) {
      const std::vector<double> u = upd.stored(m);
      std::vector<double> ref(static_cast<std::size_t>(shape_numel(out)), 0.0), scale(ref.size(), 0.0);
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t i = 0; i < inner; ++i) {
            const auto at = static_cast<std::size_t>((o * c.size + static_cast<std::int64_t>(idx.values[static_cast<std::size_t>(j)])) * inner + i);
            ref[at] += u[static_cast<std::size_t>((o * n + j) * inner + i)];
            scale[at] += std::fabs(u[static_cast<std::size_t>((o * n + j) * inner + i)]);
          }
      const auto axis = static_cast<std::int64_t>(c.axis);
      const Tensor got = run_op({upd, idx}, [&](ir::Builder& b, const auto& v) { return b.scatter_add(v[0], v[1], c.size, axis); }, m);
      expect_close(got, out, ref, m, cat("scatter_add ", str(c.updates), " axis ", c.axis, " ", mode_str(m)),
                   {.growth = static_cast<double>(n), .scale = &scale});
    }
  }
}

TEST(Scatter, RejectsOutOfRangeIndices) {
  const Input upd{"upd", {2, 3}, std::vector<float>(6, 1.0f)};
  const Input idx{"idx", {2}, {0.0f, 7.0f}, DType::i32};
  try {
    run_op({upd, idx}, [](ir::Builder& b, const auto& v) { return b.scatter_add(v[0], v[1], 4); }, Numerics::f32);
    ADD_FAILURE() << "index 7 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(scatter_add): index 7 (at position 1) is outside [0, 4)"), std::string::npos) << e.what();
  }
}

TEST(Broadcast, RepeatsAlongNewAndUnitAxes) {
  const std::pair<Shape, Shape> cases[] = {{{}, {2, 3}}, {{3, 1}, {2, 3, 4}}, {{1, 4}, {3, 4}}, {{5}, {5}}, {{1, 257}, {301, 257}}};
  std::uint64_t seed = 90;
  for (const auto& [from, to] : cases) {
    Rng rng(seed++);
    const Input x = float_input(rng, "x", from, -2, 2);
    for (Numerics m : kModes) {
      const std::vector<double> xv = x.stored(m);
      std::vector<double> ref;
      for (std::int64_t i = 0; i < shape_numel(to); ++i) ref.push_back(xv[static_cast<std::size_t>(broadcast_source(unravel(i, to), from))]);
      const std::vector<std::int64_t> dims(to.begin(), to.end());
      const Tensor got = run_op({x}, [&](ir::Builder& b, const auto& v) { return b.broadcast_to(v[0], dims); }, m);
      expect_close(got, to, ref, m, cat("broadcast_to ", str(from), " -> ", str(to), " ", mode_str(m)));
    }
  }
}

}  // namespace
}  // namespace orion::test
