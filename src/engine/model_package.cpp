#include "engine/model_package.h"

#include <cstdio>

#include "core/content_hash.h"
#include "core/error.h"
#include "model/lora/lora_graph.h"
#include "model/decoder_ane_package.h"
#include "model/llama/llama_model.h"
#include "model/mlx_ane_weights.h"
#include "engine/residual_probe.h"
#include "runtime/executable_identity.h"

namespace orion::engine {

compile::PackageReport compile_model_package(const model::CausalLm& m, const std::string& source,
                                             const AnePackageOptions& o, const std::string& out, bool replace,
                                             bool progress) {
  if (o.m1_m2 && o.dialect != "ios16") throw Error("compile: M1/M2 targets need --dialect ios16 (ANE024)");
  compile::PackageOptions po;
  po.target.m1_m2 = o.m1_m2;
  po.target.allow_concat = o.allow_concat;
  po.target.on_chip_bytes = static_cast<std::int64_t>(o.on_chip_mb * 1e6);
  const std::optional<compile::WeightForm> form = compile::weight_form_from_name(o.weights);
  if (!form) throw Error("compile: --weights " + o.weights + ": expected fp16, int8, int4, uint4 or lut4");
  const bool blockwise = *form == compile::WeightForm::int8 || *form == compile::WeightForm::int4 || *form == compile::WeightForm::uint4;
  if (blockwise && o.dialect != "ios18")
    throw Error("compile: --weights " + o.weights + " writes constexpr_blockwise_shift_scale, an ios18 op: it needs --dialect ios18");
  po.target.weights = *form;
  po.target.weight_block = o.weight_block >= 0 ? o.weight_block : compile::default_weight_block(*form);
  po.dialect = o.dialect == "ios16" ? compile::MilDialect::ios16 : compile::MilDialect::ios18;
  if (o.ane_weights == "baked") po.kernel_weights = compile::KernelWeights::baked;
  else if (o.ane_weights == "inputs") po.kernel_weights = compile::KernelWeights::inputs;
  else if (o.ane_weights != "auto") throw Error("compile: --ane-weights " + o.ane_weights + ": expected auto, baked or inputs");
  if (*form != compile::WeightForm::fp16) {  // baked constants, dequantized in the kernel
    if (po.kernel_weights == compile::KernelWeights::inputs)
      throw Error("compile: --weights " + o.weights + " bakes " + o.weights + " weights into the kernels: it needs --ane-weights baked");
    po.kernel_weights = compile::KernelWeights::baked;
  }
  po.replace = replace;
  if (progress) po.progress = [](std::string_view line) { std::fprintf(stderr, "  %.*s\n", static_cast<int>(line.size()), line.data()); };
  model::AnePackageShape shape{.window = o.seq, .capacity = o.context, .host_attention = o.host_attention, .batch = o.batch, .chunk = o.chunk};
  nlohmann::json info = model::package_model_info(m, source);
  const auto* llama = dynamic_cast<const model::LlamaModel*>(&m);
  if (llama) {
    // fp16 on the device: the stream's peak on a probe, in f32 on the CPU, chooses its scale.
    const double peak = residual_peak(m, residual_probe_tokens(m));
    shape.residual_scale = residual_scale_for(peak);
    if (shape.residual_scale != 1) {
      info["residual_scale"] = shape.residual_scale;
      if (po.progress) {
        char line[200];
        std::snprintf(line, sizeof line, "the residual stream peaks at %.4g on a probe (fp16 tops out at 65504): divided by %g on the device",
                      peak, shape.residual_scale);
        po.progress(line);
      }
    }
  }
  auto programs = model::ane_programs(m, shape);
  if (o.lora) {
    for (compile::ProgramSpec& p : programs) p.graph = model::with_lora(p.graph, *o.lora, 1.0);
    po.runtime_weights = true;
  }
  if (llama && (*form == compile::WeightForm::int4 || *form == compile::WeightForm::uint4)) {
    // A 4-bit folder's own values, not its widened floats quantized again.
    auto own = std::make_shared<const compile::Int4Weights>(model::mlx_int4_weights(llama->quantized()));
    if (!own->empty()) {
      if (po.progress)
        po.progress(std::to_string(own->size()) + " matrices in the folder's own 4-bit values (uint4 with its groups' offsets)");
      po.given_int4 = std::move(own);
    }
  }
  return compile::write_ane_package(programs, m.weights(), po, out, info);
}

std::string package_key(const model::CausalLm& m, const AnePackageOptions& o) {
  ContentHasher h;
  h.update(std::string(compile::kPackageFormat) + " " + std::to_string(compile::kPackageVersion));
  h.update(runtime::executable_identity());
  h.update(std::string(m.arch()) + " " + m.config_json());
  for (const auto& [name, t] : m.weights()) {
    h.update(name + " " + std::string(dtype_name(t.dtype())) + shape_str(t.shape()));
    const Tensor c = t.contiguous();
    h.update(std::span(c.raw(), c.nbytes()));
  }
  h.update("seq " + std::to_string(o.seq) + " context " + std::to_string(o.context) + (o.host_attention ? " host-attention " : " ") +
           (o.batch > 1 ? "batch " + std::to_string(o.batch) + " " : "") +
           (o.chunk > 1 ? "chunk " + std::to_string(o.chunk) + " " : "") + o.dialect +
           (o.m1_m2 ? " m1" : "") + (o.allow_concat ? " concat" : "") + " chip " + std::to_string(o.on_chip_mb) +
           (o.weights != "fp16" ? " " + o.weights + " block " + std::to_string(o.weight_block) : "") + " weights " + o.ane_weights);
  if (o.lora) {
    h.update("lora rank " + std::to_string(o.lora->rank));
    for (const std::string& t : o.lora->targets) h.update(" " + t);
  }
  return h.hex();
}

}  // namespace orion::engine
