#include "train/data/record_loader.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace orion::train {

std::vector<std::int64_t> sequence_buckets(std::int64_t seq, bool on_device) {
  std::vector<std::int64_t> out;
  for (std::int64_t b = on_device ? 32 : 16; b < seq; b *= 2) out.push_back(b);
  out.push_back(seq);
  return out;
}

RecordLoader::RecordLoader(const Records& records, const RecordLoaderOptions& o, const std::string& source)
    : options_(o), seed_(o.seed) {
  if (o.batch <= 0 || o.seq <= 0)
    throw Error::in_file(source, "record loader: batch and sequence length must be positive");
  if (options_.buckets.empty()) options_.buckets = {o.seq};
  const auto& b = options_.buckets;
  if (b.back() != o.seq || !std::is_sorted(b.begin(), b.end()) || std::adjacent_find(b.begin(), b.end()) != b.end() ||
      b.front() <= 0)
    throw Error("--buckets must be increasing positive lengths ending at --seq " + std::to_string(o.seq));
  const auto limit = static_cast<std::size_t>(o.seq + 1);
  for (std::size_t r = 0; r < records.count(); ++r) {
    auto tokens = records.tokens_of(r);
    auto mask = records.mask_of(r);
    if (tokens.size() > limit) {
      if (o.skip_long) {
        ++stats_.skipped;
        continue;
      }
      ++stats_.truncated;
      tokens = tokens.first(limit);
      mask = mask.first(limit);
    }
    const auto trained = static_cast<std::uint64_t>(std::count(mask.begin() + 1, mask.end(), std::uint8_t{1}));
    if (tokens.size() < 2 || trained == 0) {
      ++stats_.dropped;
      continue;
    }
    stats_.trained_tokens += trained;
    stats_.record_tokens += tokens.size() - 1;
    rows_.push_back({{tokens.begin(), tokens.end()}, {mask.begin(), mask.end()}});
  }
  stats_.records = rows_.size();
  if (rows_.empty())
    throw Error::in_file(source, "no record is left to train on (" + std::to_string(stats_.skipped) + " longer than --seq " +
                                     std::to_string(o.seq) + " + 1 skipped, " + std::to_string(stats_.dropped) +
                                     " without a trained token)");
  std::vector<std::size_t> sorted(rows_.size());
  std::iota(sorted.begin(), sorted.end(), std::size_t{0});
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](std::size_t x, std::size_t y) { return rows_[x].tokens.size() < rows_[y].tokens.size(); });
  for (std::size_t at = 0; at < sorted.size(); at += static_cast<std::size_t>(o.batch)) {
    const std::size_t end = std::min(sorted.size(), at + static_cast<std::size_t>(o.batch));
    batches_.emplace_back(sorted.begin() + static_cast<std::ptrdiff_t>(at), sorted.begin() + static_cast<std::ptrdiff_t>(end));
    const auto longest = static_cast<std::int64_t>(rows_[sorted[end - 1]].tokens.size()) - 1;
    seq_of_.push_back(*std::lower_bound(b.begin(), b.end(), longest));
    stats_.padded_tokens += static_cast<std::uint64_t>(o.batch * seq_of_.back());
  }
}

Batch RecordLoader::batch(std::size_t k) const {
  Batch out;
  out.rows = options_.batch;
  out.seq = seq_of_[k];
  const auto n = static_cast<std::size_t>(out.rows * out.seq);
  out.tokens.assign(n, options_.pad_id);
  out.targets.assign(n, options_.pad_id);
  out.weights.assign(n, 0.0f);
  const auto seq = static_cast<std::size_t>(out.seq);
  for (std::size_t i = 0; i < batches_[k].size(); ++i) {
    const Row& row = rows_[batches_[k][i]];
    for (std::size_t t = 0; t + 1 < row.tokens.size(); ++t) {
      out.tokens[i * seq + t] = row.tokens[t];
      out.targets[i * seq + t] = row.tokens[t + 1];
      out.weights[i * seq + t] = row.mask[t + 1] ? 1.0f : 0.0f;
      out.trained += row.mask[t + 1];
    }
  }
  return out;
}

Batch RecordLoader::next() {
  const std::uint64_t n = batches_.size(), epoch = position_ / n;
  if (epoch != epoch_) {
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), std::size_t{0});
    Rng rng = epoch_rng(seed_, epoch);
    for (std::uint64_t i = n; i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
    epoch_ = epoch;
  }
  return batch(order_[position_++ % n]);
}

void RecordLoader::restore(const LoaderState& state) {
  seed_ = state.seed;
  position_ = state.position;
  epoch_ = ~std::uint64_t{0};
}

}  // namespace orion::train
