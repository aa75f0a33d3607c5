#include "train/data/data_loader.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "core/error.h"
#include "core/temp_folder.h"

namespace orion::train {
namespace {

bool same(const Batch& a, const Batch& b) { return a.tokens == b.tokens && a.targets == b.targets; }

class DataLoaderTest : public ::testing::Test {
 protected:
  // Training token i is i (a token's value says where it came from); validation tokens are
  // 5000 + i, so that a window that strays across the split shows.
  void SetUp() override {
    std::vector<std::int32_t> train(kTrain), val(kVal);
    std::iota(train.begin(), train.end(), 0);
    std::iota(val.begin(), val.end(), 5000);
    write_token_file(path_, 8000, std::nullopt, train, val);
  }
  static constexpr std::int32_t kTrain = 1000, kVal = 203;
  TempFolder dir_{"orion-loader-test"};
  std::string path_ = dir_.path() + "/data.tok";
};

TEST_F(DataLoaderTest, TargetsAreTheNextTokensAndWindowsStayInsideTheSplit) {
  const TokenFile f = TokenFile::open(path_);
  for (Split split : {Split::train, Split::val}) {
    const std::int32_t lo = split == Split::train ? 0 : 5000, n = split == Split::train ? kTrain : kVal;
    DataLoader loader(f, split, 3, 16, 42);
    for (int b = 0; b < 40; ++b) {
      const Batch batch = loader.next();
      ASSERT_EQ(batch.tokens.size(), 3u * 16u);
      ASSERT_EQ(batch.targets.size(), 3u * 16u);
      for (std::size_t i = 0; i < batch.tokens.size(); ++i) {
        EXPECT_GE(batch.tokens[i], lo);
        EXPECT_LT(batch.targets[i], lo + n);
        EXPECT_EQ(batch.targets[i], batch.tokens[i] + 1);  // the tokens are consecutive numbers
        // A row is one contiguous window.
        if (i % 16 != 0) {
          EXPECT_EQ(batch.tokens[i], batch.tokens[i - 1] + 1);
        }
      }
    }
  }
}

TEST_F(DataLoaderTest, TheSameSeedGivesTheSameBatchesAndADifferentSeedOthers) {
  const TokenFile f = TokenFile::open(path_);
  DataLoader a(f, Split::train, 4, 8, 7), b(f, Split::train, 4, 8, 7), c(f, Split::train, 4, 8, 8);
  int differing = 0;
  for (int i = 0; i < 50; ++i) {
    const Batch ba = a.next(), bb = b.next(), bc = c.next();
    EXPECT_TRUE(same(ba, bb)) << "batch " << i;
    differing += same(ba, bc) ? 0 : 1;
  }
  EXPECT_GT(differing, 45);
}

TEST_F(DataLoaderTest, RestoringAPositionContinuesExactly) {
  const TokenFile f = TokenFile::open(path_);
  DataLoader reference(f, Split::train, 5, 12, 99);
  std::vector<Batch> expected;
  // 150 batches of 5 windows cross many epochs of about 83 windows.
  for (int i = 0; i < 150; ++i) expected.push_back(reference.next());
  for (std::uint64_t k : {0u, 1u, 16u, 17u, 80u, 149u}) {
    DataLoader first(f, Split::train, 5, 12, 99);
    for (std::uint64_t i = 0; i < k; ++i) first.next();
    const LoaderState state = loader_state_from_json(to_json(first.state()), "test");
    EXPECT_EQ(state.position, k);
    EXPECT_EQ(state.seed, 99u);
    DataLoader resumed(f, Split::train, 5, 12, 12345);  // the state's seed wins
    resumed.restore(state);
    for (std::uint64_t i = k; i < 150; ++i) ASSERT_TRUE(same(resumed.next(), expected[i])) << "k " << k << " batch " << i;
  }
  // Going back works too.
  reference.restore({99, 3});
  EXPECT_TRUE(same(reference.next(), expected[3]));
}

TEST_F(DataLoaderTest, EachEpochVisitsEveryWindowOnce) {
  const TokenFile f = TokenFile::open(path_);
  const std::int64_t seq = 10;
  DataLoader loader(f, Split::train, 1, seq, 5);
  // One window per batch; windows of an epoch start at offset + k * seq.
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    const std::uint64_t w = loader.windows_in_epoch(epoch);
    EXPECT_GE(w, (kTrain - 1) / seq - 1);
    EXPECT_LE(w, (kTrain - 1) / seq);
    std::map<std::int32_t, int> starts;
    for (std::uint64_t i = 0; i < w; ++i) ++starts[loader.next().tokens[0]];
    EXPECT_EQ(starts.size(), w);
    const std::int32_t offset = starts.begin()->first;
    EXPECT_LT(offset, seq);
    for (const auto& [start, count] : starts) {
      EXPECT_EQ(count, 1);
      EXPECT_EQ((start - offset) % seq, 0);
    }
  }
}

TEST_F(DataLoaderTest, TheLoaderOutlivesTheTokenFileItWasGiven) {
  std::optional<DataLoader> loader;
  {
    const TokenFile f = TokenFile::open(path_);
    loader.emplace(f, Split::val, 2, 8, 1);
  }
  const Batch b = loader->next();
  EXPECT_GE(b.tokens[0], 5000);
}

TEST_F(DataLoaderTest, ASplitShorterThanOneWindowIsRefused) {
  const TokenFile f = TokenFile::open(path_);
  EXPECT_NO_THROW(DataLoader(f, Split::val, 1, kVal - 1, 0));  // exactly seq + 1 tokens
  try {
    DataLoader(f, Split::val, 1, kVal, 0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data.tok: the val split has 203 tokens, fewer than the 204"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(DataLoader(f, Split::train, 0, 8, 0), Error);
  EXPECT_THROW(DataLoader(f, Split::train, 1, 0, 0), Error);
}

TEST(LoaderState, JsonErrorsNameTheFileAndTheField) {
  try {
    loader_state_from_json(nlohmann::json{{"seed", 1}, {"position", -3}}, "ckpt/state.json: data");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "ckpt/state.json: data: loader state: \"position\" is -3, not a non-negative integer");
  }
  EXPECT_THROW(loader_state_from_json(nlohmann::json{{"position", 3}}, "x"), Error);
  EXPECT_THROW(loader_state_from_json(nlohmann::json::array(), "x"), Error);
  const LoaderState big{~std::uint64_t{0}, 123456789012345ull};
  const LoaderState back = loader_state_from_json(to_json(big), "x");
  EXPECT_EQ(back.seed, big.seed);
  EXPECT_EQ(back.position, big.position);
}

}  // namespace
}  // namespace orion::train
