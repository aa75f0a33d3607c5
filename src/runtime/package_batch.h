#pragma once
// PackageBatch: up to `sequences()` decoder sequences run from one package together, as a
// server's concurrent requests: each slot's prompt by the prefill program, then one token of
// every slot that asks in one run of the decode_batch program (model/decoder_ane_package.h),
// so that the weights are read once for all of them.
//
// The KV cache: each of decode_batch's cache inputs is one fp16 surface [1, C, 1, sequences *
// capacity] kept resident in its kernels (PackageRunner::keep_resident), slot s's positions in
// columns [s * capacity, (s + 1) * capacity). A prefill packs its rows into its slot's part
// (zeros after them); a step copies each row's new key and value column into its slot's next
// column. The mask opens, for row s, its slot's cached positions and its own key: the rows of
// slots that did not ask run on token 0 and see only themselves, and their results are dropped.
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/package_runner.h"

namespace orion::runtime {

class PackageBatch {
 public:
  // The runner must hold "prefill" and "decode_batch" programs with session blocks, the
  // latter's caches read by kernels only. Throws orion::Error otherwise.
  explicit PackageBatch(PackageRunner& runner);

  std::int64_t sequences() const { return sequences_; }
  std::int64_t capacity() const { return capacity_; }  // positions a slot can attend to
  std::int64_t prefill_window() const { return prefill_seq_; }
  std::int64_t position(int slot) const { return positions_.at(static_cast<std::size_t>(slot)); }

  // Runs `tokens` (1 <= size <= prefill_window()) from position 0 in `slot`, replacing what it
  // held; returns the logits of every prompt position, [size, vocab].
  Tensor prefill(int slot, std::span<const std::int32_t> tokens);
  // One token for each of `slots` (distinct; tokens[i] for slots[i]) at its position, in one
  // run; returns their logits, [slots.size(), vocab], and appends their keys and values.
  Tensor decode(std::span<const int> slots, std::span<const std::int32_t> tokens);

 private:
  struct CacheEntry {
    std::string prefill_new, batch_new, past;
    std::vector<PackageRunner::SurfaceRef> resident;
  };
  void check_slot(int slot) const;
  std::vector<CacheEntry>& resident();  // the cache surfaces, kept resident at first use

  PackageRunner& runner_;
  std::int64_t prefill_seq_ = 0, capacity_ = 0, sequences_ = 0;
  std::vector<CacheEntry> cache_;
  bool kept_ = false;
  std::vector<std::int64_t> positions_;
};

}  // namespace orion::runtime
