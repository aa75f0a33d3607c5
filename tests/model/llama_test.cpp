// Llama against golden logits from an independent torch implementation
// (tests/reference/llama_reference.py, float64: its own RoPE, repeat_kv and RMSNorm), for
// prefill and for 32 KV-cache decode steps, with and without grouped-query attention, with tied
// and untied heads. The models are rebuilt from their seeds: llama_init_weights is what
// `orion init --arch llama` writes. Then config.json's errors and model folders.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/half.h"
#include "core/testing_temp_dir.h"
#include "engine/graph_session.h"
#include "model/any_model.h"
#include "model/golden_logits.h"
#include "model/llama_golden.h"
#include "model/llama/llama.h"
#include "model/llama/llama_model.h"
#include "model/llama/rope.h"
#include "model/formats/safetensors.h"

namespace orion::model {
namespace {

using testing::GoldenLogits;

class LlamaGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaGolden, PrefillMatchesTorch) {
  const GoldenLogits g = testing::load_golden("llama_" + GetParam());
  testing::expect_prefill_matches(g, llama_golden_model(g), 1e-4);
}

TEST_P(LlamaGolden, KvCacheDecodingMatchesTorchAndRecomputation) {
  const GoldenLogits g = testing::load_golden("llama_" + GetParam());
  testing::expect_kv_cache_decoding_matches(g, llama_golden_model(g), 1e-4);
}

// The model with its graphs in their ANE form (model/llama/llama.h: RoPE's rotation as a product with
// a constant signed permutation, key/value heads expanded by a constant product): the same
// function, so the same golden logits.
class AneForm final : public CausalLm {
 public:
  explicit AneForm(const LlamaModel& m) : m_(m) {}
  std::string_view arch() const override { return m_.arch(); }
  ir::Graph decoding_graph(std::int64_t seq, std::int64_t past, bool last_only) const override {
    return llama_graph(m_.config(), {.seq = seq, .past = past, .last_only = last_only, .ane_form = true});
  }
  ir::Graph ane_graph(std::int64_t seq, std::int64_t past, std::int64_t sequences, double residual_scale) const override {
    return m_.ane_graph(seq, past, sequences, residual_scale);
  }
  std::string config_json() const override { return m_.config_json(); }
  const TensorMap& weights() const override { return m_.weights(); }
  std::int64_t layers() const override { return m_.layers(); }
  std::int64_t kv_width() const override { return m_.kv_width(); }
  std::int64_t context() const override { return m_.context(); }
  std::int64_t vocab_size() const override { return m_.vocab_size(); }
  std::int64_t eos_token_id() const override { return m_.eos_token_id(); }
  std::optional<std::int32_t> bos_token_id() const override { return m_.bos_token_id(); }
  std::int64_t local_window() const override { return m_.local_window(); }

