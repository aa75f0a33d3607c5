#include "train/data/record_stats.h"

#include <algorithm>

namespace orion::train {

namespace {

// The value at fraction q of sorted, non-empty `v` (nearest rank).
std::uint64_t nearest_rank(const std::vector<std::uint64_t>& v, double q) {
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

RecordStats record_stats(const Records& records, std::int64_t seq) {
  RecordStats s;
  s.records = records.count();
  s.tokens = records.tokens.size();
  s.trained_tokens = records.trained_tokens();
  const auto limit = static_cast<std::uint64_t>(seq) + 1;
  std::vector<std::uint64_t> lengths;
  lengths.reserve(records.count());
  for (std::size_t r = 0; r < records.count(); ++r) {
    lengths.push_back(records.length(r));
    s.truncated += records.length(r) > limit;
    const auto mask = records.mask_of(r);
    const auto kept = static_cast<std::size_t>(std::min<std::uint64_t>(mask.size(), limit));
    for (std::size_t t = 1; t < kept; ++t) s.trained_tokens_kept += mask[t] != 0;
  }
  if (lengths.empty()) return s;
  std::sort(lengths.begin(), lengths.end());
  s.min_length = lengths.front();
  s.p50 = nearest_rank(lengths, 0.5);
  s.p90 = nearest_rank(lengths, 0.9);
  s.p99 = nearest_rank(lengths, 0.99);
  s.max_length = lengths.back();
  std::uint64_t lo = 0;
  for (std::uint64_t hi = 32;; hi *= 2) {
    const auto n = static_cast<std::size_t>(std::upper_bound(lengths.begin(), lengths.end(), hi) -
                                            std::upper_bound(lengths.begin(), lengths.end(), lo));
    if (n) s.histogram.push_back({lo, hi, n});
    lo = hi;
    if (lo >= lengths.back()) break;
  }
  return s;
}

}  // namespace orion::train
