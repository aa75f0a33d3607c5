// The decode program's KV cache kept on the device (model/decoder_ane_package.h,
// runtime/package_session.h): attention over the cache runs in the ANE kernels, the cache stays
// in their fp16 input surfaces between steps and a step writes only its token's column. Checked
// against the CPU (also on the faithful device), against the old placement (attention on the
// host), and by what is packed per step.
#include <gtest/gtest.h>

#include <iostream>

#include "core/error.h"
#include "core/random.h"
#include "device/ane_packing.h"
#include "core/testing_temp_dir.h"
#include "model/gpt2_test_config.h"
#include "package_test_util.h"

namespace orion::runtime {
namespace {

using namespace testing;

model::Gpt2Config config() { return model::testing::small_gpt2_config(); }

int host_steps(const compile::PackageProgram& p) {
  int n = 0;
  for (const compile::PackageStep& s : p.steps) n += s.placement == compile::Placement::host;
  return n;
}

TEST(KvCacheOnDevice, DecodeMatchesTheCpuOnTheFaithfulDevice) {
  testing_util::TempDir dir;
  const model::Gpt2Config c = config();
  const TensorMap w = random_weights(c, 7);
  compile_package(c, w, {}, {.window = 48}, dir.path() + "/pkg");
  const Errors e = run_package(c, w, {}, 40, 32, dir.path() + "/pkg", /*faithful=*/true);
  std::cout << "[ info ] faithful ane-sim: rel L2 prefill " << e.prefill << ", decode " << e.decode << "\n";
  EXPECT_LT(e.prefill, 1e-2);
  EXPECT_LT(e.decode, 1e-2);
}

// Attention in the kernels: the decode program's host steps are the embedding lookup only, and
// only kernels read the cache; with host_attention every layer's attention is host work again.
TEST(KvCacheOnDevice, DecodeHasNoHostAttentionSegments) {
  testing_util::TempDir dir;
  const model::Gpt2Config c = config();
  const TensorMap w = random_weights(c, 7);
  compile_package(c, w, {}, {.window = 32}, dir.path() + "/dev");
  compile_package(c, w, {}, {.window = 32, .host_attention = true}, dir.path() + "/host");
  const compile::PackageManifest dev = compile::read_manifest(dir.path() + "/dev");
  const compile::PackageManifest host = compile::read_manifest(dir.path() + "/host");
  EXPECT_EQ(host_steps(dev.program("decode")), 1);  // the gather of the embeddings
  EXPECT_GE(host_steps(host.program("decode")), c.n_layer);
  EXPECT_EQ(dev.program("decode").session["capacity"], 96);  // 127 rounded down to 32 (ANE011)
  device::AneSim sim(device::AneSimOptions{});
  PackageRunner runner(dir.path() + "/dev", sim, 1);
  for (int l = 0; l < c.n_layer; ++l)
    for (const char* kv : {"past_k.", "past_v."}) EXPECT_TRUE(runner.kernels_only_read("decode", kv + std::to_string(l)));
  PackageRunner old(dir.path() + "/host", sim, 1);
  EXPECT_FALSE(old.kernels_only_read("decode", "past_k.0"));
  // The cache's kernel inputs are fixed-length [1, C, 1, capacity] surfaces, never padded.
  int fixed = 0;
  for (const compile::PackageStep& s : dev.program("decode").steps)
    for (const compile::KernelIoTensor& t : s.io.inputs)
      if (t.fixed) {
        ++fixed;
        EXPECT_EQ(t.padded[3], 96) << t.name;
      }
  EXPECT_EQ(fixed, 2 * c.n_layer);
  // A capacity the device's surfaces cannot hold unpadded is refused, naming the fix.
  try {
    compile_package(c, w, {}, {.window = 32, .capacity = 100}, dir.path() + "/bad");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 32"), std::string::npos) << e.what();
  }
  // A context too short for one bucket of slots keeps attention on the host by default (every
  // capacity works there), rather than refusing a small model.
  model::Gpt2Config tiny = c;
  tiny.n_positions = 16;
  compile_package(tiny, random_weights(tiny, 7), {}, {.window = 8}, dir.path() + "/short");
  const compile::PackageManifest short_ctx = compile::read_manifest(dir.path() + "/short");
  EXPECT_EQ(short_ctx.program("decode").session["capacity"], 15);
  EXPECT_GE(host_steps(short_ctx.program("decode")), c.n_layer);
}

struct StepBytes {
  std::int64_t per_step = 0;
  std::vector<Tensor> logits;
  Tensor k0;  // cache_rows("k.0") after the steps
};

// Bytes packed into kernel surfaces by each of `steps` decode steps after a prompt of 8.
StepBytes decode_bytes(const std::string& pkg, std::int64_t vocab, int steps) {
  device::AneSim sim(device::AneSimOptions{});
  PackageRunner runner(pkg, sim, 1);
  PackageSession session(runner);
  const std::vector<std::int32_t> tokens = random_tokens(8 + steps, vocab, 3);
  session.prefill(std::span(tokens).first(8));
  StepBytes out;
  std::int64_t before = 0;
  for (int s = 0; s < steps; ++s) {
    out.logits.push_back(session.decode(tokens[static_cast<std::size_t>(8 + s)]));
    const std::int64_t now = runner.stats().packed_bytes;
    if (s > 0) {  // the first step also packs the prefill's rows into the resident surfaces
      if (s > 1) {
        EXPECT_EQ(now - before, out.per_step) << pkg << " step " << s;
      }
      out.per_step = now - before;
    }
    before = now;
  }
  out.k0 = session.cache_rows("k.0");
  return out;
}

TEST(KvCacheOnDevice, AStepPacksNoCacheAndTheCacheStaysInTheSurfaces) {
  testing_util::TempDir dir;
  const model::Gpt2Config c = config();
  const TensorMap w = random_weights(c, 7);
  compile_package(c, w, {}, {.window = 32, .capacity = 64}, dir.path() + "/small");
  compile_package(c, w, {}, {.window = 32, .capacity = 96}, dir.path() + "/large");
  compile_package(c, w, {}, {.window = 32, .capacity = 96, .host_attention = true}, dir.path() + "/host");
  const StepBytes small = decode_bytes(dir.path() + "/small", c.vocab_size, 4);
  const StepBytes large = decode_bytes(dir.path() + "/large", c.vocab_size, 4);
  const StepBytes host = decode_bytes(dir.path() + "/host", c.vocab_size, 4);
  std::cout << "[ info ] fp16 bytes packed per decode step: capacity 64 " << small.per_step << ", 96 " << large.per_step
            << ", 96 with host attention " << host.per_step << "\n";
  // On the device a step packs exactly the decode kernels' token-major inputs (the token's
  // activations and the host's mask); the fixed-length cache inputs are never packed.
  const auto packed_per_step = [](const std::string& pkg, bool fixed) {
    std::int64_t bytes = 0;
    const compile::PackageManifest m = compile::read_manifest(pkg);  // alive while its steps are read
    for (const compile::PackageStep& s : m.program("decode").steps)
      for (const compile::KernelIoTensor& t : s.io.inputs) bytes += t.fixed == fixed ? t.bytes : 0;
    return bytes;
  };
  EXPECT_EQ(small.per_step, packed_per_step(dir.path() + "/small", false));
  EXPECT_EQ(large.per_step, packed_per_step(dir.path() + "/large", false));
  const std::int64_t caches = packed_per_step(dir.path() + "/large", true);
  EXPECT_EQ(caches, 2 * c.n_layer * 96 * 256 * 2);  // 64 channels widened to 49,152 / (96 * 2) = 256 (ANE012)
  // The old way packs every cache, every step.
  EXPECT_GT(host.per_step, large.per_step + 2 * c.n_layer * 96 * c.n_embd * 2);
  // The same logits and cache either way, to the fp16 rounding of different kernel boundaries.
  for (std::size_t s = 0; s < large.logits.size(); ++s)
    EXPECT_LT(model::testing::rel_l2(host.logits[s].to_floats(), large.logits[s].to_floats()), 1e-2) << s;
  ASSERT_EQ(large.k0.shape(), (Shape{12, c.n_embd}));
  EXPECT_EQ(large.k0.shape(), host.k0.shape());
  EXPECT_LT(model::testing::rel_l2(host.k0.to_floats(), large.k0.to_floats()), 1e-2);
}

// ane-sim evaluates a decode kernel with attention over the cache on its one live token
// (device/ane_live_columns.h: the cache inputs are shared, read whole): the live column of every
// output is the full evaluation's, bit for bit, whatever the padding columns hold.
TEST(KvCacheOnDevice, TheSimulatorEvaluatesOnlyTheLiveTokenWithTheFullEvaluationsBits) {
  testing_util::TempDir dir;
  const model::Gpt2Config c = config();
  compile_package(c, random_weights(c, 7), {}, {.window = 32}, dir.path() + "/pkg");
  const compile::PackageManifest m = compile::read_manifest(dir.path() + "/pkg");
  device::AneSim sim(device::AneSimOptions{});
  Rng rng(5);
  int kernels = 0;
  for (const compile::PackageStep& s : m.program("decode").steps) {
    if (s.placement != compile::Placement::ane) continue;
    ++kernels;
    const device::AneProgramId id = sim.compile(dir.path() + "/pkg/" + s.name);
    sim.load(id);
    EXPECT_EQ(sim.live_column_width(id), s.io.padded_seq) << s.name;
    std::vector<device::AneSurface> ins, full, live;
    for (const compile::KernelIoTensor& t : s.io.inputs) {
      std::vector<float> v(static_cast<std::size_t>(shape_numel(t.padded)));
      rng.fill_uniform(v, -1.0f, 1.0f);  // padding columns too: the live token must not read them
      ins.emplace_back(static_cast<std::size_t>(s.io.input_bytes));
      device::pack_fp16(Tensor::from_floats(t.padded, v), ins.back());
    }
    for (std::size_t i = 0; i < s.io.outputs.size(); ++i) {
      full.emplace_back(static_cast<std::size_t>(s.io.output_bytes));
      live.emplace_back(static_cast<std::size_t>(s.io.output_bytes));
    }
    std::vector<const device::AneSurface*> in_ptrs;
    for (const device::AneSurface& x : ins) in_ptrs.push_back(&x);
    std::vector<device::AneSurface*> full_ptrs, live_ptrs;
    for (std::size_t i = 0; i < full.size(); ++i) {
      full_ptrs.push_back(&full[i]);
      live_ptrs.push_back(&live[i]);
    }
    sim.evaluate(id, in_ptrs, full_ptrs);
    sim.evaluate_live(id, in_ptrs, live_ptrs, 1);
    for (std::size_t o = 0; o < s.io.outputs.size(); ++o) {
      const compile::KernelIoTensor& t = s.io.outputs[o];
      const Tensor a = device::unpack_token_major(full[o], t.logical[1], 1, s.io.padded_seq);
      const Tensor b = device::unpack_token_major(live[o], t.logical[1], 1, s.io.padded_seq);
      EXPECT_EQ(a.to_floats(), b.to_floats()) << s.name << " " << t.name;
    }
  }
  EXPECT_GT(kernels, 0);
}

}  // namespace
}  // namespace orion::runtime
