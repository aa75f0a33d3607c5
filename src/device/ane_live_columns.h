#pragma once
// Live-column evaluation for ane-sim. A kernel works on [1, C, 1, S] surfaces whose first
// columns (axis 3) are tokens and whose other columns are padding up to the ANE's smallest
// legal surface (ANE011/ANE012): a decode step is 1 live column of 32. The hardware computes
// every column; the emulator need not, when it can prove that no live output depends on a
// padding column and that the live outputs come out the same bits either way. Then it runs a
// copy of the program narrowed to the live columns, and the padding columns of the outputs
// are zero (the runtime never reads them: device/ane_packing.h's unpack drops them).
//
// The proof is a static check of the program's graph, made when it is compiled (it sees every
// op of the program and nothing else runs): every op must compute each token from that token's
// values alone, with arithmetic that does not depend on how many tokens there are. The width is
// the outputs' last axis; an input of that width carries the tokens on axis 3, any other input
// (a fixed-length KV cache, [1, C, 1, capacity]) is shared: every token reads it whole, and it
// is never narrowed (nor are constants, nor values computed from shared ones alone). The token
// axis of a value is 3, or 2 after attention's head transpose ([1, H, D, S] -> [1, H, S, D]).
// The ops allowed, and why each qualifies on the CPU executor that runs ane-sim:
//
//  * elementwise ops (add sub mul div pow, the unary functions, clamp, where, cast): each
//    output element is a scalar function of the input elements at its own position (the
//    kernels in exec/cpu/kernels/elementwise.cpp and cast.cpp; no contraction into FMAs in the
//    baseline build, so a vectorised element and a scalar one round alike); a shared operand
//    must broadcast along the token axis (size 1 there: a scalar, a bias, not a mask over them);
//  * reductions and softmax over axes other than the token axis (a layer norm's mean over the
//    channels, a sum over a cache's positions): each output sums (in double) or takes the
//    maximum of its own token's elements, in the order of the reduced index, in both code paths
//    of exec/cpu/kernels/reduce.cpp;
//  * convs one column wide (kw = 1) with unit stride along the columns and no padding left or
//    right, on a constant weight, tokens on axis 3: ane-sim runs such a program's executors with
//    CpuOptions::column_independent (full and narrowed alike), so a 1x1 conv is a gemv per column
//    (exec/cpu/kernels/conv.cpp, gemv_f32_columns), whose result for a column never depends on
//    the others nor on their number; any other such conv takes the direct loop, which adds each
//    output's products in a fixed order of (input channel, kernel row);
//  * matmuls of a token operand (tokens on x's rows or y's columns) and a shared one (a KV
//    cache's keys and values): with the same option every product goes row by row (gemm_rows in
//    exec/cpu/kernels/matmul.cpp), each element a sum in a fixed order of the inner index;
//  * slices and concats that keep the token axis whole; reshapes that keep the last axis
//    (the head split [1, C, 1, S] -> [1, H, D, S] keeps every element in its column); the
//    transpose [0, 1, 3, 2].
//
// Every other op (gather, broadcast_to, other reshapes and transposes, a matmul of two token
// operands or contracting the tokens: prefill's attention...) disqualifies the program, as
// does a value whose token axis is not the full width or a shared operand varying along the
// tokens. Such a program always evaluates all its columns.
#include <cstdint>

#include "ir/graph.h"

namespace orion::device {

// S when every op of g computes each token from that token's values alone (see above), every
// output is rank 4 with S tokens as columns and every value rank 4, else 0.
std::int64_t column_independent_width(const ir::Graph& g);

// g (for which column_independent_width(g) == width) on the first `live` tokens: every value's
// token axis narrowed to `live` (shared values keep their shapes). Throws orion::Error for live
// outside [1, width].
ir::Graph narrow_columns(const ir::Graph& g, std::int64_t width, std::int64_t live);

}  // namespace orion::device
