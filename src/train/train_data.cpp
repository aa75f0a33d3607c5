#include "train/train_data.h"

#include "core/error.h"

namespace orion::train {

std::vector<std::int64_t> run_buckets(const TrainConfig& c, bool on_device) {
  return c.buckets.empty() ? sequence_buckets(c.seq, on_device) : c.buckets;
}

TrainData make_train_data(std::shared_ptr<const TokenFile> file, const TrainConfig& c, RecordLoaderStats* stats) {
  TrainData d;
  if (!file->has_records()) {
    d.train = std::make_unique<DataLoader>(*file, Split::train, c.batch, c.seq, c.seed);
    if (file->size(Split::val) >= static_cast<std::uint64_t>(c.seq) + 1) {
      // Seed 0 whatever the run's: every evaluation of every run sees the same windows.
      d.val = [file, c] { return std::make_unique<DataLoader>(*file, Split::val, c.batch, c.seq, 0); };
    }
    return d;
  }
  RecordLoaderOptions o{.batch = c.batch, .seq = c.seq, .buckets = c.buckets, .skip_long = c.skip_long, .seed = c.seed,
                        .pad_id = static_cast<std::int32_t>(file->header().eot_id.value_or(0))};
  if (o.buckets.empty()) o.buckets = run_buckets(c, false);
  auto train = std::make_unique<RecordLoader>(file->records(Split::train), o, file->path() + " (train split)");
  if (stats) *stats = train->stats();
  d.train = std::move(train);
  for (Split split : {Split::val, Split::test}) {
    if (file->size(split) == 0) continue;
    // One loader made now (its records copied and sorted once); each pass a copy from batch 0.
    auto loader = std::make_shared<const RecordLoader>(file->records(split), o,
                                                       file->path() + " (" + split_name(split) + " split)");
    auto pass = [loader] { return std::unique_ptr<BatchSource>(std::make_unique<RecordPass>(loader)); };
    (split == Split::val ? d.val : d.test) = pass;
    (split == Split::val ? d.val_batches : d.test_batches) = static_cast<std::int64_t>(loader->batches_per_epoch());
  }
  return d;
}

}  // namespace orion::train
