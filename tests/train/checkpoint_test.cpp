#include "train/checkpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "core/error.h"
#include "core/random.h"
#include "core/stopwatch.h"
#include "core/testing_temp_dir.h"
#include "model/gpt2/gpt2_config.h"
#include "model/gpt2/gpt2_model.h"
#include "test_scale.h"
#include "text/bpe_tokenizer.h"

namespace orion::train {
namespace {

namespace fs = std::filesystem;
using testing_util::TempDir;

TensorMap random_tensors(const std::vector<std::pair<std::string, Shape>>& shapes, std::uint64_t seed) {
  Rng rng(seed);
  TensorMap out;
  for (const auto& [name, shape] : shapes) {
    Tensor t(DType::f32, shape);
    rng.fill_normal(t.span<float>(), 0.0f, 1.0f);
    out.emplace(name, t);
  }
  return out;
}

// A tiny GPT-2's weights, optimizer moments and trainer state, all depending on `seed`.
struct Fixture {
  model::Gpt2Config config;
  TensorMap params, optimizer;
  nlohmann::json state;
  std::string tokenizer_dir;

  Fixture(std::uint64_t seed, const std::string& tok_dir, std::int64_t dim = 32) : tokenizer_dir(tok_dir) {
    config.n_layer = 2;
    config.n_embd = dim;
    config.n_head = 2;
    config.n_positions = 16;
    config.vocab_size = 257;
    config.eos_token_id = 256;
    params = model::gpt2_init_weights(config, seed);
    std::vector<std::pair<std::string, Shape>> moments;
    for (const auto& [name, t] : params) {
      moments.emplace_back("m." + name, t.shape());
      moments.emplace_back("v." + name, t.shape());
    }
    optimizer = random_tensors(moments, seed + 1);
    state = {{"loss_scaler", {{"scale", 1024.0}, {"clean_steps", 3}, {"skipped_steps", 1}}},
             {"rng", {1, 2, 3, seed}},
             {"loader", {{"position", 12345}}}};
  }

  CheckpointData data(std::int64_t step) const {
    CheckpointData d;
    d.step = step;
    d.config_json = model::gpt2_config_json(config);
    d.params = &params;
    for (const auto& e : fs::directory_iterator(tokenizer_dir)) d.model_files.push_back(e.path().string());
    d.optimizer = optimizer;
    d.state = state;
    return d;
  }
};

void expect_same(const TensorMap& a, const TensorMap& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (const auto& [name, t] : a) {
    const auto it = b.find(name);
    ASSERT_NE(it, b.end()) << what << ": " << name;
    ASSERT_EQ(t.dtype(), it->second.dtype()) << what << ": " << name;
    ASSERT_EQ(t.shape(), it->second.shape()) << what << ": " << name;
    ASSERT_EQ(std::memcmp(t.contiguous().raw(), it->second.contiguous().raw(), t.nbytes()), 0) << what << ": " << name;
  }
}

void expect_is(const LoadedCheckpoint& c, const Fixture& f, std::int64_t step) {
  EXPECT_EQ(c.step, step);
  EXPECT_EQ(c.config_json, model::gpt2_config_json(f.config));
  EXPECT_EQ(c.state, f.state);
  expect_same(c.params, f.params, "params");
  expect_same(c.optimizer, f.optimizer, "optimizer");
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override { text::BpeTokenizer::byte_level().save(tok.path()); }
  std::string out() const { return (fs::path(dir.path()) / "run").string(); }
  std::string step_dir(std::int64_t step) const { return (fs::path(out()) / checkpoint_folder_name(step)).string(); }

  TempDir dir, tok;
};

TEST_F(CheckpointTest, RoundTripsBitExactAndIsAModelFolder) {
  EXPECT_FALSE(load_latest_checkpoint(out()).has_value());  // no folder yet
  const Fixture f(1, tok.path());
  save_checkpoint(out(), f.data(100), 3);
  EXPECT_TRUE(fs::is_directory(step_dir(100)));
  EXPECT_EQ(checkpoint_folder_name(100), "step-00000100");
  for (const auto& e : fs::directory_iterator(tok.path()))
    EXPECT_TRUE(fs::exists(fs::path(step_dir(100)) / e.path().filename())) << e.path();
  for (const char* name : {"config.json", "model.safetensors", "optimizer.safetensors", "checkpoint.json"})
    EXPECT_TRUE(fs::exists(fs::path(step_dir(100)) / name)) << name;

  ::testing::internal::CaptureStderr();
  const std::optional<LoadedCheckpoint> c = load_latest_checkpoint(out());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->dir, step_dir(100));
  expect_is(*c, f, 100);
  // The loaded weights are the trainer's to update.
  c->params.begin()->second.span<float>()[0] = 7.0f;

