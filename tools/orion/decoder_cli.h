#pragma once
// The options of a command that runs a model token by token (generate, chat): which engine and
// device (engine/decoder_factory.h), the weights, a LoRA adapter, and the sampling; declared
// once so that every such command spells and checks them the same.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "engine/decoder_factory.h"
#include "model/model_folder.h"
#include "text/sampler.h"

namespace orion::cli {

struct DecoderCli {
  std::string device = "cpu", numerics = "f32", engine = "fast", weights;  // weights "": the folder's own
  std::string lora;  // an adapter folder
  int threads = 0;
  engine::DeviceRunOptions ane;
  text::SamplerOptions sampling;
};

void add_decoder_cli(CLI::App* cmd, DecoderCli& o);
engine::DecoderOptions decoder_options(const DecoderCli& o);
// The positions a model folder is loaded for: a device package's --context N needs N + 1,
// beyond the default cap where the config allows it; 0 (the default) otherwise.
std::int64_t device_context(const std::string& device, const engine::AnePackageOptions& pkg);
// --pipeline (generate, serve; engine/pipeline.h): this rank's part of DIR. Every rank but 0
// runs its stage here until rank 0 is done, and gets nullopt (its command then ends); rank 0
// gets its part of the folder and the decoder whose sessions run through every rank.
struct PipelinePart {
  model::ModelFolder md;
  engine::ChosenDecoder chosen;
};
std::optional<PipelinePart> start_pipeline(const std::string& dir, const engine::DecoderOptions& d, bool quiet);
// What ran: the device, and the engine with its numerics or weights.
std::string engine_description(const DecoderCli& o, const engine::ChosenDecoder& chosen);

}  // namespace orion::cli
