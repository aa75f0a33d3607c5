#pragma once
// One GPT-2 block with weights and an input, for the tests that compile it for the ANE and run
// it (tests/compile, tests/device): GPT-2's initialisation with biases and gains moved away
// from 0 and 1 so that every term counts, x uniform in [-1, 1).
#include <cstdint>
#include <map>
#include <string>

#include "core/random.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "model/gpt2/gpt2_block.h"

namespace orion::model::testing {

struct Gpt2BlockFixture {
  ir::Graph graph;
  std::map<std::string, Tensor, std::less<>> params;
  Tensor x;  // [seq, dim]

  // The graph's inputs by name: the params and x.
  std::map<std::string, Tensor, std::less<>> inputs() const {
    auto in = params;
    in.emplace("x", x);
    return in;
  }
};

inline Gpt2BlockFixture make_gpt2_block_fixture(const Gpt2BlockShape& shape, std::uint64_t seed) {
  Gpt2BlockFixture b{gpt2_block_graph(shape), {}, {}};
  Rng rng(seed);
  for (auto& [name, t] : gpt2_init_params(b.graph, 1, rng)) b.params.emplace(name, t);
  for (auto& [name, t] : b.params) {
    if (name.ends_with(".bias")) rng.fill_uniform(t.span<float>(), -0.1f, 0.1f);
    else if (t.rank() == 1) rng.fill_uniform(t.span<float>(), 0.5f, 1.5f);
  }
  b.x = Tensor(DType::f32, {shape.seq, shape.dim});
  rng.fill_uniform(b.x.span<float>(), -1, 1);
  return b;
}

}  // namespace orion::model::testing
