#pragma once
// The trainer's batches from a token file: a token stream's windows (train/data/data_loader.h)
// or a record file's length-bucketed records (train/data/record_loader.h), for training and
// for the held-out splits' evaluations.
#include <memory>
#include <string>

#include "train/data/record_loader.h"
#include "train/data/token_file.h"
#include "train/trainer.h"

namespace orion::train {

// The buckets a run uses: the config's, else sequence_buckets(seq, 32, on_device).
std::vector<std::int64_t> run_buckets(const TrainConfig& config, bool on_device);

// Record files get a RecordLoader over each split; its stats (truncated, skipped...) of the
// training split into `stats` when given. Errors name the file.
TrainData make_train_data(std::shared_ptr<const TokenFile> file, const TrainConfig& config,
                          RecordLoaderStats* stats = nullptr);

}  // namespace orion::train
