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
// op of the program and nothing else runs): every op must compute each column from the same
// column of its inputs alone, with arithmetic that does not depend on how many columns there
// are. The ops allowed, and why each qualifies on the CPU executor that runs ane-sim:
//
//  * elementwise ops (add sub mul div pow, the unary functions, clamp, where, cast): each
//    output element is a scalar function of the input elements at its own position (the
//    kernels in exec/cpu/kernels/elementwise.cpp and cast.cpp; no contraction into FMAs in the
//    baseline build, so a vectorised element and a scalar one round alike);
//  * reductions over axes other than 3 (a layer norm's mean over the channels): each output
//    sums (in double) or takes the maximum of its own column's elements, in the order of the
//    reduced index, in both code paths of exec/cpu/kernels/reduce.cpp;
//  * convs one column wide (kw = 1) with unit stride along the columns and no padding left or
//    right, on a constant weight: ane-sim runs such a program's executors with
//    columnwise_pointwise_convs (full and narrowed alike), so a 1x1 conv is a gemv per column
//    (exec/cpu/kernels/conv.cpp, gemv_f32_columns), whose result for a column never depends on
//    the others nor on their number; any other such conv takes the direct loop, which adds each
//    output's products in a fixed order of (input channel, kernel row);
//  * slices and concats that keep axis 3 whole.
//
// Every other op (softmax, the norms over the last axis, matmul, reshape, transpose, gather,
// broadcast_to, ...) disqualifies the program, as does any value not shaped [.., .., .., S]
// (a reduction over the columns) or a constant that varies along the columns. Such a program
// always evaluates all its columns.
#include <cstdint>

#include "ir/graph.h"

namespace orion::device {

// S when every op of g computes each column of axis 3 from that column alone (see above) and
// every input and output is rank 4 with S columns, else 0.
std::int64_t column_independent_width(const ir::Graph& g);

// g (for which column_independent_width(g) == width) on the first `live` columns: every
// S-wide value narrowed to `live`. Throws orion::Error for live outside [1, width].
ir::Graph narrow_columns(const ir::Graph& g, std::int64_t width, std::int64_t live);

}  // namespace orion::device
