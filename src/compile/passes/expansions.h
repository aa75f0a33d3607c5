#pragma once
// Ops the ANE does not accept, written out with ops it does, the way working ANE programs
// write them (docs/ane/FORMATS.md, "How working programs write the common pieces"). legalize uses
// them on the IR's own layout; the layout pass will use them again on the ANE's [1, C, 1, S]
// form, which is why the norms take their axis as a parameter.
//
// Each function reads new values of `rw`, names its nodes "<base>.<role>" and returns the
// value standing for the op's result; the caller makes it take over the old node's name.
// Scalar arguments are rank-0 `const` nodes of x's dtype, one per use (cse merges equal ones;
// the MIL writer turns each into a named const, the form the ANE requires).
#include <string_view>

#include "ir/transforms/rewriter.h"

namespace orion::compile {

enum class GeluForm {
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): the form docs/ane/HARDWARE.md prescribes and
  // working programs use. 1 + tanh(u) cancels for negative x (tanh(u) near -1), so the result
  // there has the absolute, not the relative, accuracy of the tanh: in fp16 about 5e-4 * |x|.
  tanh,
  // x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)): the same function (0.5 (1 + tanh u) is
  // sigmoid(2u)) without the cancellation, as the CPU executor computes gelu. Uses only ops
  // the ANE accepts (silu's form), but no report shows it on the device yet.
  sigmoid,
};

// x^3 is written mul(mul(x, x), x), not pow(x, 3): the ANE's pow is only seen with a positive
// base (pow(v, -0.5) for the inverse square root), and x here is negative half the time.
ir::ValueId expand_gelu(ir::GraphRewriter& rw, ir::ValueId x, std::string_view base, GeluForm form);

// mul(x, sigmoid(x)).
ir::ValueId expand_silu(ir::GraphRewriter& rw, ir::ValueId x, std::string_view base);

// reduce_mean over `axis` (keep_dims) -> sub, then the centred rows' reciprocal root mean square
// computed on them divided by a per-row bound on their magnitude, so that no square overflows
// fp16 (expansions.cpp says why) -> mul -> mul gamma -> add beta. gamma and beta must broadcast
// against x with their channels on `axis` ([C] for the last axis; [1, C, 1, 1] for the ANE's
// channel axis 1).
ir::ValueId expand_layer_norm(ir::GraphRewriter& rw, ir::ValueId x, ir::ValueId gamma, ir::ValueId beta,
                              double epsilon, int axis, std::string_view base);

// x's reciprocal root mean square over `axis`, computed as layer_norm's on x divided by a
// per-row bound on its magnitude -> mul -> mul weight, weight shaped as gamma above.
ir::ValueId expand_rms_norm(ir::GraphRewriter& rw, ir::ValueId x, ir::ValueId weight, double epsilon,
                            int axis, std::string_view base);

// mul(x, -1).
ir::ValueId expand_neg(ir::GraphRewriter& rw, ir::ValueId x, std::string_view base);

// pow(x, -0.5), "the inverse square root everyone uses". MIL's own rsqrt adds an epsilon
// (1e-12 by default) that the IR's rsqrt does not have.
ir::ValueId expand_rsqrt(ir::GraphRewriter& rw, ir::ValueId x, std::string_view base);

}  // namespace orion::compile
