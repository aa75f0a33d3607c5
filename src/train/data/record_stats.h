#pragma once
// What a split of records holds, as `orion data stats` reports it: counts, the trained tokens
// and what cutting at --seq keeps of them, and the length distribution. Cutting follows the
// record loader's rule (train/data/record_loader.h): a record longer than seq + 1 tokens is cut
// to seq + 1, so the stats say before training what a run at that --seq would lose.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "train/data/records.h"

namespace orion::train {

// Records whose length is in (lo, hi].
struct LengthBin {
  std::uint64_t lo = 0, hi = 0;
  std::size_t records = 0;
};

struct RecordStats {
  std::size_t records = 0;
  std::uint64_t tokens = 0;
  std::uint64_t trained_tokens = 0;       // targets the loss covers (Records::trained_tokens)
  std::size_t truncated = 0;              // longer than seq + 1 tokens: cut by training
  std::uint64_t trained_tokens_kept = 0;  // the trained tokens within the first seq + 1 of each record
  // Record lengths: least, nearest-rank quantiles, greatest (all 0 without records).
  std::uint64_t min_length = 0, p50 = 0, p90 = 0, p99 = 0, max_length = 0;
  // Doubling bins (0, 32], (32, 64]... up to the longest record, empty ones left out: the
  // lengths bucketed batches pad to.
  std::vector<LengthBin> histogram;
};

// `records` measured against a training --seq of `seq` (positive).
RecordStats record_stats(const Records& records, std::int64_t seq);

}  // namespace orion::train
