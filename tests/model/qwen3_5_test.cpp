// Qwen3.5 (qwen3_5_text: Gated DeltaNet layers between gated full-attention ones) against
// golden logits from tests/reference/qwen3_5_reference.py (float64 torch, written from
// transformers' modeling_qwen3_5.py; its chunked form held to its recurrent one), in prefill
// and over 32 decode steps; then Orion's own chunked prefill against its recurrent decode
// across several chunks, and config.json's Qwen3.5 keys.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "engine/graph_session.h"
#include "model/any_model.h"
#include "model/model_folder.h"
#include "text/bpe_tokenizer.h"
#include "model/golden_logits.h"
#include "model/llama/gated_delta.h"
#include "model/llama/llama_model.h"
#include "model/llama_golden.h"
#include "model/llama_test_config.h"

namespace orion::model {
namespace {

using testing::GoldenLogits;

// The golden model (tests/reference/golden_family_models.txt): two Gated DeltaNet layers of 2
// key heads and 4 value heads of 16 (each key head read by two value heads), two full layers of
// 4 query heads on 2 key/value heads of 32 with half of each head rotated, untied.
TEST(Qwen3_5Golden, PrefillMatchesTorch) {
  const GoldenLogits g = testing::load_golden("llama_qwen3_5_hybrid");
  const LlamaModel m = llama_golden_model(g);
  ASSERT_EQ(m.config().linear_layers, (std::vector<bool>{true, false, true, false}));
  testing::expect_prefill_matches(g, m, 1e-4);
}

TEST(Qwen3_5Golden, DecodingMatchesTorchAndRecomputation) {
  const GoldenLogits g = testing::load_golden("llama_qwen3_5_hybrid");
  testing::expect_kv_cache_decoding_matches(g, llama_golden_model(g), 1e-4);
}

LlamaModel long_model() {
  // The golden shape with a longer context: a window of 150 positions is three chunks of the
  // delta rule (64, 64 and 22).
  LlamaConfig c = llama_golden_config(testing::load_golden("llama_qwen3_5_hybrid"));
  c.max_position_embeddings = 256;
  return LlamaModel::from_weights(c, llama_init_weights(c, 5), "long");
}

std::vector<std::int32_t> some_tokens(std::size_t n, std::int64_t vocab) {
  std::vector<std::int32_t> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<std::int32_t>((i * 7919 + 13) % static_cast<std::size_t>(vocab));
  return t;
}

double max_rel_diff(std::span<const float> a, std::span<const float> b) {
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
    ref = std::max(ref, static_cast<double>(std::abs(b[i])));
  }
  return diff / ref;
}

// Orion's prefill runs the chunked form, its decode the one-position case (the recurrence):
// every position of a 150-token window against the same tokens decoded one at a time.
TEST(Qwen3_5, ChunkedPrefillEqualsRecurrentDecoding) {
  static_assert(kDeltaChunk == 64, "the window below is meant to cross two chunk boundaries");
  const LlamaModel m = long_model();
  const std::vector<std::int32_t> tokens = some_tokens(150, m.vocab_size());
  engine::GraphSession s(m);
  const Tensor window = s.window_logits(tokens);
  const auto V = static_cast<std::size_t>(m.vocab_size());
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const std::vector<float> step = s.prefill(std::span(tokens).subspan(t, 1));
    EXPECT_LT(max_rel_diff(step, std::span(window.data<float>() + t * V, V)), 1e-5) << "position " << t;
  }
}

// A window after a cache starts the chunks from the carried state (conv and S): 20 positions,
// then 100 more in one prefill (two chunks), against the whole window.
TEST(Qwen3_5, APrefillAfterTheStateContinuesIt) {
  const LlamaModel m = long_model();
  const std::vector<std::int32_t> tokens = some_tokens(120, m.vocab_size());
  engine::GraphSession s(m);
  const Tensor window = s.window_logits(tokens);
  const auto V = static_cast<std::size_t>(m.vocab_size());
  s.prefill(std::span(tokens).first(20));
  const std::vector<float> last = s.prefill(std::span(tokens).subspan(20));
  EXPECT_LT(max_rel_diff(last, std::span(window.data<float>() + 119 * V, V)), 1e-5);
  s.reset();  // a new sequence starts from a zero state
  const std::vector<float> again = s.prefill(std::span(tokens).first(120));
  EXPECT_LT(max_rel_diff(again, last), 1e-5);
}