 private:
  const LlamaModel& m_;
};

TEST_P(LlamaGolden, TheAneFormMatchesTorchInPrefillAndDecoding) {
  const GoldenLogits g = testing::load_golden("llama_" + GetParam());
  const LlamaModel m = llama_golden_model(g);
  const AneForm ane(m);
  testing::expect_prefill_matches(g, ane, 1e-4);
  testing::expect_kv_cache_decoding_matches(g, ane, 1e-4);
}

TEST(LlamaAneForm, RotateHalfMatrixIsRotateHalfPerHead) {
  // x R against rotate_half written out: (-x2, x1) per head of 4.
  const Tensor r = rotate_half_matrix(2, 4);
  const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const float want[8] = {-3, -4, 1, 2, -7, -8, 5, 6};
  for (int j = 0; j < 8; ++j) {
    float y = 0;
    for (int i = 0; i < 8; ++i) y += x[i] * r.data<float>()[i * 8 + j];
    EXPECT_EQ(y, want[j]) << j;
  }
}

// gqa: 4 query heads on 2 key/value heads, untied; mha_tied: no grouping, tied head;
// mqa_tied: one key/value head, rope_theta 500000; gqa_wide: 8 heads on 2, 3 layers.
// The families (tests/reference/golden_family_models.txt): qwen3_gqa (q/k norms, head_dim 24
// with dim 64), qwen2_bias (q/k/v biases), llama3_rope (rope_scaling llama3 with frequencies in
// all three bands), llama_bias (attention_bias on q/k/v/o, linear rope scaling), mistral_mqa
// (one key/value head, the reference reading bf16 weights from 3 shards); gemma3_swa (Gemma 3,
// tests/reference/gemma3_reference.py: two sliding layers of window 5 and a global one with
// linear rope scaling, query_pre_attn_scalar 24 against head_dim 16; 32 decode steps cross the
// window many times).
INSTANTIATE_TEST_SUITE_P(Models, LlamaGolden,
                         ::testing::Values("gqa", "mha_tied", "mqa_tied", "gqa_wide", "qwen3_gqa", "qwen2_bias", "llama3_rope",
                                           "llama_bias", "mistral_mqa", "gemma3_swa"));

TEST(LlamaGolden, TheGoldenModelsCoverGroupingAndTying) {
  bool grouped = false, ungrouped = false, tied = false, untied = false;
  for (const char* name : {"gqa", "mha_tied", "mqa_tied", "gqa_wide"}) {
    const LlamaConfig c = llama_golden_config(testing::load_golden(std::string("llama_") + name));
    (c.num_key_value_heads < c.num_attention_heads ? grouped : ungrouped) = true;
    (c.tie_word_embeddings ? tied : untied) = true;
  }
  EXPECT_TRUE(grouped && ungrouped && tied && untied);
}

using testing::llama_config_error;

TEST(LlamaConfig, ErrorsNameTheFileAndTheField) {
  const std::string base = R"("model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, )";
  const std::string ok = "{" + base + R"("num_attention_heads": 4, "vocab_size": 100})";
  EXPECT_EQ(llama_config_error(ok), "");
  const LlamaConfig c = parse_llama_config(ok, "x");
  EXPECT_EQ(c.num_key_value_heads, 4);  // absent: as many as the query heads
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_id(), 2);

  struct Case { std::string json, expect; };
  for (const Case& k : std::vector<Case>{
           {"{" + base + R"("vocab_size": 100})", "dir/config.json: missing key \"num_attention_heads\""},
           {"{" + base + R"("num_attention_heads": "4", "vocab_size": 100})", "dir/config.json: key \"num_attention_heads\" must be an integer"},
           {"{" + base + R"("num_attention_heads": 4, "num_key_value_heads": 3, "vocab_size": 100})",
            "dir/config.json: \"num_attention_heads\" (4) is not a multiple of \"num_key_value_heads\" (3)"},
           {"{" + base + R"("num_attention_heads": 3, "vocab_size": 100})", "dir/config.json: \"hidden_size\" (64) is not a multiple"},
           {"{" + base + R"("num_attention_heads": 4, "vocab_size": 100, "rope_scaling": {"type": "dynamic", "factor": 2}})",
            "dir/config.json: key \"rope_scaling\" has rope_type \"dynamic\"; Orion implements"},
           {"{" + base + R"("num_attention_heads": 4, "vocab_size": 100, "hidden_act": "gelu"})", "dir/config.json: key \"hidden_act\""},
           {"{" + base + R"("num_attention_heads": 4, "vocab_size": 100, "mlp_bias": true})", "dir/config.json: key \"mlp_bias\" is true"},
           {"{" + base + R"("num_attention_heads": 4, "vocab_size": 100, "eos_token_id": 100})", "dir/config.json: \"eos_token_id\" 100 is outside"},
           {"{" + base + R"("num_attention_heads": 4, "vocab_size": 100, "tie_word_embeddings": 1})",
            "dir/config.json: key \"tie_word_embeddings\" must be true or false"},
           {R"({"model_type": "gpt2"})", "dir/config.json: model_type is \"gpt2\", expected one of llama, mistral, qwen2, qwen3, gemma3_text"},
           {R"({"model_type": "llama",)", "dir/config.json: at byte"},
       }) {
    const std::string e = llama_config_error(k.json);
    EXPECT_EQ(e.rfind(k.expect, 0), 0u) << "got: " << e << "\nexpected to start with: " << k.expect;
  }
}

