#include "engine/decoder_factory.h"

#include <algorithm>

#include "core/error.h"
#include "core/stopwatch.h"
#include "engine/fast/fast_engine.h"
#include "model/lora/lora_model.h"
#include "engine/graph_session.h"

namespace orion::engine {

FastWeights fast_weights(const model::ModelFolder& md, const std::string& asked) {
  std::string weights = asked;
  const auto* gpt2 = std::get_if<model::Gpt2Model>(&md.model);
  const model::StoredWeights* stored = gpt2 ? gpt2->stored() : nullptr;
  if (stored && !weights.empty() && weights != model::weight_dtype_name(stored->format().dtype))
    throw Error::in_file(stored->path(), "is stored as " + model::stored_format_name(stored->format()) +
                                             " (orion convert), not " + weights +
                                             ": leave out --weights, or convert the original folder to " + weights);
  // An MLX folder in 4 bits decodes from its own words; in other bits, from the dequantized f32.
  const auto* llama = std::get_if<model::LlamaModel>(&md.model);
  const bool mlx_4bit = llama && !llama->quantized().empty() &&
                        std::all_of(llama->quantized().begin(), llama->quantized().end(),
                                    [](const auto& kv) { return kv.second.format.bits == 4; });
  const model::WeightDType dtype =
      weights.empty() ? (stored ? stored->format().dtype : mlx_4bit ? model::WeightDType::q4 : model::WeightDType::f32)
                      : model::weight_dtype_from_name(weights);
  if (weights.empty()) weights = stored ? model::stored_format_name(stored->format()) : mlx_4bit ? "q4 (the folder's own)" : "f32";
  return {dtype, weights};
}

ChosenDecoder make_decoder(const model::ModelFolder& md, const DecoderOptions& o,
                           const std::function<void(const std::string&)>& say) {
  ChosenDecoder c;
  std::shared_ptr<const model::LoraAdapter> adapter;
  if (!o.lora.empty()) adapter = std::make_shared<const model::LoraAdapter>(model::read_lora_adapter(o.lora, md.lm()));
  const auto describe = [&](const char* how) {
    return "LoRA " + o.lora + " (rank " + std::to_string(adapter->config.rank) + ", alpha " +
           std::to_string(adapter->config.alpha).substr(0, 6) + ", " + std::to_string(adapter->weights.size() / 2) +
           " layers) " + how;
  };
  const FastWeights fw = fast_weights(md, o.weights);
  const model::WeightDType dtype = fw.dtype;
  c.weights = fw.name;
  if (o.device != runtime::DeviceKind::cpu) {
    DeviceRunOptions ro = o.run;
    ro.device = o.device;
    ro.threads = o.threads;
    ro.lora = adapter;
    if (adapter) c.lora = describe("written into the kernels' weight inputs");
    Stopwatch sw;
    c.kind = EngineKind::device;
    c.run = std::make_unique<DeviceRun>(md, ro, say);
    c.pack_ms = sw.ms();
    c.decoder = c.run->decoder();
    if (c.run->batch_slots() > 1) c.new_session = [run = c.run.get()] { return run->batch_decoder(); };
    return c;
  }
  if (adapter) {
    c.merged = std::make_unique<const model::AnyModel>(model::merged_model(md.model, *adapter));
    c.lora = describe("merged into a copy of the weights");
  }
  const model::AnyModel& m = c.merged ? *c.merged : md.model;
  if (o.graph || o.numerics == exec::Numerics::f16) {
    c.kind = EngineKind::graph;
    c.decoder = std::make_unique<GraphSession>(model::causal_lm(m), exec::CpuOptions{o.numerics, o.threads});
  } else {
    Stopwatch sw;
    const FastEngine fast = make_fast_engine(m, dtype);
    c.pack_ms = sw.ms();
    c.packed_bytes = fast.packed_bytes;
    c.decoder = fast.session(o.threads, exec::cpu::best_isa());
    c.new_session = [session = fast.session, threads = o.threads] { return session(threads, exec::cpu::best_isa()); };
  }
  return c;
}

}  // namespace orion::engine
