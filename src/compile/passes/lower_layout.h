#pragma once
// lower_layout: the IR's token-major graph in the ANE's channel-major layout. The ANE reads
// and writes [1, C, 1, S] fp16 surfaces (docs/ane/HARDWARE.md, ANE008) and runs a linear layer
// on baked weights faster as a 1x1 conv than as a matmul (docs/ane/FORMATS.md, "How working
// programs write the common pieces"), so:
//
//   value (IR)               lowered                      called
//   [S, X] token-major       [1, X, 1, S]                 tokens      (every graph input)
//   [S, H, D] heads split    [1, H, D, S]                 head_split  (reshape of tokens)
//   [H, R, K] per head       [1, H, R, K]                 heads       (transposed head_split)
//   constants                as they are, or converted    plain       (where a lowered op reads them)
//
// Rules, by the op reading a lowered value:
// - matmul(x tokens [S, C], W const [C, N]) -> conv(x, W' [N, C, 1, 1]) with W' = W^T made
//   here at compile time (a const, nothing left to fold); transpose_y reads W as [N, C].
// - matmul of two heads values stays a matmul on [1, H, ., .] with the same flags (attention:
//   q k^T with transpose_y, then probs v).
// - runtime weights: a param left unbound (ir::BindParamsOptions::require_all false) becomes a
//   kernel input "w_<param>" of [1, A, 1, B_pad] for its IR [A, B] (a vector [N] as [1, N];
//   B_pad = B rounded up to 32, sliced back on entry), the layout KernelIoTensor::weight
//   describes. A linear layer on it is a matmul, never a conv (a conv ignores a runtime weight,
//   ANE005): x [1, C, 1, S] and W reshaped to [1, 1, ., .], y^T = op(W)^T x^T by matmul's
//   transpose_x flag, reshaped back to [1, N, 1, S]. A vector read by an add or mul (a bias, a
//   norm's gain) is reshaped to [1, N, 1, 1]. Anything else computed on a runtime weight throws.
//   Each weight is an input of its own: the reported form that packs one weight after the
//   activations of one input ([1, IC, 1, SEQ + OC]) needs the weight's rows to be the
//   activations' channels, and a training kernel here fuses many weights of several row counts;
//   separate inputs at one allocation size, bound alphabetically, are the form mechramc/Orion's
//   tests ran (ANE035). Packing is not implemented yet.
// - add/sub/mul/div/pow: a const operand is converted to the other's layout once per layout
//   ("<name>.ane"): a bias or gain [N] becomes [1, N, 1, 1], the causal mask [S, S] read by
//   heads [1, 1, S, S], a rank-0 scalar stays. Two lowered operands must share a layout.
// - reductions (keep_dims only) and softmax: their axes remapped (tokens: IR axis 1, the
//   channels, is axis 1; IR axis 0, the sequence, is axis 3). legalize's norms reduce over IR
//   axis 1 of [S, C] and so reduce over the ANE's channel axis 1, as working programs do.
// - slice: begin/end remapped (q, k and v are channel slices of the fused projection).
// - the head split, the only reshapes and transposes emitted: reshape [1, C, 1, S] ->
//   [1, H, D, S]; transpose [0, 1, 3, 2] to [1, H, S, D] (the one permutation working
//   programs use); after attention the same transpose back and reshape to [1, C, 1, S].
//   IR reshape [S, C] -> [S, H, D] and transpose [1, 0, 2] are the patterns this maps.
// - unary ops, clamp and cast keep their operand's layout.
// Anything else reading a lowered value (concat, gather, where, other reshapes) throws naming
// the node: the pass never guesses. Inputs must be rank-2 [S, X] and outputs token-major; both
// keep their names (the ANE binds by name). The sequence length is not changed here:
// legalize_io pads it.
#include <map>
#include <memory>
#include <string>

#include "ir/transforms/pass.h"
#include "ir/builder.h"

namespace orion::compile {

struct LowerLayoutCounts {
  int convs = 0;    // matmuls on const weights made convs
  int weight_matmuls = 0;  // matmuls on runtime weights
  int lowered = 0;  // nodes rewritten in total
};

// What a runtime weight's kernel input carries: a param, or one chunk of it (kernel_io.h).
struct WeightInput {
  std::string param;
  int axis = -1;  // -1: the whole param
  std::int64_t begin = 0, end = 0;
};
// The runtime weights' kernel inputs by input name.
using WeightInputs = std::map<std::string, WeightInput, std::less<>>;

// `weights`, when given, receives the runtime weights' inputs.
LowerLayoutCounts lower_layout(ir::Graph& graph, WeightInputs* weights = nullptr);
// Whether a kernel may hold `op` at all: the ops legalize and this pass lower (for the
// partition, which sends the others to the host). Whether a particular node lowers also
// depends on its operands (the rules above).
bool kernel_op(ir::Op op);
// The attributes of a 1x1 conv with unit strides, no padding and one group: a linear layer on
// [1, C, 1, S].
ir::NamedAttrs pointwise_conv_attrs();
std::unique_ptr<ir::Pass> lower_layout_pass(WeightInputs* weights = nullptr);

}  // namespace orion::compile