// Gemma 3's keys: Gemma3TextConfig's defaults for what a config leaves out (the 1B's config
// gives sliding_window_pattern, not layer_types), and what Orion does not implement refused.
TEST(LlamaConfig, Gemma3TakesItsDefaultsAndRefusesSoftCapping) {
  const std::string base = R"("model_type": "gemma3_text", "hidden_size": 64, "intermediate_size": 128, )"
                           R"("num_attention_heads": 4, "num_key_value_heads": 1, "vocab_size": 300, )";
  const LlamaConfig c = parse_llama_config("{" + base + R"("num_hidden_layers": 12})", "x");
  EXPECT_EQ(c.head_dim(), 256);
  EXPECT_EQ(c.sliding_window, 4096);
  ASSERT_EQ(c.sliding_layers.size(), 12u);
  for (std::size_t l = 0; l < 12; ++l) EXPECT_EQ(c.sliding_layers[l], l != 5 && l != 11) << l;
  EXPECT_TRUE(c.norm_plus_one && c.sandwich_norms && c.gelu_mlp && c.qk_norm && c.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c.embed_scale, 8.0);
  EXPECT_DOUBLE_EQ(c.rope_local_theta, 10000.0);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c.query_prescale(), 1.0);  // query_pre_attn_scalar 256 = head_dim
  EXPECT_EQ(c.bos_token_id, 2);
  EXPECT_EQ(c.eos_token_id(), 1);
  EXPECT_EQ(c.context(), kMaxLlamaContext);  // the window does not cap the context
  // transformers 5's rope_parameters, one object per kind of layer.
  const LlamaConfig v5 = parse_llama_config(
      "{" + base + R"("num_hidden_layers": 2, "layer_types": ["sliding_attention", "full_attention"], )"
      R"("rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}, )"
      R"("sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}})",
      "x");
  EXPECT_EQ(v5.rope_scaling.type, RopeScaling::Type::linear);
  EXPECT_DOUBLE_EQ(v5.rope_local_theta, 10000.0);
  struct Case { std::string json, expect; };
  for (const Case& k : std::vector<Case>{
           {"{" + base + R"("num_hidden_layers": 2, "final_logit_softcapping": 30.0})",
            "dir/config.json: key \"final_logit_softcapping\" is 30.0; Orion's Gemma 3 has no logit soft-capping"},
           {"{" + base + R"("num_hidden_layers": 2, "layer_types": ["sliding_attention", "linear_attention"]})",
            "dir/config.json: key \"layer_types\" lists \"linear_attention\""},
           {"{" + base + R"("num_hidden_layers": 3, "layer_types": ["sliding_attention", "full_attention"]})",
            "dir/config.json: \"layer_types\" lists 2 layers, not num_hidden_layers 3"},
           {"{" + base + R"("num_hidden_layers": 2, "hidden_activation": "silu"})",
            "dir/config.json: key \"hidden_activation\" is \"silu\"; the gemma3_text feed-forward Orion runs uses \"gelu_pytorch_tanh\""},
       }) {
    const std::string e = llama_config_error(k.json);
    EXPECT_EQ(e.rfind(k.expect, 0), 0u) << "got: " << e << "\nexpected to start with: " << k.expect;
  }
}

TEST(LlamaConfig, JsonRoundTrips) {
  LlamaConfig c;
  c.hidden_size = 96; c.intermediate_size = 200; c.num_hidden_layers = 3; c.num_attention_heads = 6;
  c.num_key_value_heads = 2; c.max_position_embeddings = 77; c.vocab_size = 300; c.tie_word_embeddings = true;
  c.rope_theta = 500000; c.bos_token_id.reset(); c.eos_token_ids = {7};
  const LlamaConfig r = parse_llama_config(llama_config_json(c), "x");
  EXPECT_EQ(llama_config_json(r), llama_config_json(c));
  EXPECT_FALSE(r.bos_token_id.has_value());
  EXPECT_EQ(r.kv_width(), 32);
}

TEST(Rope, TablesFollowHuggingFacesFormula) {
  const RopeTables t = rope_tables(10, 8, 10000.0);
  for (std::int64_t p : {0, 3, 9})
    for (std::int64_t i = 0; i < 4; ++i) {
      const double angle = static_cast<double>(p) / std::pow(10000.0, 2.0 * static_cast<double>(i) / 8.0);
      EXPECT_FLOAT_EQ(t.cos.data<float>()[p * 8 + i], static_cast<float>(std::cos(angle)));
      EXPECT_FLOAT_EQ(t.cos.data<float>()[p * 8 + 4 + i], static_cast<float>(std::cos(angle)));
      EXPECT_FLOAT_EQ(t.sin.data<float>()[p * 8 + 4 + i], static_cast<float>(std::sin(angle)));
    }
  EXPECT_THROW(rope_tables(10, 7, 10000.0), Error);
}

