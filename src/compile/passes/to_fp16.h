#pragma once
// to_fp16: the ANE computes and stores in fp16, so every f32 value of the graph becomes f16:
// constants (the weights) are converted, and every f32 type (inputs, params, ops, the target
// of casts) is retyped. Other dtypes (i32 indices, bf16, bool) are left alone.
//
// Weights saturate: a value beyond fp16's largest finite value becomes +-65504, not inf (one
// inf becomes NaN everywhere within a step, docs/ane/HARDWARE.md, "Numerics"); that includes
// infinite constants (the -inf of an additive causal mask becomes -65504, the large negative
// working programs use: exp of it is still 0). NaN stays NaN. Values too small for fp16's
// subnormals become (signed) zero, as rounding gives. The counts are reported: the pass's
// notes name every constant that saturated or lost values to zero.
//
// The pass edits in place (no node is added or removed). A cast from f16 to f32 becomes an
// identity cast f16 -> f16, which it leaves for the MIL writer or a later pass to drop.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/transforms/pass.h"

namespace orion::compile {

struct Fp16Stats {
  std::int64_t constants = 0;  // constants converted
  std::int64_t values = 0;     // their elements
  std::int64_t saturated = 0;  // elements that would have become +-inf: now +-65504
  std::int64_t infinite = 0;   // of those, the ones that were infinite already
  std::int64_t flushed = 0;    // non-zero elements that became zero
  std::int64_t retyped = 0;    // nodes whose type changed from f32 to f16
  std::vector<std::string> notes;  // one per constant that saturated or flushed values
};

// The largest finite fp16 value.
inline constexpr double kFp16Max = 65504.0;

Fp16Stats to_fp16(ir::Graph& graph);
std::unique_ptr<ir::Pass> to_fp16_pass();

// One f32 tensor to f16 with the saturation above, counting into `stats`.
Tensor saturate_to_fp16(const Tensor& t, Fp16Stats& stats);

}  // namespace orion::compile

namespace orion::compile {

// The inverse, for comparing a program with its meaning in f32: every f16 value becomes f32
// (constants converted exactly, casts to f16 become casts to f32), so that the CPU executor
// computes the program without fp16 rounding. Returns the number of nodes retyped.
std::int64_t widen_to_f32(ir::Graph& graph);

}  // namespace orion::compile
