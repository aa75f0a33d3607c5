// MLX quantized folders (mlx-lm's layout: uint32 words, scales and biases per group) against an
// independent writer and reference: tests/reference/mlx_quantize.py writes the folder from the
// golden's float weights following MLX's own algorithm (numpy), and the golden logits come from
// llama_reference.py, which dequantizes the folder itself in float64 (make_golden.sh).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "error_of.h"
#include "exec/cpu/quantize_affine.h"
#include "model/formats/checkpoint.h"
#include "model/formats/mlx_quantization.h"
#include "model/formats/safetensors.h"
#include "model/golden_logits.h"
#include "model/llama/llama_model.h"
#include "model/llama_golden.h"
#include "engine/fast/fast_engine.h"
#include "model/any_model.h"

namespace orion::model {
namespace {

constexpr const char* kPythonForMlx = "/usr/bin/python3";  // Debian's, with python3-numpy

// The golden's float folder (f32, or bf16 as its config says) written into `dir`.
void write_float_folder(const LlamaConfig& c, std::uint64_t seed, const std::string& dir) {
  std::filesystem::create_directories(dir);
  const TensorMap w = llama_init_weights(c, seed);
  write_checkpoint(dir, {w.begin(), w.end()},
                   {.shards = 1, .dtype = c.torch_dtype == "bfloat16" ? DType::bf16 : DType::f32});
  std::ofstream(dir + "/config.json") << llama_config_json(c);
}

// mlx_quantize.py's options for the quantization a golden's config.json declares.
std::string quantize_options(const MlxQuantization& q) {
  std::string o = " --bits " + std::to_string(q.defaults.bits) + " --group " + std::to_string(q.defaults.group);
  for (const auto& [module, f] : q.modules)
    o += f ? " --module " + module + "=" + std::to_string(f->bits) + "/" + std::to_string(f->group) : " --keep " + module;
  return o;
}

void run_mlx_quantize(const std::string& src, const std::string& dst, const std::string& options) {
  const std::string cmd = std::string(kPythonForMlx) + " " + ORION_SOURCE_DIR + "/tests/reference/mlx_quantize.py " + src +
                          " " + dst + options + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// The golden's model as the folder mlx_quantize.py writes from its weights, loaded by Orion.
LlamaModel load_mlx_golden_model(const testing::GoldenLogits& g, const testing_util::TempDir& tmp) {
  const LlamaConfig c = llama_golden_config(g);
  EXPECT_TRUE(c.quantization.has_value());
  write_float_folder(c, g.seed, tmp.file("float"));
  run_mlx_quantize(tmp.file("float"), tmp.file("mlx"), quantize_options(*c.quantization));
  return LlamaModel::load(tmp.file("mlx"));
}

class MlxGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(MlxGolden, LogitsMatchTorchOverTheDequantizedWeights) {
  const testing::GoldenLogits g = testing::load_golden("llama_" + GetParam());
  testing_util::TempDir tmp;
  const LlamaModel m = load_mlx_golden_model(g, tmp);
  EXPECT_FALSE(m.quantized().empty());
  testing::expect_prefill_matches(g, m, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Folders, MlxGolden, ::testing::Values("mlx_q4", "mlx_q8", "mlx_mixed"));

// The fast decoder runs the 4-bit folder from its words (gemv_q4, whose activations are
// quantized to 15 bits: gemv_q4.h's bound) within 2e-3 of torch over the dequantized weights,
// and never widens the model to f32 to do so.
TEST(MlxQuantized, FastDecoderRunsTheFourBitWordsAsStored) {
  const testing::GoldenLogits g = testing::load_golden("llama_mlx_q4");
  testing_util::TempDir tmp;
  const AnyModel m = load_mlx_golden_model(g, tmp);
  const engine::FastEngine fast = engine::make_fast_engine(m, WeightDType::q4);
  EXPECT_FALSE(std::get<LlamaModel>(m).widened());
  const auto session = fast.session(1, exec::cpu::best_isa());
  for (std::size_t t = 0; t < g.tokens.size(); ++t) testing::expect_row_matches(g, t, session->decode(g.tokens[t]), 2e-3);
}

// Orion's quantizer (orion convert --dtype q4) gives the script's bits: MLX's algorithm, the
// same words, scales and biases.
TEST(MlxQuantized, OrionsQuantizerWritesMlxsBits) {
  const testing::GoldenLogits g = testing::load_golden("llama_mlx_q4");
  testing_util::TempDir tmp;
  const LlamaModel m = load_mlx_golden_model(g, tmp);
  const TensorMap w = llama_init_weights(llama_golden_config(g), g.seed);
  ASSERT_FALSE(m.quantized().empty());
  for (const auto& [name, stored] : m.quantized()) {
    const QuantizedMatrix mine = quantize(w.at(name), stored.format);
    ASSERT_EQ(mine.words.nbytes(), stored.words.nbytes()) << name;
    EXPECT_EQ(std::memcmp(mine.words.raw(), stored.words.contiguous().raw(), mine.words.nbytes()), 0) << name;
    EXPECT_EQ(mine.scales.to_floats(), stored.scales.to_floats()) << name;
    EXPECT_EQ(mine.biases.to_floats(), stored.biases.to_floats()) << name;
  }
}

// MLX's grid (scale s, bias b: the 2^bits values s * k + b) is anchored at the group's end of
// larger magnitude and need not reach the other end, so the bound is not half a step: each
// weight dequantizes to the grid value nearest to it.
TEST(MlxQuantized, EachWeightDequantizesToItsNearestGridValue) {
  for (const int bits : {2, 3, 4, 5, 6, 8}) {
    Tensor w(DType::f32, {3, 128});
    auto v = w.span<float>();
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i)) * (i % 7 == 0 ? 3.0f : 0.5f);
    const QuantizedMatrix q = quantize(w, {.bits = bits, .group = 32});
    const Tensor back = dequantize(q);
    for (std::int64_t r = 0; r < 3; ++r)
      for (std::int64_t c = 0; c < 128; ++c) {
        const double s = q.scales.data<float>()[r * 4 + c / 32], b = q.biases.data<float>()[r * 4 + c / 32];
        const double x = v[static_cast<std::size_t>(r * 128 + c)];
        double nearest = 1e30;
        for (int k = 0; k < (1 << bits); ++k) nearest = std::min(nearest, std::abs(x - (s * k + b)));
        EXPECT_LE(std::abs(back.data<float>()[r * 128 + c] - x), nearest + 1e-6) << bits << " bits, [" << r << ", " << c << "]";
      }
  }
}

// Each bad folder: one clear error naming the file and the tensor or key.
class MlxQuantizedErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    const testing::GoldenLogits g = testing::load_golden("llama_mlx_mixed");
    config_ = llama_golden_config(g);
    write_float_folder(config_, g.seed, tmp_.file("float"));
    run_mlx_quantize(tmp_.file("float"), tmp_.file("mlx"), quantize_options(*config_.quantization));
  }
  void edit_config(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::parse(std::ifstream(tmp_.file("mlx/config.json")));
    edit(j);
    std::ofstream(tmp_.file("mlx/config.json")) << j.dump();
  }
  std::string load_error() { return orion::testing::error_of([&] { LlamaModel::load(tmp_.file("mlx")); }); }
  testing_util::TempDir tmp_;
  LlamaConfig config_;
};

