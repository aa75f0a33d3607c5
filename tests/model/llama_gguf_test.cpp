// Llama-family models from GGUF files (model/llama/llama_gguf.h). The logits of files of each
// quantised type against golden logits of an independent torch reference
// (tests/reference/gguf_reference.py: numpy's own GGUF reader and dequantisers, float64 forward
// pass), the file rebuilt here exactly as the golden's was made (the same folder from the
// golden's config and seed, make_gguf.py with the same options, checked by its hash). Then the
// config read from the keys, the weights of an F32 file equal to the folder's (llama's query and
// key rows put back in order), and the errors of files that do not make a model.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/testing_temp_dir.h"
#include "error_of.h"
#include "model/formats/checkpoint.h"
#include "model/formats/named_weights.h"
#include "model/golden_logits.h"
#include "model/gguf_test_util.h"
#include "model/llama/llama_gguf.h"
#include "text/text_test_data.h"

namespace orion::model {
namespace {

using orion::testing::error_of;

class GgufGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufGolden, LogitsMatchTorchInPrefillAndDecoding) {
  const testing::GoldenLogits g = testing::load_golden("gguf_" + GetParam());
  const nlohmann::json j =
      nlohmann::json::parse(text::testing::read_file(std::string(ORION_SOURCE_DIR) + "/tests/reference/golden/gguf_" + GetParam() + ".json"));
  testing_util::TempDir tmp;
  testing::write_init_folder(tmp.file("m"), parse_llama_config(g.config.dump(), g.name), g.seed);
  const std::string sha = testing::make_gguf(tmp.file("m"), tmp.file("m.gguf"), j.at("make_gguf_options").get<std::vector<std::string>>());
  ASSERT_EQ(sha, j.at("gguf_sha256").get<std::string>())
      << "make_gguf.py wrote another file than the golden's reference read: regenerate with tests/reference/make_golden.sh";
  const LlamaModel m = llama_model_from_gguf(GgufFile::open(tmp.file("m.gguf")));
  testing::expect_prefill_matches(g, m, 1e-4);
  testing::expect_kv_cache_decoding_matches(g, m, 1e-4);
}

// tests/reference/golden_gguf_models.txt: Qwen3 in Q8_0 and in Q4_0 with an F16 embedding (tied,
// head_dim 24); Qwen3 of width 256 in Q4_K with a Q6_K embedding (tied), and in Q6_K with a BF16
// embedding and a Q5_K head; Qwen2's biases in Q4_0; Llama in Q8_0 with a Q4_1 embedding and
// head, grouped-query attention (its permuted query and key rows) and Llama 3's rope scaling as
// rope_freqs.weight.
INSTANTIATE_TEST_SUITE_P(Files, GgufGolden,
                         ::testing::Values("qwen3_q8_0", "qwen3_q4_0", "qwen3_q4_k", "qwen3_q6_k", "qwen2_q4_0", "llama_q8_0"));

// The folder of `c` and its F32 GGUF file in `tmp`.
std::string f32_file(const testing_util::TempDir& tmp, const LlamaConfig& c, const std::vector<std::string>& options = {}) {
  testing::write_init_folder(tmp.file("m"), c, 9);
  EXPECT_FALSE(testing::make_gguf(tmp.file("m"), tmp.file("m.gguf"), options).empty());
  return tmp.file("m.gguf");
}

void expect_weights_equal_the_folders(const LlamaConfig& c) {
  testing_util::TempDir tmp;
  const LlamaModel m = llama_model_from_gguf(GgufFile::open(f32_file(tmp, c)));
  const LlamaModel folder = LlamaModel::load(tmp.file("m"));
  ASSERT_EQ(m.weights().size(), folder.weights().size());
  for (const auto& [name, w] : folder.weights()) {
    const Tensor& mine = m.weights().at(name);
    ASSERT_EQ(mine.shape(), w.shape()) << name;
    EXPECT_EQ(std::memcmp(mine.data<float>(), w.data<float>(), static_cast<std::size_t>(w.numel()) * 4), 0) << name;
  }
}

TEST(LlamaGguf, LlamasPermutedQueryAndKeyRowsArePutBack) {
  LlamaConfig c = testing::small_gguf_config("llama", 64, 0, 160);
  c.num_attention_heads = 8;  // head size 8, two query heads to a key/value head
  expect_weights_equal_the_folders(c);
}

TEST(LlamaGguf, QwenWeightsAreTheFoldersAsTheyAre) {
  expect_weights_equal_the_folders(testing::small_gguf_config("qwen3", 64, 24, 160));
  expect_weights_equal_the_folders(testing::small_gguf_config("qwen2", 64, 0, 160));
}

TEST(LlamaGguf, TheConfigComesFromTheKeys) {
  testing_util::TempDir tmp;
  LlamaConfig want = testing::small_gguf_config("qwen3", 64, 24, 160);
  want.tie_word_embeddings = true;
  const LlamaConfig c = llama_config_from_gguf(GgufFile::open(f32_file(tmp, want)));
  EXPECT_EQ(c.model_type, "qwen3");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 160);
  EXPECT_EQ(c.num_hidden_layers, 2);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim(), 24);
  EXPECT_EQ(c.rms_norm_eps, static_cast<double>(1e-6f));  // stored as f32
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.max_position_embeddings, 64);
  EXPECT_EQ(c.vocab_size, 300);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.eos_token_ids, (std::vector<std::int64_t>{256}));
  EXPECT_FALSE(c.bos_token_id.has_value());  // the config has none, so the file adds none
}

