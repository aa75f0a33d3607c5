#pragma once
// Batches of records (a record file's split, train/data/records.h) for the trainer, bucketed
// by length: the records are sorted by length once and cut into batches of `batch`
// neighbours, and each batch is padded only to the smallest sequence bucket that holds its
// longest record (padding's targets weigh 0). An epoch visits every batch once, in an order
// drawn from (seed, epoch), as mlx-lm's trainer does.
// Why bucketing and not packing several records into one sequence: packing needs attention
// that stops at record boundaries, a mask the ANE's kernels and the CPU graphs would both have
// to take; sorted batches keep the graphs as they are and leave little padding (measured in
// docs/TRAINING.md), and each bucket is one graph, compiled once on a device.
//
// A record of more than seq + 1 tokens is cut to seq + 1 (or skipped with skip_long); one
// whose kept part has no trained target is dropped. Both are counted.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "train/data/data_loader.h"
#include "train/data/records.h"

namespace orion::train {

struct RecordLoaderOptions {
  std::int64_t batch = 4;
  std::int64_t seq = 512;                // the longest window; records are cut to seq + 1 tokens
  std::vector<std::int64_t> buckets;     // ascending, the last == seq; empty: {seq}
  bool skip_long = false;                // skip records longer than seq + 1 instead of cutting them
  std::uint64_t seed = 0;
  std::int32_t pad_id = 0;               // what padding's tokens and targets are
};

struct RecordLoaderStats {
  std::size_t records = 0;    // used
  std::size_t truncated = 0;  // cut to seq + 1 tokens
  std::size_t skipped = 0;    // longer than seq + 1 under skip_long
  std::size_t dropped = 0;    // no trained target left
  std::uint64_t trained_tokens = 0;  // per epoch: targets the loss covers
  std::uint64_t record_tokens = 0;   // per epoch: positions that hold a record's token (trained or context)
  std::uint64_t padded_tokens = 0;   // rows * seq of every batch of an epoch
  // The share of the positions run that hold no record's token.
  double padding_fraction() const {
    return padded_tokens ? 1.0 - static_cast<double>(record_tokens) / static_cast<double>(padded_tokens) : 0.0;
  }
};

// The default buckets for a longest window of `seq`: each is one more graph whose memory (the
// cpu's activations) or kernels (a device's compiles) the run keeps, so they double: 16, 32,
// 64... below seq, and seq, on the cpu; 32, 64, 128... on a device, whose kernels take
// multiples of 32 tokens (ANE011). Sorted batches then pad a record by less than half, and
// mostly by much less (docs/RESULTS.md, "Fine-tuning on chat data").
std::vector<std::int64_t> sequence_buckets(std::int64_t seq, bool on_device);

class RecordLoader final : public BatchSource {
 public:
  // Throws orion::Error naming `source` when no record is left to train on, or the options are
  // inconsistent (buckets not ascending or not ending at seq).
  RecordLoader(const Records& records, const RecordLoaderOptions& options, const std::string& source);

  Batch next() override;
  LoaderState state() const override { return {seed_, position_}; }
  void restore(const LoaderState& state) override;

  std::size_t batches_per_epoch() const { return batches_.size(); }
  const RecordLoaderStats& stats() const { return stats_; }
  // Batch k of the sorted order (every batch once for k < batches_per_epoch(): an evaluation).
  Batch batch(std::size_t k) const;

 private:
  struct Row {
    std::vector<std::int32_t> tokens;  // at most seq + 1
    std::vector<std::uint8_t> mask;
  };
  std::vector<Row> rows_;
  std::vector<std::vector<std::size_t>> batches_;  // rows of each batch, shortest records first
  std::vector<std::int64_t> seq_of_;               // each batch's bucket
  RecordLoaderOptions options_;
  RecordLoaderStats stats_;
  std::uint64_t seed_ = 0, position_ = 0;
  std::uint64_t epoch_ = ~std::uint64_t{0};  // the epoch `order_` is for
  std::vector<std::size_t> order_;
};

// Every batch of a loader in its sorted order, round and round from batch 0: an evaluation's
// pass, the same batches every time.
class RecordPass final : public BatchSource {
 public:
  explicit RecordPass(std::shared_ptr<const RecordLoader> loader) : loader_(std::move(loader)) {}
  Batch next() override { return loader_->batch(k_++ % loader_->batches_per_epoch()); }
  LoaderState state() const override { return {0, k_}; }
  void restore(const LoaderState& s) override { k_ = s.position; }

 private:
  std::shared_ptr<const RecordLoader> loader_;
  std::uint64_t k_ = 0;
};

}  // namespace orion::train
