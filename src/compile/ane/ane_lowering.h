#pragma once
// lower_for_ane: a token-major IR graph with its weights, all the way to a kernel in ANE form
// that the MIL writer accepts and the validator passes. The order, and why:
//   bind_params       weights become consts (the ANE bakes them), so folding can shape them;
//                     or stay params, runtime weights, which lower_layout makes inputs
//   fold_constants    const subgraphs disappear before anything is lowered
//   legalize          gelu, layer_norm... written out, still token-major (reductions over the
//                     IR's last axis, which lower_layout maps to the channel axis 1)
//   lower_layout      [S, X] -> [1, X, 1, S], linear layers as 1x1 conv, the head split
//   legalize_io       the sequence padded to a bucket that makes every surface legal; KernelIo
//   cse, dce          merge the scalars the expansions repeat, drop the IR-shaped consts
//   clamp_boundaries  +-65504 where values cross host/device
//   quantize_weights  with int8 weights: baked conv weights as int8 + scales, dequantized in
//                     the kernel (half the bytes on the device)
//   to_fp16           every f32 value and weight to fp16 (the mask's -inf saturates)
//   fold_constants    anything the rewrites left foldable
//   quantize_weights  with 4-bit weights (int4, uint4, lut4): the same, last, so that nothing
//                     folds the LUT's layout away (a quarter of fp16's bytes)
//   validate          every graph-stage rule of the catalogue; errors throw, warnings are returned
// The pipeline verifies the IR after every pass.
#include <string>
#include <vector>

#include "compile/ane/ane_validator.h"
#include "compile/mil/mil_syntax.h"
#include "compile/passes/int4_weights.h"
#include "ir/transforms/bind_params.h"
#include "compile/passes/legalize.h"
#include "compile/passes/legalize_io.h"
#include "ir/transforms/pipeline.h"

namespace orion::compile {

struct AneLoweringOptions {
  AneTarget target;
  MilDialect dialect = MilDialect::ios18;  // the program's; its ops decide a LUT's form
  LegalizeOptions legalize;
  LegalizeIoOptions io;
  std::string kernel_name = "kernel";  // in the validator's messages
  // The weights will be replaced by others of the same shapes (training): the program's text
  // must not depend on their values (CseOptions::merge_tensor_constants), so that a new set is
  // a rewrite of the weight file, not a new program.
  bool weights_vary = false;
  // Params with no value in `weights` are runtime weights: kernel inputs the host writes
  // (compile/passes/lower_layout.h), recorded in KernelIoTensor::weight. Training passes no
  // weights at all: each kernel compiles once whatever the weights' values.
  bool runtime_weights = false;
  ir::AfterPassFn after_pass;              // e.g. dump_ir_after
  // The int4/uint4 forms' weights the model arrived in (compile/passes/quantize_weights.h).
  const Int4Weights* given_int4 = nullptr;
};

struct AneLowered {
  ir::Graph graph;                       // in ANE form
  KernelIo io;                           // what the runtime binds
  std::vector<ir::Diagnostic> diagnostics;   // the passes' notes
  std::vector<AneViolation> warnings;    // the validator's warnings (errors throw)
};

// `graph` is left unchanged; every param must have a value in `weights` unless runtime_weights.
AneLowered lower_for_ane(const ir::Graph& graph, const TensorMap& weights, const AneLoweringOptions& options = {});

}  // namespace orion::compile
