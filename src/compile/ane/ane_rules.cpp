#include "compile/ane/ane_rules.h"

#include <array>
#include <string>

#include "core/error.h"

namespace orion::compile {

namespace {

using F = AneFailure;
using S = AneStage;


// Order: graph-stage rules, then MIL-stage, then runtime. Ids are stable: a retired rule keeps
// its id and a new rule takes the next free one.
constexpr std::array kRules = {
    AneRule{"ANE001", "Every op of a kernel has a MIL form the ANE compiler accepts.", F::loud,
            S::graph,
            "legalize the op (compile/passes) or run it on the host (embedding lookup, sampling)",
            "docs/ane/FORMATS.md, Op signatures; docs/ane/HARDWARE.md, Program text and compilation"},
    AneRule{"ANE002", "`gelu` is not accepted: write the tanh approximation out.", F::loud, S::graph,
            "run the legalize pass: 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3)))",
            "docs/ane/HARDWARE.md, Program text and compilation (gelu)"},
    AneRule{"ANE003", "`silu` is not accepted: write mul(x, sigmoid(x)).", F::loud, S::graph,
            "run the legalize pass", "docs/ane/HARDWARE.md, Program text and compilation (gelu/silu)"},
    AneRule{"ANE004",
            "`concat` runs only with `axis` and `interleave` (false) as named consts; the form with an inline "
            "axis and no interleave was refused.",
            F::loud, S::mil,
            "the MIL writer declares both as named consts; Orion's compiler still keeps concat on the host unless "
            "opted in (--allow-concat), the side with no failure report",
            "docs/ane/HARDWARE.md, Program text and compilation; Reported since (concat ran in maderix/ANE and ANE-LM "
            "in the named-const form; mechramc/Orion's refused form was inline)"},
    AneRule{"ANE005", "A `conv` weight must be a compile-time const.", F::silent, S::graph,
            "use matmul for runtime weights: a conv ignores a runtime weight input",
            "docs/ane/HARDWARE.md, Program text and compilation (conv with runtime weight)"},
    AneRule{"ANE006", "Grouped or depthwise `conv` with runtime weights is rejected.", F::loud,
            S::graph, "make the weight a const, or use matmul",
            "docs/ane/HARDWARE.md, Program text and compilation (conv with runtime weight)"},
    AneRule{"ANE007", "Every kernel output is a value computed in the body.", F::loud, S::graph,
            "do not return an input or a const: compute the value on the host instead",
            "docs/ane/HARDWARE.md, Program text and compilation (return tuple, InvalidMILProgram)"},
    AneRule{"ANE008",
            "Kernel inputs and outputs are 4-D [1, C, H, W] tensors, channel-major ([1, C, 1, S] for a sequence).",
            F::silent, S::graph, "run the layout lowering pass (sequence on the last axis, H = 1)",
            "docs/ane/HARDWARE.md, Inputs, outputs and memory; Reported since (4-D [1, C, H, W] I/O ran in "
            "maderix/ANE's conv benchmarks)"},
    AneRule{"ANE009",
            "Kernel inputs and outputs are fp16 (fp32 only with a cast inside, never on M1/M2).",
            F::loud, S::graph, "run the fp16 conversion pass",
            "docs/ane/HARDWARE.md, Inputs, outputs and memory; docs/ane/FORMATS.md, How working programs write the common pieces (I/O dtype); "
            "Reported since (fp32 I/O refused on M1: Orion fork 18)"},
    AneRule{"ANE010",
            "All input surfaces of a kernel have one allocation size, and all output surfaces one.",
            F::loud, S::runtime,
            "allocate every surface of a direction at the largest one's size (legalize_io records it in "
            "the kernel's I/O; the package runner allocates it; ane-sim refuses unequal sizes)",
            "docs/ane/HARDWARE.md, Inputs, outputs and memory (eval status 0x1d)"},
    AneRule{"ANE011",
            "The last axis of an I/O tensor is wide enough: 32 fp16 values (64 bytes) in Orion's programs; a "
            "[1, 768, 1, 16] input ran in a full-size surface, one project says W >= 32, another a multiple of 16.",
            F::silent, S::graph,
            "the compiler pads the sequence axis to 32 (prefill buckets of 32, 64, ...), the side every report "
            "accepts; ane-sim warns below it and fails only below 16 columns, where no program was seen to run",
            "docs/ane/HARDWARE.md, Inputs, outputs and memory (one token fails; [1,4,1,4] fails); Reported since "
            "(mechramc/Orion tests/test_lora.m; ANE-LM; rustane)",
            AneEvidence::disputed},
    AneRule{"ANE012", "Every I/O surface is allocated at least 49,152 bytes (the tensor in it may be smaller).",
            F::silent, S::runtime,
            "legalize_io pads Orion's kernels until a direction's largest surface reaches 48 KiB and the runtime "
            "allocates every surface of the direction at that size; ane-sim checks the surfaces it is given",
            "docs/ane/HARDWARE.md, Inputs, outputs and memory ([768, 32] fp16 worked, smaller did not); Reported "
            "since (a [1, 768, 1, 16] input ran in a 49,152-byte surface)"},
    AneRule{"ANE013", "On M1/M2, a matmul's inner dimension is a multiple of 32.", F::silent,
            S::graph, "pad the inner dimension with zeros to a multiple of 32",
            "docs/ane/HARDWARE.md, Program text and compilation (reported on M1: zeros otherwise)"},
    AneRule{"ANE014", "On M1/M2, `cast` is unsupported: inputs and outputs are fp16.", F::loud,
            S::graph, "use fp16 I/O and convert on the host",
            "docs/ane/HARDWARE.md, Program text and compilation (reported on M1)"},
    AneRule{"ANE015",
            "The constant weights of one kernel fit the ANE's on-chip memory (about 32 MB).",
            F::slow, S::graph, "run the chunking pass (split the matmul or keep it on the host)",
            "docs/ane/HARDWARE.md, Inputs, outputs and memory (slower beyond it)"},
    AneRule{"ANE016", "Constants are finite fp16 values (saturated to +-65504).", F::silent,
            S::graph, "run the fp16 conversion pass, which saturates instead of overflowing",
            "docs/ane/HARDWARE.md, Numerics (one inf becomes NaN everywhere)"},
    AneRule{"ANE017", "A reduction over more than 4,096 values in fp16 loses precision.",
            F::drift, S::graph,
            "reduce on the host in fp32, or split the reduction into partial sums",
            "docs/ane/HARDWARE.md, Numerics (norm layers in fp16)"},
    AneRule{"ANE018",
            "Scalar and list arguments (transpose flags, axes, conv parameters...) are named consts.",
            F::loud, S::mil, "the MIL writer declares every such argument as a const",
            "docs/ane/HARDWARE.md, Program text and compilation (matmul transpose flags)"},
    AneRule{"ANE019", "`conv` has no `bias` argument on this path.", F::loud, S::mil,
            "emit a separate add", "docs/ane/HARDWARE.md, Program text and compilation (conv bias)"},
    AneRule{"ANE020", "`tile` is never emitted.", F::poison, S::mil,
            "repeat with concat (opt-in) or restructure the kernel",
            "docs/ane/HARDWARE.md, Program text and compilation (tile poisons the device until the process exits)"},
    AneRule{"ANE021", "`scaled_dot_product_attention` is never emitted.", F::silent, S::mil,
            "write attention out: matmul, scale, add mask, softmax, matmul",
            "docs/ane/HARDWARE.md, Program text and compilation (the causal mask is ignored)"},
    AneRule{"ANE022",
            "A BLOBFILE offset names the blob's 64-byte metadata record, never its data.",
            F::silent, S::mil, "the blob writer returns record offsets; the first blob is at 64",
            "docs/ane/HARDWARE.md, Weights; docs/ane/FORMATS.md, weights/weight.bin"},
    AneRule{"ANE023",
            "A weight file has the blob sentinel, format version 2, the data type its reader asks for, and the "
            "bytes each tensor's type and shape need within the file; the header's count, a record's offset field "
            "and a record's size, when it is larger than those bytes, are not checked.",
            F::loud, S::mil, "write weight files with the blob writer only",
            "docs/ane/HARDWARE.md, Weights; docs/ane/FORMATS.md, weights/weight.bin; Reported since (files with "
            "count 1, type code 1 on int8, no data offset, one size twice the data in every record ran; "
            "coremltools' MILBlob reader)"},
    AneRule{"ANE024",
            "Programs for M1/M2 use program(1.0), main<ios16> and the verbose scalar spelling.",
            F::loud, S::mil, "compile with --dialect ios16 for M1/M2",
            "docs/ane/HARDWARE.md, Program text and compilation (reported on M1); docs/ane/FORMATS.md, Two dialects"},
    AneRule{"ANE025", "MIL text is handed over as UTF-8 bytes (NSData), not a string object.",
            F::crash, S::runtime, "the device bridge passes the bytes as NSData",
            "docs/ane/HARDWARE.md, Program text and compilation"},
    AneRule{"ANE026", "The weights dictionary is empty, never nil, for a program without weights.",
            F::crash, S::runtime, "the device bridge always passes a dictionary",
            "docs/ane/HARDWARE.md, Program text and compilation"},
    AneRule{"ANE027",
            "Inputs bind in alphabetical order of their names, outputs likewise, whatever the "
            "signature's order.",
            F::silent, S::runtime,
            "the compiler records the binding order in the manifest; the runtime binds by it",
            "docs/ane/HARDWARE.md, Inputs, outputs and memory (all six orders of three inputs tried)"},
    AneRule{"ANE028",
            "The device reads a surface as packed C*S values of the I/O's dtype from its start (2 bytes each in "
            "fp16, 4 in fp32): no row stride.",
            F::silent, S::runtime,
            "pack tensors densely into the surface (device/packing), sized by the I/O's dtype: an fp32 [1, 256, 1, "
            "64] takes 65,536 bytes",
            "docs/ane/HARDWARE.md, Inputs, outputs and memory"},
    AneRule{"ANE029",
            "Weights are baked in at compile time: rewriting the weight file changes nothing until "
            "the program is reloaded, and reload itself is not reliable everywhere.",
            F::silent, S::runtime, "probe reload per machine; recompile otherwise",
            "docs/ane/HARDWARE.md, Weights, Reported since (delta reload: works for mechramc/Orion, not in one M5 report)"},
    AneRule{"ANE030", "About 119 compilations per process; beyond, compiles fail silently.",
            F::silent, S::runtime,
            "count compiles and loads; restart the process from a checkpoint before the budget ends",
            "docs/ane/HARDWARE.md, The process (119 to 132 reported on M4)"},
    AneRule{"ANE031", "Every loaded program is unloaded.", F::leak, S::runtime,
            "the runtime unloads on destruction (RAII)", "docs/ane/HARDWARE.md, Program text and compilation"},
    AneRule{"ANE032",
            "Values cross between host and device within [-65504, 65504]; training scales its loss.",
            F::silent, S::runtime,
            "clamp at every host/device crossing and at weight writes; dynamic loss scaling",
            "docs/ane/HARDWARE.md, Numerics (NaN after one step)"},
    AneRule{"ANE033", "Compile errors come without a diagnosis.", F::loud, S::runtime,
            "validate before compiling; the runtime names the kernel that failed",
            "docs/ane/HARDWARE.md, Program text and compilation"},
    AneRule{"ANE034",
            "Every intermediate value is fp16: a norm's squares overflow from |x| > 256, and its mean of squares soon after.",
            F::silent, S::graph,
            "the layer_norm and rms_norm expansions square their rows divided by a per-row bound on |x| (legalize)",
            "found here: a trained 110M Llama's residual stream passed 256, and its logits on ane-sim were NaN"},
    AneRule{"ANE035",
            "A program's several inputs of unequal sizes are reported to need ascending sizes in binding order "
            "(outputs descending), else its outputs are zero.",
            F::silent, S::runtime,
            "one allocation size per direction (ANE010) makes every order legal: kernels with runtime weights "
            "have an input per weight, all allocated at the largest one's size",
            "docs/ane/HARDWARE.md, Reported since (programs with several inputs: maderix/ANE issue 47; "
            "mechramc/Orion constraints 12-13)"},
    AneRule{"ANE036",
            "A weight that changes between evaluations reaches the program as an input written by the host, read "
            "by `matmul`; such a matmul is reported about 3x slower than a 1x1 `conv` on a baked weight.",
            F::slow, S::runtime,
            "training: weights as inputs (each kernel compiled once, the weights written into their surfaces "
            "after each step, fp16 clamped, ANE032); weights that do not change stay baked consts for conv",
            "docs/ane/HARDWARE.md, Reported since (weights as inputs: maderix/ANE training_dynamic, PR 22)"},
    AneRule{"ANE037",
            "A program holds at most 16 BLOBFILE weight tensors (a bias is one); an elementwise op on an inline "
            "scalar const (add, mul, pow...) takes one slot more, once per program.",
            F::loud, S::mil,
            "`orion mil check` and `orion inspect` count each program's slots against AneTarget::max_weight_tensors; "
            "not enforced yet: Orion's partitioner does not foresee the constants lowering adds (a tiny GPT-2's "
            "training kernel holds 24), so kernels can exceed it",
            "docs/ane/HARDWARE.md, Reported since (17 BLOBFILE consts fail with InvalidMILProgram, 16 compile; a "
            "scalar-operand op makes it 15: Orion fork constraints 15-16, mechramc/Orion issue 3)"},
    AneRule{"ANE038", "`rsqrt` is not an op the ANE compiler accepts, in any program.", F::loud, S::graph,
            "the legalize pass writes pow(x, -0.5)",
            "docs/ane/HARDWARE.md, Reported since (rsqrt fails with 0 or 15 weights: Orion fork 17; sqrt/rsqrt "
            "after a reduction failed in rustane)"},
    AneRule{"ANE039",
            "On M1/M2, a weight file holds one tensor: files holding several were refused.", F::loud, S::mil,
            "compile for --m1-m2 writes one file per weight tensor (weights/NAME.bin)",
            "docs/ane/HARDWARE.md, Reported since (M1 refuses multi-tensor blob files)"},
    AneRule{"ANE040",
            "`softmax` over an axis whose length is not a power of 2 failed in one project; not reproduced.",
            F::loud, S::graph,
            "keep softmax axes at powers of 2 (prefill windows of 32, 64, 128...); ane-sim warns",
            "docs/ane/HARDWARE.md, Reported since (Espresso)", AneEvidence::single},
    AneRule{"ANE041",
            "`reduce_mean` was reported missing by one project; another's LayerNorm ran it on an M4 Max.",
            F::loud, S::graph,
            "none: Orion emits reduce_mean, the side seen to run; reduce_sum times 1/n is the rewrite if a "
            "device refuses it",
            "docs/ane/HARDWARE.md, Reported since (Espresso against mechramc/Orion)", AneEvidence::disputed},
    AneRule{"ANE042",
            "A dimension of 32,768 or more was said to be refused (a 32K-channel conv), yet 32,000- and "
            "32,768-wide convs ran in two projects and one gives 65,536 as the largest dimension.",
            F::loud, S::graph,
            "the chunking pass keeps every dimension under 32,768 on the ANE, the side no report disputes",
            "docs/ane/HARDWARE.md, Reported since (mechramc/Orion paper against maderix/ANE train_large_ane and "
            "ANE-LM)",
            AneEvidence::disputed},
    AneRule{"ANE043",
            "4-bit weights as `constexpr_blockwise_shift_scale` over int4 or uint4 data were not seen on the ANE: "
            "Apple's guide runs per-block 4-bit weights on the GPU and recommends per-channel scales on the Neural "
            "Engine, and Anemll lists block quantization as missing there.",
            F::loud, S::graph,
            "palettize instead (--weights lut4, the 4-bit form seen on the ANE); int4 and uint4 are compiled as "
            "asked, and ane-sim runs them",
            "docs/ane/HARDWARE.md, Reported since (4-bit weights: coremltools' optimization guide; Anemll README)",
            AneEvidence::single},
    AneRule{"ANE044",
            "A palettized weight's LUTs each cover whole rows of at least 8 output channels: Apple's guide reports "
            "runtime falling as the LUTs of a weight grow in number and recommends groups of 8 or 16 channels, the "
            "grouping Anemll's LUT4 models use.",
            F::slow, S::graph, "compile with --weights lut4 --weight-block 8 (the default) or 16",
            "docs/ane/HARDWARE.md, Reported since (4-bit weights: coremltools' palettization performance page; "
            "Anemll's converters)",
            AneEvidence::single},
    AneRule{"ANE045",
            "An ios16 program uses the iOS16 forms of the compile-time weight ops: `constexpr_lut_to_dense` with one "
            "LUT, indices packed into uint8 and the output's shape; no `constexpr_blockwise_shift_scale` and no "
            "sub-byte types (int4, uint1 to uint6), which are iOS18's.",
            F::loud, S::mil,
            "the MIL writer writes the iOS16 LUT form for --dialect ios16 and refuses grouped LUTs and int4/uint4 "
            "data there; compile for ios18, or with --weights lut4 (one table per weight on ios16)",
            "docs/ane/FORMATS.md, Op signatures (coremltools' iOS16 and iOS18 op definitions); docs/ane/HARDWARE.md, "
            "Program text and compilation (M1/M2 take the ios16 dialect only)"},
};

constexpr bool ids_in_order() {
  for (std::size_t i = 0; i < kRules.size(); ++i) {
    const std::string_view id = kRules[i].id;
    if (id.size() != 6 || id.substr(0, 3) != "ANE") return false;
    const std::size_t n = static_cast<std::size_t>(id[3] - '0') * 100 +
                          static_cast<std::size_t>(id[4] - '0') * 10 +
                          static_cast<std::size_t>(id[5] - '0');
    if (n != i + 1) return false;
  }
  return true;
}
static_assert(ids_in_order(), "rule ids are ANE001, ANE002, ... in table order");

}  // namespace

std::span<const AneRule> ane_rules() { return kRules; }

const AneRule& ane_rule(std::string_view id) {
  for (const AneRule& r : kRules)
    if (r.id == id) return r;
  throw Error("no ANE rule " + std::string(id));
}

std::string_view ane_failure_name(AneFailure f) {
  switch (f) {
    case F::crash: return "crash";
    case F::loud: return "loud";
    case F::silent: return "silent";
    case F::poison: return "poison";
    case F::leak: return "leak";
    case F::slow: return "slow";
    case F::drift: return "precision";
  }
  return "?";
}

std::string_view ane_evidence_name(AneEvidence e) {
  switch (e) {
    case AneEvidence::seen: return "seen";
    case AneEvidence::single: return "one report";
    case AneEvidence::disputed: return "disputed";
  }
  return "?";
}

std::string_view ane_stage_name(AneStage s) {
  switch (s) {
    case S::graph: return "graph";
    case S::mil: return "MIL";
    case S::runtime: return "runtime";
  }
  return "?";
}

std::string ane_rules_markdown() {
  std::string md =
      "# ANE rules\n\n"
      "Generated by `orion rules --markdown` from the catalogue in src/compile/ane/ane_rules.cpp (a\n"
      "test keeps this page equal to it). Each rule is what the Apple Neural Engine is known to\n"
      "do, from the public reports docs/ane/HARDWARE.md gathers; a source names a section of it,\n"
      "or of docs/ane/FORMATS.md.\n\n"
      "- **on violation**: what the hardware does. *silent* means no error: wrong numbers,\n"
      "  zeros or stale results; *poison*: every later evaluation in the process fails. Rules whose violation is *slow* or *precision* are warnings;\n"
      "  every other graph or MIL rule stops the compiler, unless the record does not settle it.\n"
      "- **evidence**: *seen* on hardware and not contradicted; *one report*, not reproduced; or\n"
      "  *disputed*, where reports disagree (the rule names both sides). Rules of the last two kinds\n"
      "  are warnings, and the fix says which side Orion's compiler keeps to: the one seen to run.\n"
      "- **checked**: *graph* rules are checked by the validator on every kernel before MIL is\n"
      "  written, *MIL* rules on the written text and weights, *runtime* rules by the runtime\n"
      "  and the ane-sim device.\n\n"
      "| id | rule | on violation | checked | evidence | fix | source |\n"
      "| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const AneRule& r : kRules) {
    md += "| " + std::string(r.id) + " | " + std::string(r.summary) + " | " +
          std::string(ane_failure_name(r.failure)) + " | " + std::string(ane_stage_name(r.stage)) + " | " +
          std::string(ane_evidence_name(r.evidence)) + " | " + std::string(r.fix) + " | " + std::string(r.source) + " |\n";
  }
  md +=
      "\n## Reports considered that are not rules\n\n"
      "Each report of docs/ane/HARDWARE.md, \"Reported since\", is a rule above or one of these:\n\n"
      "| report | why it is not a rule |\n"
      "| --- | --- |\n"
      "| Inline literals are accepted in constexpr ops' attribute blocks | a form the MIL reader accepts "
      "(compile/mil/mil_to_ir.cpp), not a constraint; ANE018 is about op inputs |\n"
      "| int8 weights through constexpr_blockwise_shift_scale and constexpr_affine_dequantize ran; W8A8 measured "
      "35.1 TOPS on an M4 | a capability: `orion compile --weights int8`, and ane-sim reads both forms and "
      "quantize/dequantize |\n"
      "| 4-bit palettized weights (constexpr_lut_to_dense, k-means, a LUT per 8 output channels, iOS18) run in "
      "Anemll's ANE models; Apple's guide: palettization works best on the Neural Engine | a capability: "
      "`orion compile --weights lut4` writes that form, ane-sim reads both of the op's forms; ANE044 keeps the "
      "group, ANE045 the iOS16 form |\n"
      "| maderix/ANE's PR 16 probes int4 and LUT weights through the private framework, without published "
      "results | no result either way: nothing to check |\n"
      "| Weights as inputs (\"dynamic\" training), one packed input or separate inputs | ANE035 and ANE036 "
      "hold what it constrains; the rest is how Orion trains (docs/ane/DEVICE.md) |\n"
      "| Plain reload kept the old weights on an M5; the donor-plist variant worked | ANE029 |\n"
      "| The ~119-compile limit is a leak of the in-memory model wrapper; _ANEClient is said to avoid it | "
      "ANE030 keeps the limit; the cause does not change what Orion must do until the bridge uses _ANEClient |\n"
      "| Dispatch costs about 119 us plus bytes / 78 GB/s per evaluation; doEvaluateDirect 106 us; chaining "
      "requests are a dead end on macOS 15 | a cost model, used for the projection in a training run's "
      "summary.json, not a rule |\n"
      "| A program compiled by an earlier process loads without a compile when its work folder is kept | "
      "a capability: ane-sim's program cache models it (device/ane_sim.h) |\n"
      "| macOS 26 broke several projects' private-API paths | no constraint to check; the bridge names the "
      "call that failed (docs/ane/DEVICE.md) |\n";
  return md;
}

}  // namespace orion::compile
