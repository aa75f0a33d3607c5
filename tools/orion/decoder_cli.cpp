#include "decoder_cli.h"

#include <cstdio>

#include "ane_package_cli.h"
#include "core/process_memory.h"
#include "dist/collective.h"
#include "engine/pipeline.h"
#include "numerics_option.h"

namespace orion::cli {

void add_decoder_cli(CLI::App* cmd, DecoderCli& o) {
  cmd->add_option("--lora", o.lora,
                  "LoRA adapter folder to apply (adapter_config.json + adapter_model.safetensors, as train --lora "
                  "and PEFT write them); on ane-sim/ane another adapter of the same rank and layers compiles nothing");
  cmd->add_option("--temp", o.sampling.temperature, "Sampling temperature (0: greedy)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--top-k", o.sampling.top_k, "Sample among the k most likely tokens (0: all)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--top-p", o.sampling.top_p, "Sample within the smallest set of probability >= p")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--repeat-penalty", o.sampling.repetition_penalty, "Penalty for tokens already in the context (1: none)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seed", o.sampling.seed, "Sampling seed")->capture_default_str();
  cmd->add_option("--threads", o.threads, "Threads (0: one per hardware thread)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--device", o.device, "Device to run on: cpu, ane-sim (the emulator), ane (the Neural Engine: macOS on Apple silicon)")->check(CLI::IsMember({"cpu", "ane-sim", "ane"}))->capture_default_str();
  add_device_run_options(cmd, o.ane);
  cmd->add_option("--engine", o.engine, "fast: hand-scheduled decoder streaming each weight once per token (GPT-2 and the Llama family); graph: the reference executor")
      ->check(CLI::IsMember({"fast", "graph"}))->capture_default_str();
  cmd->add_option("--weights", o.weights,
                  "Weight format of the fast engine: f32, f16, or q8 (int8 with a scale per 32 weights), packed at startup; "
                  "default: the folder's own (f32 unless written by orion convert, whose weights are used from the file)")
      ->check(CLI::IsMember({"f32", "f16", "q8"}));
  add_numerics_option(cmd, o.numerics);
}

std::int64_t device_context(const std::string& device, const engine::AnePackageOptions& pkg) {
  return device != "cpu" && pkg.context > 0 ? pkg.context + 1 : 0;
}

engine::DecoderOptions decoder_options(const DecoderCli& o) {
  engine::DecoderOptions d;
  d.device = runtime::device_kind(o.device);
  d.graph = o.engine == "graph";
  d.numerics = parse_numerics(o.numerics);
  d.weights = o.weights;
  d.threads = o.threads;
  d.run = o.ane;
  d.lora = o.lora;
  return d;
}

std::optional<PipelinePart> start_pipeline(const std::string& dir, const engine::DecoderOptions& d, bool quiet) {
  const std::shared_ptr<dist::Collective> job = dist::job_collective();
  const int rank = job->rank();
  model::ModelFolder md = engine::load_pipeline_stage(dir, *job);
  const engine::LayerRange range =
      engine::pipeline_stage_range(md.lm().layers(), job->size(), rank);
  const std::string holds = "layers " + std::to_string(range.first) + "-" + std::to_string(range.last - 1) +
                            (rank == 0 ? ", the embedding" : "") +
                            (range.last == md.lm().layers() ? ", the final norm and the head" : "");
  if (rank == 0) {
    if (!quiet) std::fprintf(stderr, "pipeline: %s; rank 0 holds %s\n", job->describe().c_str(), holds.c_str());
    engine::ChosenDecoder chosen = engine::make_pipeline_decoder(md, d, job);
    return PipelinePart{std::move(md), std::move(chosen)};
  }
  engine::run_pipeline_stage(md, d, *job);
  // Said at the end, not between rank 0's lines.
  if (!quiet)
    std::fprintf(stderr, "pipeline: rank %d held %s; resident %.0f MB, peak %.0f MB\n", rank, holds.c_str(), resident_mb(),
                 peak_resident_mb());
  return std::nullopt;
}

std::string engine_description(const DecoderCli& o, const engine::ChosenDecoder& chosen) {
  if (chosen.run) return o.device + ", " + (o.ane.ane_prefill ? "prefill on the device, decode on the CPU" : "prefill and decode on the device");
  if (chosen.kind == engine::EngineKind::graph) return o.device + ", graph engine, " + o.numerics + " numerics";
  return o.device + ", fast engine, " + chosen.weights +
         (chosen.packed_bytes ? " weights packed" : " weights mapped from the file");
}

}  // namespace orion::cli
