#include "engine/decoder_factory.h"

#include "core/error.h"
#include "core/stopwatch.h"
#include "model/fast/fast_engine.h"
#include "model/session/graph_session.h"

namespace orion::engine {

ChosenDecoder make_decoder(const model::ModelFolder& md, const DecoderOptions& o,
                           const std::function<void(const std::string&)>& say) {
  ChosenDecoder c;
  std::string weights = o.weights;
  const auto* gpt2 = std::get_if<model::Gpt2Model>(&md.model);
  const model::StoredWeights* stored = gpt2 ? gpt2->stored() : nullptr;
  if (stored && !weights.empty() && weights != model::weight_dtype_name(stored->format().dtype))
    throw Error::in_file(stored->path(), "is stored as " + model::stored_format_name(stored->format()) +
                                             " (orion convert), not " + weights +
                                             ": leave out --weights, or convert the original folder to " + weights);
  const model::WeightDType dtype = weights.empty() ? (stored ? stored->format().dtype : model::WeightDType::f32)
                                                   : model::weight_dtype_from_name(weights);
  if (weights.empty()) weights = stored ? model::stored_format_name(stored->format()) : "f32";
  c.weights = weights;
  if (o.device != runtime::DeviceKind::cpu) {
    DeviceRunOptions ro = o.run;
    ro.device = o.device;
    ro.threads = o.threads;
    Stopwatch sw;
    c.kind = EngineKind::device;
    c.run = std::make_unique<DeviceRun>(md, ro, say);
    c.pack_ms = sw.ms();
    c.decoder = c.run->decoder();
  } else if (o.graph || o.numerics == exec::Numerics::f16) {
    c.kind = EngineKind::graph;
    c.decoder = std::make_unique<model::GraphSession>(md.lm(), exec::CpuOptions{o.numerics, o.threads});
  } else {
    Stopwatch sw;
    const model::FastEngine fast = model::make_fast_engine(md.model, dtype);
    c.pack_ms = sw.ms();
    c.packed_bytes = fast.packed_bytes;
    c.decoder = fast.session(o.threads, exec::cpu::best_isa());
  }
  return c;
}

}  // namespace orion::engine
