#pragma once
// legalize_io: the kernel's inputs and outputs as surfaces the ANE evaluates (ANE010-ANE012):
// the sequence axis S of a graph in [1, C, 1, S] form (after lower_layout) is padded to
// S_pad, the smallest multiple of 32 (prefill buckets) that is >= S, >= 32 (64 bytes of fp16
// on the last axis) and makes every I/O surface >= 49,152 bytes; and the pass returns the
// KernelIo the runtime binds by.
//
// Padding must not change the real tokens' results. The padded positions come after the
// real ones, and the host packs zeros there (device/ane_packing.h). Per-token ops (conv, the
// channel norms, elementwise) keep columns apart. The only ops that mix positions are
// attention's: the additive causal mask [1, 1, S, S] (the const an add reads at a broadcast
// that no longer fits) is extended to [1, 1, S_pad, S_pad]: a real query (row < S) gets the
// mask value (-inf, or -65504 in fp16) on every padded key, so softmax gives those keys
// exactly 0 and probs @ v adds exact zeros; a padded query row follows the causal pattern
// (0 on and below the diagonal), so no row is all masked and nothing becomes NaN. The pass
// checks this instead of assuming it: a reduction over a padded axis, a softmax over one that
// was not masked, a matmul contracting over one whose left operand is not such a softmax, or
// a const that would need any other padding throws, naming the node. A softmax written out (a
// chunk's attention over its rows beside the cache, model/attention.h) passes the same proof
// step by step: the max of masked scores, masked scores less a per-row value, their exp (0 on
// the padded keys), its sum and its product with v.
//
// Fixed-length inputs (LegalizeIoOptions::seq): an input whose last axis is not the window's
// tokens but a fixed number of positions, a decode step's KV cache of `capacity` slots, read by
// attention with the host's additive mask. Its S is never padded (the mask, not padding, hides
// the empty slots): it must be a multiple of 32 already (ANE011); a cache too narrow for the
// minimum surface (ANE012) is widened in channels as pad_channels does (a slice on entry).
//
// Input surfaces must all have one allocation size and outputs one (ANE010): every surface of a
// direction is allocated at the largest one's size, and a tensor of fewer channels sits packed
// at the start of its surface (the device reads packed C*S values from the start, ANE028).
// Sizes are those of the fp16 surfaces (to_fp16 comes after).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compile/kernel_io.h"
#include "compile/passes/lower_layout.h"
#include "ir/transforms/pass.h"

namespace orion::compile {

struct LegalizeIoOptions {
  std::int64_t seq_multiple = 32;        // buckets of 32, 64, ...: also S >= 32 (ANE011)
  std::int64_t min_surface_bytes = 49'152;  // ANE012
  // The window's tokens. 0: every input and output has the first input's S. Otherwise an input
  // whose S differs is fixed-length (see above); outputs always carry the tokens.
  std::int64_t seq = 0;
  // Reach the surface size by padding the channels of the narrow inputs and outputs instead of
  // the sequence (the rule's other fix): S_pad is then only the bucket. An input of C channels
  // is declared with C' and sliced back to C on entry; an output is widened by a 1x1 conv with
  // a constant identity embedding (zeros in the added channels: a conv, because concat is not
  // allowed, ANE004). For kernels whose I/O is narrow per token (a training graph's per-row
  // statistics, H scores per head), where padding the sequence instead would multiply it by
  // hundreds; the runtime packs and unpacks the C real channels at the start of each surface.
  bool pad_channels = false;
  // Runtime weights (lower_layout.h), by input name: fixed-length inputs whatever their S, each
  // recorded with its param in KernelIoTensor::weight. Must outlive the pass.
  const WeightInputs* weights = nullptr;
};

// The S_pad legalize_io picks for channel counts `channels` (all I/O) and `seq` tokens.
std::int64_t padded_sequence(std::int64_t seq, std::int64_t min_channels, const LegalizeIoOptions& options = {});

KernelIo legalize_io(ir::Graph& graph, const LegalizeIoOptions& options = {});
// The pass stores what it found in `io` (which must outlive the pass).
std::unique_ptr<ir::Pass> legalize_io_pass(KernelIo& io, LegalizeIoOptions options = {});

}  // namespace orion::compile
