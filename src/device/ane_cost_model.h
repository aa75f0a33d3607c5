#pragma once
// A cost model of the Neural Engine, per chip: how long an evaluation would take on the device,
// from the work it does and the bytes it moves. Every figure it gives is a projection, never a
// measurement (no machine here has the device); docs/ane/COST_MODEL.md lists each chip's
// numbers with their sources and how far the model is from the public figures.
//
//   time = max(flops / fp16 peak, bytes / the ANE's memory bandwidth) + dispatch
//
// The bandwidth is what the ANE was measured to draw (ANEMLL-Bench), not the chip's unified
// memory's; the dispatch cost is a fit over many kernels (ANE-LM).
#include <string>
#include <string_view>
#include <vector>

#include "compile/ane/ane_package.h"
#include "ir/graph.h"

namespace orion::device {

struct AneChip {
  std::string name;      // "m4", "m4-max", ...
  double fp16_tflops;    // sustained fp16 peak of the ANE
  double ane_gbps;       // memory bandwidth the ANE reaches
  double dispatch_ms;    // fixed cost of one evaluation
  std::string basis;     // where the figures come from, in a few words
};

// The chips the model knows, in order: m1 ... m4 and their Max parts (and the M4 Pro).
const std::vector<AneChip>& ane_chips();
// The chip `name` names; throws orion::Error listing the names there are.
const AneChip& ane_chip(std::string_view name);

// What one evaluation of a kernel does.
struct KernelWork {
  double flops = 0;  // multiply-adds count two
  double bytes = 0;  // read and written: weights, inputs (a KV cache included), outputs
};

// A kernel step of a package: 2 flops per weight per token, plus attention over each fixed-length
// activation input (a KV cache: 2 flops per cached value per token); the bytes of its surfaces
// and, baked, of its weights in their `form` (int8 a byte a weight, the 4-bit forms half a byte:
// dequantized in the kernel, so the arithmetic stays fp16; their scales and tables are left out).
KernelWork kernel_work(const compile::PackageStep& step, compile::WeightForm form = compile::WeightForm::fp16);
// A kernel of a training graph: the flops of its matmuls and convs (every product: forward,
// the inputs' gradients, the weights' gradients), the bytes of its surfaces.
KernelWork kernel_work(const compile::KernelIo& io, const ir::Graph& kernel_graph);
// 2 * multiply-adds of `g`'s matmul and conv nodes.
double product_flops(const ir::Graph& g);

// The projected milliseconds of one evaluation on `chip`.
double projected_ms(const AneChip& chip, const KernelWork& work);

struct ProgramProjection {
  std::string program;
  double ms = 0;  // one run of the program: every kernel step once (host steps not counted)
  int evaluations = 0;
  double flops = 0, bytes = 0;
};

// Each program of `manifest` run once on `chip`.
std::vector<ProgramProjection> project_package(const compile::PackageManifest& manifest, const AneChip& chip);

}  // namespace orion::device
