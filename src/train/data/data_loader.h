#pragma once
// The trainer's data loader: batches of token windows drawn from one split of a token file,
// deterministically from a seed, so that a checkpoint's (seed, position) resumes the exact
// stream of batches.
//
// Sampling: epochs of shuffled, non-overlapping windows. Epoch e starts at an offset o_e in
// [0, seq) (bounded by the split's length) and cuts the split into W_e = (n - 1 - o_e) / seq
// windows of seq + 1 tokens starting at o_e + k * seq (neighbours share one token: the last
// target of one is the first input of the next). The windows are visited in a permutation
// (Fisher-Yates) drawn, like o_e, from an Rng seeded by (seed, e). Batch b takes windows
// b * batch ... b * batch + batch - 1 of the concatenated epochs.
// Why: within an epoch every token is a target exactly once (random offsets would repeat some
// and miss others), the offset moves the window boundaries between epochs so that the model
// does not always see the same contexts, and batch b is a pure function of (seed, b) that
// restore() reaches in O(epochs + W) without replaying the batches before it. The permutation
// of the current epoch is kept (8 bytes per window).
#include <cstdint>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/random.h"
#include "train/data/token_file.h"

namespace orion::train {

// rows * seq long, row-major [rows][seq]; targets[i] is the token after tokens[i] and
// weights[i] 1 where the loss covers that target, 0 where it does not (a masked prompt's
// token, or padding). `trained` is how many targets have weight 1.
struct Batch {
  std::int64_t rows = 0, seq = 0;
  std::vector<std::int32_t> tokens, targets;
  std::vector<float> weights;
  std::int64_t trained = 0;
};

// What a checkpoint keeps of a loader. position: batches drawn so far.
struct LoaderState {
  std::uint64_t seed = 0;
  std::uint64_t position = 0;
};

// {"seed": S, "position": P}.
nlohmann::json to_json(const LoaderState& state);
// The inverse; `where` names the file (and the place in it) for errors.
LoaderState loader_state_from_json(const nlohmann::json& j, std::string_view where);

// Where the trainer's batches come from: a token stream's windows (DataLoader) or a record
// file's bucketed records (train/data/record_loader.h). Batch b is a pure function of the
// seed and b, so that a checkpoint's state resumes the stream exactly.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual Batch next() = 0;
  virtual LoaderState state() const = 0;
  virtual void restore(const LoaderState& state) = 0;
};

// The Rng of epoch `epoch` of a loader seeded with `seed` (decorrelated from its neighbours').
Rng epoch_rng(std::uint64_t seed, std::uint64_t epoch);

class DataLoader final : public BatchSource {
 public:
  // Windows of seq + 1 tokens sampled from the split; batch b is a pure function of (seed, b),
  // so a restored position continues exactly. Throws orion::Error naming the file when the
  // split has fewer than seq + 1 tokens or batch or seq is not positive. The loader keeps a copy
  // of `file`, which shares its mapping: the caller's TokenFile may go.
  DataLoader(const TokenFile& file, Split split, std::int64_t batch, std::int64_t seq, std::uint64_t seed);

  Batch next() override;
  LoaderState state() const override { return {seed_, position_}; }
  void restore(const LoaderState& state) override;

  // Windows in one epoch of the split (W_e above; it varies by at most one between epochs).
  std::uint64_t windows_in_epoch(std::uint64_t epoch) const;

 private:
  struct Epoch {
    std::uint64_t offset = 0, windows = 0;
  };
  // Epoch `epoch`'s offset and window count, and its permutation into `order` if given.
  Epoch draw_epoch(std::uint64_t epoch, std::vector<std::uint64_t>* order) const;
  // Makes the cached epoch the one holding global window `g`.
  void seek_window(std::uint64_t g);

  TokenFile file_;
  Split split_;
  std::int64_t batch_, seq_;
  std::uint64_t seed_ = 0, position_ = 0;
  // The cached epoch: its number, its first global window, its shape and permutation.
  std::uint64_t epoch_ = 0, epoch_first_ = 0;
  Epoch shape_;
  std::vector<std::uint64_t> order_;
  bool cached_ = false;
};

}  // namespace orion::train
