// engine::make_decoder and engine::DeviceRun: the engine a model folder runs on (fast, graph,
// ane-sim through a package compiled into the package cache), and their logits agreeing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "engine/decoder_factory.h"
#include "compile/ane/ane_package.h"
#include "engine/model_package.h"
#include "model/formats/safetensors.h"
#include "model/gpt2/gpt2_model.h"
#include "text/bpe_tokenizer.h"

namespace orion::engine {
namespace {

class DecoderFactoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The package cache and the emulator's programs inside the test's folder.
    setenv("ORION_CACHE_DIR", dir_.file("cache").c_str(), 1);
    model::Gpt2Config c;
    c.n_embd = 64; c.n_layer = 1; c.n_head = 2; c.n_positions = 64; c.vocab_size = 257; c.eos_token_id = 256;
    const TensorMap w = model::gpt2_init_weights(c, 3);
    std::vector<std::pair<std::string, Tensor>> tensors(w.begin(), w.end());
    model::write_safetensors(dir_.file(model::kWeightsFile), tensors, {});
    std::ofstream(dir_.file(model::kConfigFile)) << model::gpt2_config_json(c);
    text::BpeTokenizer::byte_level().save(dir_.path());
    folder_ = std::make_unique<model::ModelFolder>(model::ModelFolder::load(dir_.path()));
  }
  void TearDown() override { unsetenv("ORION_CACHE_DIR"); }
  ChosenDecoder make(const DecoderOptions& o) {
    return make_decoder(*folder_, o, [this](const std::string& line) { said_.push_back(line); });
  }
  testing_util::TempDir dir_;
  std::unique_ptr<model::ModelFolder> folder_;
  std::vector<std::string> said_;
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

TEST_F(DecoderFactoryTest, TheFastDecoderIsTheDefaultAndAgreesWithTheGraphEngine) {
  ChosenDecoder fast = make({});
  EXPECT_EQ(fast.kind, EngineKind::fast);
  EXPECT_EQ(fast.weights, "f32");
  EXPECT_GT(fast.packed_bytes, 0u);
  DecoderOptions g;
  g.graph = true;
  ChosenDecoder graph = make(g);
  EXPECT_EQ(graph.kind, EngineKind::graph);
  const std::vector<std::int32_t> prompt = {5, 9, 17};
  EXPECT_LT(max_abs_diff(fast.decoder->prefill(prompt), graph.decoder->prefill(prompt)), 1e-3);
  EXPECT_LT(max_abs_diff(fast.decoder->decode(3), graph.decoder->decode(3)), 1e-3);
}

TEST_F(DecoderFactoryTest, F16NumericsMeanTheGraphEngine) {
  DecoderOptions o;
  o.numerics = exec::Numerics::f16;
  EXPECT_EQ(make(o).kind, EngineKind::graph);
}

TEST_F(DecoderFactoryTest, AneSimCompilesIntoThePackageCacheOnceAndAgreesWithTheCpu) {
  DecoderOptions o;
  o.device = runtime::DeviceKind::ane_sim;
  o.threads = 2;
  o.run.pkg.seq = 16;
  const std::vector<std::int32_t> prompt = {5, 9, 17};
  std::vector<float> device_logits;
  {
    ChosenDecoder d = make(o);
    ASSERT_EQ(d.kind, EngineKind::device);
    ASSERT_TRUE(d.run);
    device_logits = d.decoder->prefill(prompt);
    EXPECT_NE(d.run->profile().find("ane-sim: "), std::string::npos);
  }
  // The package line, then what the KV cache costs.
  ASSERT_EQ(said_.size(), 2u);
  EXPECT_NE(said_[0].find("package cache miss"), std::string::npos) << said_[0];
  EXPECT_NE(said_[1].find("ane-sim: KV cache of "), std::string::npos) << said_[1];
  make(o);
  ASSERT_EQ(said_.size(), 4u);
  EXPECT_NE(said_[2].find("package cache hit"), std::string::npos) << said_[2];
  DecoderOptions g;
  g.graph = true;
  const std::vector<float> cpu = make(g).decoder->prefill(prompt);
  EXPECT_LT(max_abs_diff(device_logits, cpu), 0.05);
}

// A package with more kernels than the process may still compile is refused before the first
// compile, naming what would fit: the prompt on the device alone, or nothing.
TEST_F(DecoderFactoryTest, APackageOverTheCompileBudgetIsRefusedUpFrontWithWhatWouldFit) {
  DecoderOptions o;
  o.device = runtime::DeviceKind::ane_sim;
  o.threads = 2;
  o.run.pkg.seq = 16;
  make(o);  // compiles the package into the cache, and runs within the default budget
  ASSERT_EQ(said_.size(), 2u);  // the package, the KV cache
  const std::string pkg = said_[0].substr(said_[0].find(dir_.file("cache")));
  const int total = [&] {
    int n = 0;
    for (const auto& p : compile::read_manifest(pkg.substr(0, pkg.find(' '))).programs)
      for (const auto& s : p.steps) n += s.placement == compile::Placement::ane;
    return n;
  }();
  ASSERT_GE(total, 2);
  // A budget of `total` kernels, less the reserve: one short of the whole package.
  o.run.device_budget = total;
  try {
    make(o);
    FAIL() << "a package of " << total << " kernels ran within a budget of " << total;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernels, more than the"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("compiles this process has left (ANE030)"), std::string::npos) << e.what();
  }
}

TEST(ModelPackage, TheKeyMovesWithTheOptionsThatShapeThePackage) {
  model::Gpt2Config c;
  c.n_embd = 32; c.n_layer = 1; c.n_head = 2; c.n_positions = 32; c.vocab_size = 64; c.eos_token_id = 63;
  const model::Gpt2Model m = model::Gpt2Model::from_weights(c, model::gpt2_init_weights(c, 1), "test");
  AnePackageOptions a, b;
  b.seq = 64;
  EXPECT_EQ(package_key(m, a), package_key(m, a));
  EXPECT_NE(package_key(m, a), package_key(m, b));
}

}  // namespace
}  // namespace orion::engine