TEST_F(MlxQuantizedErrors, BitsOutsideMlxsList) {
  edit_config([](nlohmann::json& j) { j["quantization"]["bits"] = 7; });
  const std::string e = load_error();
  EXPECT_NE(e.find("config.json"), std::string::npos) << e;
  EXPECT_NE(e.find("bits 7 is not one of 2, 3, 4, 5, 6, 8"), std::string::npos) << e;
}

TEST_F(MlxQuantizedErrors, GroupThatDoesNotDivideTheRow) {
  // o_proj's rows are 96 weights: not a whole number of groups of 64.
  edit_config([](nlohmann::json& j) { j["quantization"]["model.layers.0.self_attn.o_proj"] = {{"group_size", 64}, {"bits", 3}}; });
  const std::string e = load_error();
  EXPECT_NE(e.find("model.layers.0.self_attn.o_proj.weight is quantized in groups of 64, which do not divide its rows of 96"),
            std::string::npos) << e;
  EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;
}

TEST_F(MlxQuantizedErrors, OtherToolsFormatsAreRefusedByName) {
  edit_config([](nlohmann::json& j) {
    j.erase("quantization");
    j["quantization_config"] = {{"quant_method", "awq"}, {"bits", 4}};
  });
  EXPECT_NE(load_error().find("quant_method \"awq\""), std::string::npos);
  edit_config([](nlohmann::json& j) { j["quantization"] = {{"group_size", 32}, {"bits", 4}, {"mode", "mxfp4"}}; });
  EXPECT_NE(load_error().find("mode is \"mxfp4\""), std::string::npos);
}

TEST_F(MlxQuantizedErrors, ScalesWithoutAQuantizationKey) {
  edit_config([](nlohmann::json& j) {
    j.erase("quantization");
    j.erase("quantization_config");
  });
  const std::string e = load_error();
  EXPECT_NE(e.find(".scales"), std::string::npos) << e;
  EXPECT_NE(e.find("no \"quantization\""), std::string::npos) << e;
}

}  // namespace
}  // namespace orion::model
