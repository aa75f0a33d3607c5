#pragma once
// The one choice between Orion's engines for a model folder: the fast CPU decoder (the
// default), the graph executor (the reference; any numerics), or a device run (ane-sim, ane).
// generate and perplexity ask here instead of choosing themselves.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "engine/device_run.h"
#include "exec/cpu/executor.h"
#include "model/model_folder.h"
#include "engine/decoder.h"

namespace orion::engine {

enum class EngineKind { fast, graph, device };

struct DecoderOptions {
  runtime::DeviceKind device = runtime::DeviceKind::cpu;
  bool graph = false;  // cpu: the graph executor instead of the fast decoder
  exec::Numerics numerics = exec::Numerics::f32;  // the graph executor's (f16 implies graph)
  std::string weights;  // the fast decoder's weight format ("f32", "f16", "q8"); "": the folder's own
  int threads = 0;
  DeviceRunOptions run;  // device only (its device and threads are the ones above)
  // A LoRA adapter folder to apply (model/lora/): merged into a copy of the weights on the cpu;
  // on a device, its matrices are kernel inputs of a package compiled for its rank and targets.
  std::string lora;
};

struct ChosenDecoder {
  EngineKind kind = EngineKind::fast;
  std::unique_ptr<const model::AnyModel> merged;  // cpu with an adapter; declared before the decoder, which uses it
  std::unique_ptr<DeviceRun> run;  // device only; declared before the decoder, which uses it
  std::unique_ptr<Decoder> decoder;
  // fast: another session over the same packed weights, with its own cache (a server's
  // concurrent requests); a device with a decode_batch program: a slot of the batch; null for
  // the other engines.
  std::function<std::unique_ptr<Decoder>()> new_session;
  double pack_ms = 0;  // packing the fast decoder's weights, or finding the device's package
  std::size_t packed_bytes = 0;  // fast: 0 when the weights are mapped from the file
  std::string weights;  // fast: the weight format in use ("f32", "f16", "q8", or a converted folder's)
  std::string lora;     // how the adapter is applied, "" without one
};

// The fast engine's weight format for `md` when `asked` for one ("": the folder's own, f32 for
// floats) and its name for messages. Throws orion::Error when a converted folder is asked for
// another format than its own.
struct FastWeights {
  model::WeightDType dtype = model::WeightDType::f32;
  std::string name;
};
FastWeights fast_weights(const model::ModelFolder& md, const std::string& asked);

// Throws orion::Error when a converted folder is asked for another weight format than its own.
ChosenDecoder make_decoder(const model::ModelFolder& md, const DecoderOptions& o,
                           const std::function<void(const std::string&)>& say);

}  // namespace orion::engine