// Qwen3.5's folders as published are multimodal (model_type qwen3_5): the text config under
// text_config, the tie at the top, the text model's tensors under model.language_model.*
// beside a vision tower and a multi-token-prediction head. The text model loads from it as
// from its own folder.
TEST(Qwen3_5, APublishedMultimodalFolderLoadsItsTextModel) {
  const LlamaModel text = long_model();
  TensorMap stored;
  for (const auto& [name, t] : text.weights())
    stored.emplace(name.starts_with("model.") ? "model.language_model." + name.substr(6) : name, t);
  stored.emplace("model.visual.blocks.0.attn.qkv.weight", Tensor(DType::f32, {4, 4}));
  stored.emplace("mtp.fc.weight", Tensor(DType::f32, {4, 4}));
  nlohmann::json text_config = nlohmann::json::parse(text.config_json());
  const bool tied = text_config["tie_word_embeddings"];
  text_config.erase("tie_word_embeddings");
  const nlohmann::json config = {{"model_type", "qwen3_5"},
                                 {"architectures", {"Qwen3_5ForConditionalGeneration"}},
                                 {"tie_word_embeddings", tied},
                                 {"text_config", text_config},
                                 {"vision_config", {{"depth", 1}}}};
  testing_util::TempDir dir;
  write_model_folder(dir.file("m"), stored, config.dump(), text::BpeTokenizer::byte_level());
  const AnyModel loaded = load_any_model(dir.file("m"));
  const auto& m = std::get<LlamaModel>(loaded);
  EXPECT_TRUE(m.config().multimodal_checkpoint);
  EXPECT_EQ(m.config().tie_word_embeddings, tied);
  const std::vector<std::int32_t> tokens = some_tokens(70, text.vocab_size());
  engine::GraphSession a(text), b(m);
  const Tensor want = a.window_logits(tokens), got = b.window_logits(tokens);
  EXPECT_EQ(max_rel_diff(got.span<float>(), want.span<float>()), 0.0);
}

// The published checkpoints' text config (Qwen3.5-0.8B's keys, transformers 5's rope_parameters).
const char* kPublished = R"({"model_type": "qwen3_5_text", "hidden_size": 1024, "intermediate_size": 3584,
  "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256,
  "linear_num_key_heads": 16, "linear_num_value_heads": 16, "linear_key_head_dim": 128,
  "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
  "vocab_size": 248320, "tie_word_embeddings": true, "max_position_embeddings": 262144,
  "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                      "mrope_section": [11, 11, 10], "mrope_interleaved": true},
  "eos_token_id": 248044})";

TEST(Qwen3_5Config, ReadsThePublishedKeys) {
  const LlamaConfig c = parse_llama_config(kPublished, "x");
  EXPECT_EQ(c.linear_layers, (std::vector<bool>{true, true, true, false, true, true, true, false}));
  EXPECT_EQ(c.linear, (LinearAttention{16, 16, 128, 128, 4}));
  EXPECT_EQ(c.rotary_dim(), 64);
  EXPECT_TRUE(c.attn_output_gate && c.norm_plus_one && c.qk_norm);
  EXPECT_EQ(c.rope_theta, 1e7);
  EXPECT_FALSE(c.bos_token_id.has_value());
  // The config Orion writes reads back as the same model.
  const LlamaConfig back = parse_llama_config(llama_config_json(c), "y");
  EXPECT_EQ(back.linear_layers, c.linear_layers);
  EXPECT_EQ(back.linear, c.linear);
  EXPECT_EQ(back.rotary_dim(), c.rotary_dim());
  EXPECT_EQ(back.parameter_count(), c.parameter_count());
}

using testing::llama_config_error;

TEST(Qwen3_5Config, RefusesWhatItDoesNotRun) {
  const std::string base = std::string(kPublished);
  auto with = [&](const std::string& extra) { return base.substr(0, base.size() - 1) + ", " + extra + "}"; };
  EXPECT_EQ(llama_config_error(with(R"("num_experts": 256)")),
            "dir/config.json: key \"num_experts\" is set: a mixture-of-experts model (qwen3_5_moe), which Orion does not run");
  EXPECT_EQ(llama_config_error(with(R"("layer_types": ["linear_attention", "sliding_attention"])")),
            "dir/config.json: key \"layer_types\" lists \"sliding_attention\"; Qwen3.5's layers are \"linear_attention\" or \"full_attention\"");
  EXPECT_EQ(llama_config_error(with(R"("linear_num_value_heads": 24)")),
            "dir/config.json: \"linear_num_value_heads\" (24) is not a multiple of \"linear_num_key_heads\" (16)");
}

}  // namespace
}  // namespace orion::model