  // The model layer reads the checkpoint as an ordinary model folder.
  const model::Gpt2Model m = model::Gpt2Model::load(step_dir(100));
  EXPECT_EQ(m.config().n_embd, 32);
  expect_same(m.weights(), f.params, "model folder");
  EXPECT_FALSE(load_checkpoint((fs::path(out()) / "step-00000999").string()).has_value());
}

// What `train` without --resume refuses to write over, and what --resume could continue from:
// folders named as checkpoints, nothing else that starts like one.
TEST_F(CheckpointTest, HasCheckpointFoldersCountsOnlyCheckpointNames) {
  EXPECT_FALSE(has_checkpoint_folders(out()));  // no folder yet
  fs::create_directories(fs::path(out()) / "step-1");
  fs::create_directories(fs::path(out()) / ".step-00000002.tmp.AbCdEf");
  std::ofstream(fs::path(out()) / "step-00000003") << "a file";
  EXPECT_FALSE(has_checkpoint_folders(out()));
  const Fixture f(1, tok.path());
  save_checkpoint(out(), f.data(4), 3);
  EXPECT_TRUE(has_checkpoint_folders(out()));
}

TEST_F(CheckpointTest, KeepsTheNewestKeepLast) {
  const Fixture f(2, tok.path());
  for (const std::int64_t step : {10, 20, 30, 40, 50}) save_checkpoint(out(), f.data(step), 2);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"step-00000040", "step-00000050"}));
  // keep_last < 1 keeps them all; re-saving a step replaces it.
  save_checkpoint(out(), f.data(60), 0);
  const Fixture g(3, tok.path());
  save_checkpoint(out(), g.data(40), 0);
  names.clear();
  for (const auto& e : fs::directory_iterator(out())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"step-00000040", "step-00000050", "step-00000060"}));
  expect_is(*load_checkpoint(step_dir(40)), g, 40);
  // Pruning never removes the checkpoint just written, even when newer ones outnumber keep_last.
  save_checkpoint(out(), f.data(45), 1);
  EXPECT_TRUE(fs::exists(step_dir(45)));
  EXPECT_TRUE(fs::exists(step_dir(60)));
  EXPECT_FALSE(fs::exists(step_dir(50)));
}