class LlamaFolder : public ::testing::Test {
 protected:
  LlamaConfig small(bool tied) {
    LlamaConfig c;
    c.hidden_size = 32; c.intermediate_size = 64; c.num_hidden_layers = 2; c.num_attention_heads = 4;
    c.num_key_value_heads = 2; c.max_position_embeddings = 32; c.vocab_size = 50; c.tie_word_embeddings = tied;
    return c;
  }
  void write(const LlamaConfig& c, TensorMap w) {
    std::vector<std::pair<std::string, Tensor>> tensors(w.begin(), w.end());
    write_safetensors(dir_.file("model.safetensors"), tensors, {});
    std::ofstream(dir_.file("config.json")) << llama_config_json(c);
  }
  std::string load_error() {
    try {
      LlamaModel::load(dir_.path());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  testing_util::TempDir dir_;
};

TEST_F(LlamaFolder, LoadsWhatInitWritesByModelType) {
  for (bool tied : {false, true}) {
    const LlamaConfig c = small(tied);
    const TensorMap w = llama_init_weights(c, 9);
    EXPECT_EQ(w.contains("lm_head.weight"), !tied);
    EXPECT_EQ(w.at("model.layers.1.self_attn.k_proj.weight").shape(), (Shape{16, 32}));  // [out, in]
    write(c, w);
    EXPECT_EQ(read_model_type(dir_.path()), "llama");
    const AnyModel any = load_any_model(dir_.path());
    ASSERT_TRUE(std::holds_alternative<LlamaModel>(any));
    const CausalLm& m = causal_lm(any);
    EXPECT_EQ(m.kv_width(), 16);
    EXPECT_EQ(m.bos_token_id(), 1);
    for (const auto& [name, t] : w) {
      const Tensor& got = m.weights().at(name);
      ASSERT_EQ(got.nbytes(), t.nbytes()) << name;
      EXPECT_EQ(std::memcmp(got.raw(), t.raw(), t.nbytes()), 0) << name;
    }
    std::filesystem::remove(dir_.file("model.safetensors"));
  }
}

TEST_F(LlamaFolder, MissingAndForeignTensorsAreNamed) {
  const LlamaConfig c = small(false);
  TensorMap w = llama_init_weights(c, 1);
  w.erase("model.layers.1.mlp.up_proj.weight");
  write(c, w);
  EXPECT_NE(load_error().find("model.safetensors: tensor model.layers.1.mlp.up_proj.weight is missing"), std::string::npos)
      << load_error();
  w = llama_init_weights(c, 1);
  w.emplace("model.layers.0.self_attn.q_proj.bias", Tensor(DType::f32, {32}));
  write(c, w);
  EXPECT_NE(load_error().find("tensor model.layers.0.self_attn.q_proj.bias is not part of a llama model"), std::string::npos)
      << load_error();
  w = llama_init_weights(c, 1);
  w["model.norm.weight"] = Tensor(DType::f32, {31});
  write(c, w);
  EXPECT_NE(load_error().find("tensor model.norm.weight has shape [31], config.json needs [32]"), std::string::npos)
      << load_error();
}

TEST(LlamaGraph, RefusesAWindowPastTheContext) {
  LlamaConfig c;
  c.hidden_size = 16; c.intermediate_size = 32; c.num_hidden_layers = 1; c.num_attention_heads = 2;
  c.num_key_value_heads = 1; c.max_position_embeddings = 8; c.vocab_size = 10;
  EXPECT_THROW(llama_graph(c, {.seq = 4, .past = 5, .last_only = false}), Error);
  const LlamaModel m = LlamaModel::from_weights(c, llama_init_weights(c, 1), "m");
  engine::GraphSession s(m);
  s.prefill(std::vector<std::int32_t>(8, 3));
  EXPECT_THROW(s.decode(1), Error);
}

}  // namespace
}  // namespace orion::model

namespace orion::model {
namespace {

// The default cap, raised by a device package's --context only as far as the config allows.
TEST(LlamaContext, TheCapRisesOnlyAsFarAsTheConfigAllows) {
  LlamaConfig c;
  c.max_position_embeddings = 40960;
  EXPECT_EQ(c.context(), kMaxLlamaContext);
  c.context_cap = 8193;
  EXPECT_EQ(c.context(), 8193);
  c.max_position_embeddings = 6000;
  EXPECT_EQ(c.context(), 6000);
  c.sliding_window = 1024;
  EXPECT_EQ(c.context(), 1024);
}

}  // namespace
}  // namespace orion::model
