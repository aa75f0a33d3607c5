#include "device/ane_cost_model.h"

#include <algorithm>

#include "core/error.h"

namespace orion::device {

namespace {

// Bandwidths: ANEMLL-Bench's llama_lm_head per chip. fp16 peaks: ANE-LM measured 18.6 TFLOPS on
// an M4; maderix measured 10 to 12.6 across its chips without a per-chip table, so M1 takes the
// low end and M2/M3 the high end. Dispatch: ANE-LM's fit, about 119 us an evaluation.
constexpr double kDispatchMs = 0.119;
const char* const kM1 = "fp16: maderix's low end; bandwidth: ANEMLL-Bench";
const char* const kM2M3 = "fp16: maderix's high end (no per-chip figure); bandwidth: ANEMLL-Bench";
const char* const kM4 = "fp16: ANE-LM on an M4; bandwidth: ANEMLL-Bench";

}  // namespace

const std::vector<AneChip>& ane_chips() {
  static const std::vector<AneChip> chips = {
      {"m1", 10.0, 60.87, kDispatchMs, kM1},        {"m1-max", 10.0, 54.62, kDispatchMs, kM1},
      {"m2", 12.6, 60.45, kDispatchMs, kM2M3},      {"m2-max", 12.6, 62.01, kDispatchMs, kM2M3},
      {"m3", 12.6, 63.10, kDispatchMs, kM2M3},      {"m3-max", 12.6, 120.22, kDispatchMs, kM2M3},
      {"m4", 18.6, 64.18, kDispatchMs, kM4},        {"m4-pro", 18.6, 126.36, kDispatchMs, kM4},
      {"m4-max", 18.6, 118.88, kDispatchMs, kM4},
  };
  return chips;
}

const AneChip& ane_chip(std::string_view name) {
  for (const AneChip& c : ane_chips())
    if (c.name == name) return c;
  std::string names;
  for (const AneChip& c : ane_chips()) names += (names.empty() ? "" : ", ") + c.name;
  throw Error("cost model: no chip \"" + std::string(name) + "\" (known: " + names + ")");
}

namespace {

// The I/O's share: attention over fixed-length inputs, the surfaces' bytes; `weight_values`
// gets the runtime weights' count.
KernelWork io_work(const compile::KernelIo& io, double& weight_values) {
  KernelWork w;
  const auto tokens = static_cast<double>(io.seq);
  for (const compile::KernelIoTensor& t : io.inputs) {
    const double values = static_cast<double>(t.logical[1]) * static_cast<double>(t.logical[3]);
    if (!t.weight.empty()) weight_values += values;
    else if (t.fixed) w.flops += 2 * values * tokens;  // q.k over the cache, or p.v
    w.bytes += static_cast<double>(t.bytes);
  }
  for (const compile::KernelIoTensor& t : io.outputs) w.bytes += static_cast<double>(t.bytes);
  return w;
}

}  // namespace

double product_flops(const ir::Graph& g) {
  double flops = 0;
  for (ir::ValueId id = 0; id < g.size(); ++id) {
    const ir::Node& n = g.node(id);
    if (n.op == ir::Op::matmul) {
      const Shape& x = g.node(n.inputs[0]).type.shape;
      const std::int64_t k = x.size() < 2 ? 1 : n.attr_bool("transpose_x") ? x[x.size() - 2] : x.back();
      flops += 2.0 * static_cast<double>(n.type.numel()) * static_cast<double>(k);
    } else if (n.op == ir::Op::conv) {
      const Shape& w = g.node(n.inputs[1]).type.shape;  // [Cout, Cin / groups, kh, kw]
      flops += 2.0 * static_cast<double>(n.type.numel()) * static_cast<double>(shape_numel(w) / w[0]);
    }
  }
  return flops;
}

KernelWork kernel_work(const compile::KernelIo& io, const ir::Graph& kernel_graph) {
  double weight_values = 0;
  KernelWork w = io_work(io, weight_values);
  w.flops = product_flops(kernel_graph);
  return w;
}

namespace {

// The bytes a weight form reads for each byte of the fp16 weights it stands for.
double bytes_per_fp16_byte(compile::WeightForm form) {
  switch (form) {
    case compile::WeightForm::fp16: return 1.0;
    case compile::WeightForm::int8: return 0.5;
    case compile::WeightForm::int4: case compile::WeightForm::uint4: case compile::WeightForm::lut4: return 0.25;
  }
  return 1.0;
}

}  // namespace

KernelWork kernel_work(const compile::PackageStep& step, compile::WeightForm form) {
  double weight_values = 0;
  KernelWork w = io_work(step.io, weight_values);
  const auto tokens = static_cast<double>(step.io.seq);
  if (step.weights == compile::KernelWeights::baked) {
    weight_values = static_cast<double>(step.weight_bytes) / 2;  // fp16 measure (PackageStep)
    w.bytes += static_cast<double>(step.weight_bytes) * bytes_per_fp16_byte(form);
  }
  w.flops += 2 * weight_values * tokens;
  return w;
}

double projected_ms(const AneChip& chip, const KernelWork& work) {
  const double compute_ms = work.flops / (chip.fp16_tflops * 1e12) * 1e3;
  const double memory_ms = work.bytes / (chip.ane_gbps * 1e9) * 1e3;
  return std::max(compute_ms, memory_ms) + chip.dispatch_ms;
}

std::vector<ProgramProjection> project_package(const compile::PackageManifest& manifest, const AneChip& chip) {
  std::vector<ProgramProjection> out;
  for (const compile::PackageProgram& p : manifest.programs) {
    ProgramProjection r{p.name};
    for (const compile::PackageStep& s : p.steps) {
      if (s.placement != compile::Placement::ane) continue;
      const KernelWork w = kernel_work(s, manifest.target.weights);
      r.ms += projected_ms(chip, w);
      r.flops += w.flops;
      r.bytes += w.bytes;
      ++r.evaluations;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace orion::device