TEST(LlamaGguf, LinearRopeScalingIsRead) {
  testing_util::TempDir tmp;
  LlamaConfig want = testing::small_gguf_config("llama", 64, 0, 160);
  want.rope_scaling.type = RopeScaling::Type::linear;
  want.rope_scaling.factor = 2;
  const LlamaConfig c = llama_config_from_gguf(GgufFile::open(f32_file(tmp, want)));
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::linear);
  EXPECT_EQ(c.rope_scaling.factor, 2.0);
}

// The F32 file of a small Qwen3 with one field patched: `key`'s u32 value, or a tensor's name
// (same length) or type.
class LlamaGgufErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = f32_file(tmp_, testing::small_gguf_config("qwen3", 64, 24, 160));
    bytes_ = text::testing::read_file(path_);
  }
  std::size_t after(const std::string& s) const {
    std::string needle(8, '\0');
    const std::uint64_t n = s.size();
    std::memcpy(needle.data(), &n, 8);
    const std::size_t at = bytes_.find(needle + s);
    EXPECT_NE(at, std::string::npos) << s;
    return at + 8 + s.size();
  }
  std::string load_error(const std::string& bytes) {
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << bytes;
    return error_of([&] { llama_model_from_gguf(GgufFile::open(path_)); });
  }
  std::string with_u32(const std::string& key, std::uint32_t v) {
    std::string b = bytes_;
    std::memcpy(b.data() + after(key) + 4, &v, 4);
    return b;
  }
  std::string renamed(const std::string& from, const std::string& to) {
    std::string b = bytes_;
    b.replace(after(from) - from.size(), from.size(), to);
    return b;
  }

  testing_util::TempDir tmp_;
  std::string path_, bytes_;
};

TEST_F(LlamaGgufErrors, ATensorOfAnotherShapeThanTheConfigNamesBoth) {
  const std::string e = load_error(with_u32("qwen3.feed_forward_length", 192));
  EXPECT_NE(e.find(path_ + ": tensor 'blk.0.ffn_up.weight' (model.layers.0.mlp.up_proj.weight) has the shape [160, 64]; its config "
                   "(qwen3, 2 layers of width 64) needs [192, 64]"),
            std::string::npos)
      << e;
}

TEST_F(LlamaGgufErrors, AMissingOrForeignTensorIsNamed) {
  std::string e = load_error(renamed("output_norm.weight", "output_xorm.weight"));
  EXPECT_NE(e.find(path_ + ": has no tensor 'output_norm.weight' (model.norm.weight), which its qwen3 config needs"), std::string::npos) << e;
  e = load_error(renamed("blk.1.attn_k_norm.weight", "blk.1.attn_k_xorm.weight"));
  EXPECT_NE(e.find("has no tensor 'blk.1.attn_k_norm.weight' (model.layers.1.self_attn.k_norm.weight)"), std::string::npos) << e;
}

TEST(LlamaGguf, ATensorTheModelHasNoPlaceForIsRefused) {
  // Llama's output biases are read when blk.0 has one; without it, blk.1's is foreign.
  testing_util::TempDir tmp;
  LlamaConfig c = testing::small_gguf_config("llama", 64, 0, 160);
  c.qkv_bias = c.o_bias = true;
  const std::string path = f32_file(tmp, c);
  std::string b = text::testing::read_file(path);
  b.replace(b.find("blk.0.attn_output.bias"), 22, "blk.0.attn_outpux.bias");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << b;
  const std::string e = error_of([&] { llama_model_from_gguf(GgufFile::open(path)); });
  EXPECT_NE(e.find("' is not one of a llama model's (its config has no place for it)"), std::string::npos) << e;
}

TEST_F(LlamaGgufErrors, AnotherArchitectureOrUnreadTypeIsRefusedByName) {
  std::string b = bytes_;
  const std::size_t at = after("general.architecture") + 4 + 8;  // the value's text
  b.replace(at, 5, "gpt2x");
  std::string e = load_error(b);
  EXPECT_NE(e.find("key \"general.architecture\" is 'gpt2x'; Orion reads GGUF files of the architectures llama, qwen2 and qwen3"),
            std::string::npos)
      << e;
  b = bytes_;
  const std::uint32_t i32 = 26;
  std::memcpy(b.data() + after("blk.0.attn_norm.weight") + 4 + 8, &i32, 4);
  e = load_error(b);
  EXPECT_NE(e.find("tensor 'blk.0.attn_norm.weight' (model.layers.0.input_layernorm.weight) is I32; Orion reads"), std::string::npos) << e;
}

TEST_F(LlamaGgufErrors, RequiredKeysAreNamed) {
  std::string b = bytes_;
  b.replace(after("qwen3.block_count") - 11, 11, "block_xount");
  const std::string e = load_error(b);
  EXPECT_NE(e.find("has no key 'qwen3.block_count', which a model of its architecture needs"), std::string::npos) << e;
}

TEST(LlamaGguf, TensorNamesMapToHuggingFaces) {
  EXPECT_EQ(gguf_tensor_name("model.embed_tokens.weight"), "token_embd.weight");
  EXPECT_EQ(gguf_tensor_name("lm_head.weight"), "output.weight");
  EXPECT_EQ(gguf_tensor_name("model.layers.12.self_attn.o_proj.weight"), "blk.12.attn_output.weight");
  EXPECT_EQ(gguf_tensor_name("model.layers.0.self_attn.q_proj.bias"), "blk.0.attn_q.bias");
  EXPECT_EQ(gguf_tensor_name("model.layers.3.post_attention_layernorm.weight"), "blk.3.ffn_norm.weight");
  EXPECT_EQ(gguf_tensor_name("model.layers.3.mlp.gate_proj.weight"), "blk.3.ffn_gate.weight");
  EXPECT_EQ(gguf_tensor_name("model.layers.3.something.weight"), "");
}

}  // namespace
}  // namespace orion::model
