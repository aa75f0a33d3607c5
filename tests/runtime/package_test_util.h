#pragma once
// Shared by the package tests: random GPT-2 weights and tokens, the CPU reference, a compiled
// package of any model run on ane-sim (prefill, then teacher-forced decode steps) against it,
// and the MIL round trip of every kernel of a package.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compile/ane/ane_package_writer.h"
#include "compile/mil/mil_to_ir.h"
#include "compile/mil/mil_writer.h"
#include "core/random.h"
#include "exec/cpu/executor.h"
#include "model/gpt2/gpt2.h"
#include "model/decoder_ane_package.h"
#include "model/gpt2/gpt2_block.h"
#include "model/gpt2/gpt2_model.h"
#include "model/rel_error.h"
#include "device/ane_sim.h"
#include "runtime/package_session.h"

namespace orion::runtime::testing {

namespace fs = std::filesystem;

inline TensorMap random_weights(const model::Gpt2Config& c, std::uint64_t seed) {
  Rng rng(seed);
  const ir::Graph g = model::gpt2_graph(c, {.seq = 1});
  TensorMap w;
  for (auto& [name, t] : model::gpt2_init_params(g, static_cast<int>(c.n_layer), rng)) w.emplace(name, t);
  // Non-trivial norms and biases, so that a dropped bias or a swapped gain shows.
  for (auto& [name, t] : w) {
    if (name.ends_with(".bias")) rng.fill_uniform(t.span<float>(), -0.1f, 0.1f);
    else if (t.rank() == 1) rng.fill_uniform(t.span<float>(), 0.5f, 1.5f);
  }
  return w;
}

inline std::vector<std::int32_t> random_tokens(std::int64_t n, std::int64_t vocab, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::int32_t> t(static_cast<std::size_t>(n));
  for (auto& x : t) x = static_cast<std::int32_t>(rng.next_u64() % static_cast<std::uint64_t>(vocab));
  return t;
}

// Logits of every position of `tokens` on the CPU executor, f32: the reference.
inline Tensor reference_logits(const model::CausalLm& m, const std::vector<std::int32_t>& tokens) {
  const auto n = static_cast<std::int64_t>(tokens.size());
  TensorMap b = m.weights();
  b["tokens"] = Tensor::from_ints({n}, tokens);
  std::vector<std::int32_t> pos(tokens.size());
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(i);
  b["positions"] = Tensor::from_ints({n}, pos);
  return exec::CpuExecutor(m.decoding_graph(n, 0, false), {exec::Numerics::f32, 2}).run(b)[0];
}

struct Errors {
  double prefill = 0, decode = 0;
};

// Prefill of `prompt` tokens and `steps` decode steps on ane-sim, of the package in `dir`
// compiled from `m`.
inline Errors run_package(const model::CausalLm& m, const compile::PackageOptions& po, std::int64_t prompt, int steps,
                          const std::string& dir, bool faithful = false) {
  const std::vector<std::int32_t> tokens = random_tokens(prompt + steps, m.vocab_size(), 11);
  const Tensor want = reference_logits(m, tokens);

  device::AneSimOptions so;
  so.target = po.target;
  so.threads = 2;
  so.faithful = faithful;
  device::AneSim sim(so);
  PackageRunner runner(dir, sim, 2);
  PackageSession session(runner);
  const Tensor pre = session.prefill(std::span(tokens).first(static_cast<std::size_t>(prompt)));
  Errors e;
  e.prefill = model::testing::rel_l2(want.slice(0, 0, prompt).contiguous().to_floats(), pre.to_floats());
  std::vector<float> got, ref;
  for (int s = 0; s < steps; ++s) {
    const Tensor l = session.decode(tokens[static_cast<std::size_t>(prompt + s)]);
    for (float v : l.to_floats()) got.push_back(v);
    for (float v : want.slice(0, prompt + s, prompt + s + 1).contiguous().to_floats()) ref.push_back(v);
  }
  e.decode = steps > 0 ? model::testing::rel_l2(ref, got) : 0;
  // Each kernel compiled once, whatever the number of steps.
  EXPECT_EQ(sim.compiles(), runner.stats().compiles);
  return e;
}

inline Errors run_package(const model::Gpt2Config& c, const TensorMap& w, const compile::PackageOptions& po,
                          std::int64_t prompt, int steps, const std::string& dir, bool faithful = false) {
  return run_package(model::Gpt2Model::from_weights(c, TensorMap(w.begin(), w.end()), "test"), po, prompt, steps, dir,
                     faithful);
}

// Compiles `m` into `dir`.
inline void compile_package(const model::CausalLm& m, const compile::PackageOptions& po, const model::AnePackageShape& shape,
                            const std::string& dir) {
  compile::write_ane_package(model::ane_programs(m, shape), m.weights(), po, dir, model::package_model_info(m, "test"));
}

// Compiles GPT-2 with weights `w` into `dir`.
inline void compile_package(const model::Gpt2Config& c, const TensorMap& w, const compile::PackageOptions& po,
                            const model::AnePackageShape& shape, const std::string& dir) {
  compile::write_ane_package(model::gpt2_ane_programs(c, shape), w, po, dir, model::gpt2_package_model_info(c, "test"));
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// parse(print(g)) prints the same text, for every kernel of the package: the MIL text is read
// back through the parser (weights through the blob reader) and written again.
inline void expect_kernels_round_trip(const std::string& dir, compile::MilDialect dialect) {
  const compile::PackageManifest m = compile::read_manifest(dir);
  // M1/M2 packages have one weight file per tensor (ANE039).
  const bool per_tensor = m.target.m1_m2;
  int kernels = 0;
  for (const compile::PackageProgram& p : m.programs)
    for (const compile::PackageStep& s : p.steps) {
      if (s.placement != compile::Placement::ane) continue;
      const fs::path folder = fs::path(dir) / s.name;
      const std::string text = read_file(folder / "model.mil");
      compile::MilWriteOptions o;
      o.dialect = dialect;
      o.one_file_per_tensor = per_tensor;
      const compile::MilProgram again = compile::write_mil(compile::parse_mil(text, "model.mil", folder.string()), o);
      EXPECT_EQ(again.text, text) << s.name;
      if (!per_tensor) {
        EXPECT_EQ(again.weights.bytes().size(), fs::file_size(folder / "weights" / "weight.bin")) << s.name;
      }
      for (const auto& [path, w] : again.tensor_files)
        EXPECT_EQ(w.bytes().size(), fs::file_size(folder / path.substr(std::string("@model_path/").size()))) << path;
      ++kernels;
    }
  EXPECT_GT(kernels, 0);
}

}  // namespace orion::runtime::testing
