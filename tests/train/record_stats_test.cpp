// train::record_stats: what `orion data stats` reports of a split of records: trained tokens,
// what cutting at seq + 1 keeps of them, nearest-rank quantiles and the doubling histogram.
#include "train/data/record_stats.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace orion::train {
namespace {

// A record of `length` tokens whose mask marks the tokens from `first_trained` on.
void add_stats_record(Records& r, std::size_t length, std::size_t first_trained) {
  const std::vector<std::int32_t> tokens(length, 7);
  std::vector<std::uint8_t> mask(length, 0);
  for (std::size_t i = first_trained; i < length; ++i) mask[i] = 1;
  r.add(tokens, mask);
}

TEST(RecordStats, CountsWhatCuttingAtSeqKeeps) {
  Records r;
  add_stats_record(r, 10, 1);    // 9 trained, all kept
  add_stats_record(r, 40, 20);   // 20 trained, cut to 33 tokens: 13 kept
  add_stats_record(r, 100, 50);  // 50 trained, none within the first 33
  add_stats_record(r, 33, 0);    // exactly seq + 1: not cut; the first token is never trained
  const RecordStats s = record_stats(r, 32);
  EXPECT_EQ(s.records, 4u);
  EXPECT_EQ(s.tokens, 183u);
  EXPECT_EQ(s.trained_tokens, 9u + 20u + 50u + 32u);
  EXPECT_EQ(s.trained_tokens, r.trained_tokens());
  EXPECT_EQ(s.truncated, 2u);
  EXPECT_EQ(s.trained_tokens_kept, 9u + 13u + 0u + 32u);
}

TEST(RecordStats, QuantilesAreNearestRankAndBinsDouble) {
  Records r;
  for (std::size_t len = 1; len <= 100; ++len) add_stats_record(r, len, 1);
  const RecordStats s = record_stats(r, 2048);
  EXPECT_EQ(s.truncated, 0u);
  EXPECT_EQ(s.min_length, 1u);
  EXPECT_EQ(s.p50, 51u);  // index 50 of the sorted 100
  EXPECT_EQ(s.p90, 91u);
  EXPECT_EQ(s.p99, 100u);
  EXPECT_EQ(s.max_length, 100u);
  ASSERT_EQ(s.histogram.size(), 3u);
  EXPECT_EQ(s.histogram[0].lo, 0u);
  EXPECT_EQ(s.histogram[0].hi, 32u);
  EXPECT_EQ(s.histogram[0].records, 32u);
  EXPECT_EQ(s.histogram[1].records, 32u);
  EXPECT_EQ(s.histogram[2].lo, 64u);
  EXPECT_EQ(s.histogram[2].hi, 128u);
  EXPECT_EQ(s.histogram[2].records, 36u);
}

TEST(RecordStats, EmptyBinsAreLeftOut) {
  Records r;
  add_stats_record(r, 5, 1);
  add_stats_record(r, 300, 1);
  const RecordStats s = record_stats(r, 512);
  ASSERT_EQ(s.histogram.size(), 2u);
  EXPECT_EQ(s.histogram[0].hi, 32u);
  EXPECT_EQ(s.histogram[1].lo, 256u);
  EXPECT_EQ(s.histogram[1].hi, 512u);
}

TEST(RecordStats, NoRecordsIsAllZero) {
  const RecordStats s = record_stats(Records{}, 32);
  EXPECT_EQ(s.records, 0u);
  EXPECT_EQ(s.max_length, 0u);
  EXPECT_TRUE(s.histogram.empty());
}

}  // namespace
}  // namespace orion::train
