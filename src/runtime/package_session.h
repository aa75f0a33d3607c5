#pragma once
// PackageSession: a decoder language model run from a compiled package: one prefill over the
// prompt, then one decode step per token, with the KV cache kept on the host between steps.
// It knows no architecture: the names it binds come from each program's "session" block in
// the manifest, which the model's package builder writes (model/decoder_ane_package.h):
//
//   prefill: {"tokens", "positions", "logits", "cache": [{"new": "k.0", "past": "past_k.0"}...]}
//            a window of `seq` tokens from position 0; a shorter prompt is padded at the end
//            (causal attention keeps the padding out of the real positions)
//   decode:  the same plus "mask" and "capacity": one token after `capacity` cache slots, of
//            which the first `position` hold keys and values; the additive mask opens those
//            and the token itself and closes the rest (-inf). The slots start zeroed, so that a
//            closed slot holds finite values (inf * 0 would be NaN).
//
// Where the cache lives between steps: when only kernels read a decode `past` input (attention
// over the cache compiled into the ANE kernels, model/decoder_ane_package.h), it stays in those
// kernels' fp16 input surfaces in device layout [1, C, 1, capacity] (PackageRunner::
// keep_resident): the prefill's rows are packed into them once (at the first decode step, so
// that a job that only prefills never compiles the decode kernels), and each step copies its
// new token's column from the kernel's `new` output surface into slot `position`, fp16 to fp16;
// nothing else of the cache is packed per step. An extend program (a prompt's chunk after the
// cache) reads the same cache from surfaces of its own, which every write goes to as well. Otherwise (attention on the host) the cache is
// f32 host tensors [capacity, width] passed to every decode run.
//
// A recurrent layer's state (the blocks' "state" entries: Qwen3.5's Gated DeltaNet, whose update
// runs on the host) is a whole value: every run takes the state as it was and gives the new one.
// The prefill program runs a window of its whole length only (the padding of a shorter prompt
// would advance the state), so a shorter prompt runs as decode steps from position 0.
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/package_runner.h"

namespace orion::runtime {

class PackageSession {
 public:
  // The runner must hold "prefill" and "decode" programs with session blocks. A session that
  // will decode on the device (`decodes`) has the decode kernels compiled while prefill runs;
  // one whose CPU takes over after prefill (--ane-prefill) never compiles them.
  explicit PackageSession(PackageRunner& runner, bool decodes = true);

  // Runs the prompt (1 <= size <= prefill_window()) from position 0, replacing the cache;
  // returns the logits of every prompt position, [size, vocab].
  Tensor prefill(std::span<const std::int32_t> tokens);
  // One token at position(); returns its logits [vocab] and appends its keys and values.
  Tensor decode(std::int32_t token);
  // With an extend program (chunk() > 0): 1 <= size <= chunk() tokens after position(), in one
  // run; returns their logits [size, vocab] and appends their keys and values.
  Tensor extend(std::span<const std::int32_t> tokens);
  std::int64_t chunk() const { return chunk_; }  // 0: no extend program

  std::int64_t position() const { return position_; }
  std::int64_t prefill_window() const { return prefill_seq_; }
  std::int64_t capacity() const { return capacity_; }  // positions decode can attend to
  // The cached rows [position(), width] of the cache entry the model calls `name` ("k.3"):
  // how a CPU decoder takes over after a prefill on the device.
  Tensor cache_rows(std::string_view name) const;

 private:
  struct CacheEntry {
    std::string prefill_new, decode_new, past;
    std::int64_t width = 0;
    Tensor slots;  // on the host: [capacity, width] f32; on the device: the prefill's rows not yet in `resident`
    std::string extend_new;  // the extend program's name of `new`, when there is one
    // On the device: the decode kernels' surfaces of `past`, then the extend kernels' (the same
    // cache, kept in step).
    std::vector<PackageRunner::SurfaceRef> resident;
  };
  void fill_resident();  // the prefill's rows into the device-resident surfaces

  PackageRunner& runner_;
  bool decodes_;
  std::int64_t prefill_seq_ = 0, capacity_ = 0, position_ = 0, chunk_ = 0;
  std::vector<CacheEntry> cache_;
  struct StateEntry {
    std::string prefill_new, decode_new, past;
    Tensor value;  // the state after position_ (zeros before the first token)
  };
  std::vector<StateEntry> state_;
  void zero_state();
  bool on_device_ = false;  // the cache stays in the decode kernels' surfaces
  bool pending_ = false;    // on_device_: the prefill's rows are still in `slots`
};

}  // namespace orion::runtime
