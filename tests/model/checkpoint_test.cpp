// Hugging Face's sharded checkpoints (model/formats/checkpoint.h): a Llama-family model written
// as bf16 shards with an index loads as the same model as its weights rounded to bf16; an
// index that disagrees with its shards, or names a missing one, fails naming the file and the
// tensor.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/half.h"
#include "core/testing_temp_dir.h"
#include "model/formats/checkpoint.h"
#include "model/llama/llama_model.h"
#include "model/llama_test_config.h"
#include "model/model_folder.h"
#include "text/bpe_tokenizer.h"

namespace orion::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ShardedCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = testing::small_llama_config({2, 64, 4, 2, 96, 300, true, 32});
    testing::make_family(config_, "qwen3", 24);
    weights_ = llama_init_weights(config_, 3);
    write_model_folder(dir_.path(), weights_, llama_config_json(config_), text::BpeTokenizer::byte_level(),
                       {.shards = 3, .dtype = DType::bf16});
  }
  json index() const {
    std::ifstream f(dir_.file(kShardIndexFile));
    return json::parse(f);
  }
  void write_index(const json& j) const { std::ofstream(dir_.file(kShardIndexFile)) << j.dump(); }
  std::string load_error() const {
    try {
      LlamaModel::load(dir_.path());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  testing_util::TempDir dir_;
  LlamaConfig config_;
  TensorMap weights_;
};

TEST_F(ShardedCheckpoint, Bf16ShardsLoadAsTheWeightsRoundedToBf16) {
  for (int s = 1; s <= 3; ++s) EXPECT_TRUE(fs::exists(dir_.file(shard_file_name(s, 3)))) << s;
  EXPECT_FALSE(fs::exists(dir_.file(kWeightsFile)));
  EXPECT_EQ(index()["weight_map"].size(), weights_.size());
  const LlamaModel m = LlamaModel::load(dir_.path());
  ASSERT_EQ(m.weights().size(), weights_.size());
  for (const auto& [name, t] : weights_) {
    Tensor want = t.clone();
    round_to_bf16(want.span<float>());
    const auto got = m.weights().at(name).contiguous().span<const float>();
    const auto w = want.span<const float>();
    ASSERT_TRUE(std::equal(got.begin(), got.end(), w.begin(), w.end())) << name;
  }
}

TEST_F(ShardedCheckpoint, AMissingShardIsNamedWithTheIndex) {
  fs::remove(dir_.file(shard_file_name(2, 3)));
  const std::string e = load_error();
  EXPECT_NE(e.find(kShardIndexFile), std::string::npos) << e;
  EXPECT_NE(e.find("is in the shard model-00002-of-00003.safetensors, which is missing"), std::string::npos) << e;
}

TEST_F(ShardedCheckpoint, AnIndexThatDisagreesWithItsShardsIsRefused) {
  json j = index();
  const std::string moved = j["weight_map"].begin().key();
  const std::string was = j["weight_map"][moved];
  const std::string other = was == shard_file_name(1, 3) ? shard_file_name(2, 3) : shard_file_name(1, 3);
  j["weight_map"][moved] = other;
  write_index(j);
  std::string e = load_error();
  EXPECT_NE(e.find(other + ": has no tensor " + moved), std::string::npos) << e;

  j = index();
  j["weight_map"].erase(moved);
  write_index(j);
  e = load_error();
  EXPECT_NE(e.find(was + ": holds tensor " + moved + ", which "), std::string::npos) << e;
  EXPECT_NE(e.find("does not list"), std::string::npos) << e;

  j = index();
  j["weight_map"][moved] = "../elsewhere.safetensors";
  write_index(j);
  e = load_error();
  EXPECT_NE(e.find("is not a file name in the model folder"), std::string::npos) << e;

  write_index(json{{"metadata", json::object()}});
  e = load_error();
  EXPECT_NE(e.find("key \"weight_map\" must be a non-empty object"), std::string::npos) << e;
}

TEST_F(ShardedCheckpoint, AShardOfAnotherModelIsRefusedNamingTheTensor) {
  LlamaConfig other = config_;
  other.hidden_size = 32;
  other.head_size = 16;
  std::ofstream(dir_.file(kConfigFile)) << llama_config_json(other);
  const std::string e = load_error();
  EXPECT_NE(e.find("has shape"), std::string::npos) << e;
  EXPECT_NE(e.find("model-0000"), std::string::npos) << e;
}

}  // namespace
}  // namespace orion::model