// Damage to the newest checkpoint makes load_latest fall back to the one before, warning on
// stderr with the folder and the reason.
TEST_F(CheckpointTest, SkipsADamagedNewestCheckpointWithAWarning) {
  struct Damage {
    const char* what;
    std::function<void(const fs::path&)> apply;
    const char* reason;
  };
  const std::vector<Damage> damages = {
      {"flipped byte", [](const fs::path& d) {
         std::string bytes = testing_util::read_bytes((d / "model.safetensors").string());
         bytes[bytes.size() / 2] ^= 0x01;
         testing_util::write_bytes((d / "model.safetensors").string(), bytes);
       }, "checksum mismatch"},
      {"truncated file", [](const fs::path& d) { fs::resize_file(d / "optimizer.safetensors", 1000); }, "bytes"},
      {"missing file", [](const fs::path& d) { fs::remove(d / "config.json"); }, "config.json: missing"},
      {"missing tokenizer file", [](const fs::path& d) { fs::remove(d / "vocab.json"); }, "vocab.json: missing"},
      {"missing manifest", [](const fs::path& d) { fs::remove(d / "checkpoint.json"); }, "checkpoint.json: missing"},
      {"torn manifest", [](const fs::path& d) { fs::resize_file(d / "checkpoint.json", 40); }, "not valid JSON"},
      // Copying or printing a value nested this deep would overflow the stack.
      {"deeply nested manifest", [](const fs::path& d) {
         testing_util::write_bytes((d / "checkpoint.json").string(),
                                   "{\"state\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
       }, "nested more than"},
      {"number beyond a double", [](const fs::path& d) {
         testing_util::write_bytes((d / "checkpoint.json").string(), "{\"step\": 1e999}");
       }, "not valid JSON"},
  };
  const Fixture older(4, tok.path()), newer(5, tok.path());
  for (const Damage& damage : damages) {
    fs::remove_all(out());
    save_checkpoint(out(), older.data(1), 0);
    save_checkpoint(out(), newer.data(2), 0);
    damage.apply(step_dir(2));
    ::testing::internal::CaptureStderr();
    const std::optional<LoadedCheckpoint> c = load_latest_checkpoint(out());
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(c.has_value()) << damage.what;
    expect_is(*c, older, 1);
    EXPECT_NE(err.find("skipping checkpoint " + step_dir(2)), std::string::npos) << damage.what << ": " << err;
    EXPECT_NE(err.find(damage.reason), std::string::npos) << damage.what << ": " << err;
    EXPECT_THROW(load_checkpoint(step_dir(2)), Error) << damage.what;
  }
  // Both damaged: nothing to resume from.
  fs::remove_all(step_dir(1) + "/model.safetensors");
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(load_latest_checkpoint(out()).has_value());
  ::testing::internal::GetCapturedStderr();
}

TEST_F(CheckpointTest, IgnoresALeftoverTemporaryFolderAndTheNextSaveClearsIt) {
  const Fixture f(6, tok.path());
  save_checkpoint(out(), f.data(1), 0);
  // What a save killed before its rename leaves: a temporary folder with some of the files.
  const fs::path leftover = fs::path(out()) / ".step-00000002.tmp.AbCdEf";
  fs::create_directories(leftover);
  fs::copy_file(fs::path(step_dir(1)) / "checkpoint.json", leftover / "checkpoint.json");
  ::testing::internal::CaptureStderr();
  const std::optional<LoadedCheckpoint> c = load_latest_checkpoint(out());
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(c.has_value());
  expect_is(*c, f, 1);
  EXPECT_NE(err.find("ignoring " + leftover.string()), std::string::npos) << err;
  save_checkpoint(out(), f.data(3), 0);
  EXPECT_FALSE(fs::exists(leftover));
}

TEST_F(CheckpointTest, AManifestThatDisagreesWithTheFolderNameIsSkipped) {
  const Fixture f(7, tok.path());
  save_checkpoint(out(), f.data(1), 0);
  save_checkpoint(out(), f.data(2), 0);
  fs::rename(step_dir(2), step_dir(9));
  ::testing::internal::CaptureStderr();
  const std::optional<LoadedCheckpoint> c = load_latest_checkpoint(out());
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->step, 1);
  EXPECT_NE(err.find("says step 2"), std::string::npos) << err;
}

// kill -9 in the middle of save_checkpoint, at random moments over the time a save takes:
// load_latest must give the previous checkpoint or the complete new one, never anything else.
TEST_F(CheckpointTest, AKilledSaveLeavesThePreviousOrTheCompleteNewCheckpoint) {
  // About 6 MB of weights and 12 MB of moments (a quarter of that at the small scale): a save
  // long enough for the kills to land in each of its files and renames.
  const std::int64_t dim = testing_util::at_scale(256, 128);
  const Fixture older(8, tok.path(), dim), newer(9, tok.path(), dim);
  Stopwatch sw;
  save_checkpoint((fs::path(dir.path()) / "timing").string(), newer.data(2), 1);
  const double save_seconds = sw.seconds();
  fs::remove_all(fs::path(dir.path()) / "timing");

  Rng rng(2024);
  int got_old = 0, got_new = 0;
  for (int trial = 0; trial < 8; ++trial) {
    fs::remove_all(out());
    save_checkpoint(out(), older.data(1), 0);
    const double delay = rng.uniform_double() * 1.2 * save_seconds;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      try {
        save_checkpoint(out(), newer.data(2), 1);  // also removes step 1 once step 2 is in place
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0)) << "trial " << trial;
    ::testing::internal::CaptureStderr();
    const std::optional<LoadedCheckpoint> c = load_latest_checkpoint(out());
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(c.has_value()) << "trial " << trial << ", killed after " << delay << " s: " << err;
    if (c->step == 1) {
      expect_is(*c, older, 1);
      ++got_old;
    } else {
      expect_is(*c, newer, 2);
      ++got_new;
    }
  }
  std::printf("a save takes %.3f s; after the kills: %d previous, %d new\n", save_seconds, got_old, got_new);
}

}  // namespace
}  // namespace orion::train
