// orion generate: text from a prompt, streamed token by token, with a KV cache. On the CPU
// (fast or graph engine) or on ane-sim (engine/device_run.h: the model compiled into the
// package cache on first use; everything on the device, or --ane-prefill); the engine is
// chosen by engine/decoder_factory.h.
#include <cstdio>

#include "ane_package_cli.h"
#include "commands.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "engine/decoder_factory.h"
#include "model/model_folder.h"
#include "numerics_option.h"
#include "process_memory.h"
#include "text/sampler.h"

namespace orion::cli {

namespace {

struct GenerateOpts {
  std::string model_dir, prompt, device = "cpu", numerics = "f32", engine = "fast", weights;  // weights "": the folder's own
  std::string lora;  // an adapter folder
  int tokens = 64, threads = 0;
  bool profile = false;
  engine::DeviceRunOptions ane;
  text::SamplerOptions sampling;
};

void generate(const GenerateOpts& o) {
  Stopwatch load_sw;
  const model::ModelFolder md = model::ModelFolder::load(o.model_dir);
  const double load_ms = load_sw.ms();
  const model::CausalLm& lm = md.lm();
  // Llama: BOS first. GPT-2 was trained with <|endoftext|> between documents: an empty prompt
  // starts a new one.
  std::vector<std::int32_t> ids = md.text_ids(o.prompt);
  if (static_cast<std::int64_t>(ids.size()) >= lm.context())
    throw Error("the prompt has " + std::to_string(ids.size()) + " tokens; the context holds " +
                std::to_string(lm.context()));
  // The fast decoder by default (GPT-2 and Llama); the graph executor for ANE-style f16
  // numerics and on request.
  engine::DecoderOptions d;
  d.device = runtime::device_kind(o.device);
  d.graph = o.engine == "graph";
  d.numerics = parse_numerics(o.numerics);
  d.weights = o.weights;
  d.threads = o.threads;
  d.run = o.ane;
  d.lora = o.lora;
  // Packing the weights for the fast engine (none for a converted folder, whose weights are
  // mapped); the session's KV cache and activations are not counted.
  const engine::ChosenDecoder chosen =
      engine::make_decoder(md, d, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  if (!chosen.lora.empty()) std::fprintf(stderr, "%s\n", chosen.lora.c_str());
  const double pack_ms = chosen.pack_ms;
  const std::size_t packed_bytes = chosen.packed_bytes;
  const std::string& weights = chosen.weights;
  const bool graph = chosen.kind == engine::EngineKind::graph;
  engine::DeviceRun* ane = chosen.run.get();
  model::Decoder& session = *chosen.decoder;
  text::Sampler sampler(o.sampling);

  std::fputs(o.prompt.c_str(), stdout);
  std::fflush(stdout);
  Stopwatch sw;
  std::vector<float> logits = session.prefill(ids);
  const double prefill_ms = sw.ms();
  const std::size_t prompt_tokens = ids.size();
  std::string stop = "generated the requested " + std::to_string(o.tokens) + " tokens";
  int generated = 0, decode_steps = 0;
  double decode_s = 0;
  while (generated < o.tokens) {
    const std::int32_t next = sampler.sample(logits, ids);
    if (next == lm.eos_token_id()) {
      stop = "stopped at the end-of-text token";
      break;
    }
    if (next >= md.tokenizer->vocab_size()) {  // a row the tokenizer has no spelling for
      stop = "stopped: sampled token " + std::to_string(next) + ", which the tokenizer cannot spell";
      break;
    }
    ids.push_back(next);
    ++generated;
    const std::string piece = md.tokenizer->piece(next);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    if (generated == o.tokens) break;
    if (session.position() >= session.context()) {
      stop = "stopped: the context of " + std::to_string(session.context()) + " tokens is full";
      break;
    }
    sw.restart();
    logits = session.decode(next);
    decode_s += sw.seconds();
    ++decode_steps;
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
  std::fprintf(stderr,
               "%s. prompt %zu tokens, generated %d tokens; load %.0f ms, pack %.0f ms, prefill %.1f ms (%.1f tok/s), decode %s; "
               "resident %.0f MB, peak %.0f MB (%s, %s)\n",
               stop.c_str(), prompt_tokens, generated, load_ms, pack_ms, prefill_ms,
               static_cast<double>(prompt_tokens) / (prefill_ms * 1e-3),
               decode_steps > 0 ? (std::to_string(decode_steps / decode_s).substr(0, 6) + " tok/s").c_str() : "-",
               resident_mb(), peak_resident_mb(), o.device.c_str(),
               ane ? (o.ane.ane_prefill ? "prefill on the device, decode on the CPU" : "prefill and decode on the device")
               : graph ? ("graph engine, " + o.numerics + " numerics").c_str()
                       : ("fast engine, " + weights + (packed_bytes ? " weights packed" : " weights mapped from the file")).c_str());
  if (ane) std::fprintf(stderr, "%s\n", ane->profile().c_str());
  if (ane && o.profile) std::fprintf(stderr, "%s", ane->profile_table().c_str());
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto o = std::make_shared<GenerateOpts>();
  auto* cmd = app.add_subcommand("generate", "Generate text from a prompt, streaming tokens as they come");
  cmd->add_option("-m,--model", o->model_dir, "Model folder (config.json, model.safetensors, and tokenizer.model or vocab.json + merges.txt)")->required();
  cmd->add_option("-p,--prompt", o->prompt, "Prompt text (empty: start a new document)");
  cmd->add_option("--lora", o->lora,
                  "LoRA adapter folder to apply (adapter_config.json + adapter_model.safetensors, as train --lora "
                  "and PEFT write them); on ane-sim/ane another adapter of the same rank and layers compiles nothing");
  cmd->add_option("-n,--tokens", o->tokens, "Tokens to generate")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--temp", o->sampling.temperature, "Sampling temperature (0: greedy)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--top-k", o->sampling.top_k, "Sample among the k most likely tokens (0: all)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--top-p", o->sampling.top_p, "Sample within the smallest set of probability >= p")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--repeat-penalty", o->sampling.repetition_penalty, "Penalty for tokens already in the context (1: none)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seed", o->sampling.seed, "Sampling seed")->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (0: one per hardware thread)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--device", o->device, "Device to run on: cpu, ane-sim (the emulator), ane (the Neural Engine: macOS on Apple silicon)")->check(CLI::IsMember({"cpu", "ane-sim", "ane"}))->capture_default_str();
  add_device_run_options(cmd, o->ane);
  cmd->add_flag("--profile", o->profile, "ane-sim: per-kernel compile, load and run times");
  cmd->add_option("--engine", o->engine, "fast: hand-scheduled decoder streaming each weight once per token (GPT-2 and Llama); graph: the reference executor")
      ->check(CLI::IsMember({"fast", "graph"}))->capture_default_str();
  cmd->add_option("--weights", o->weights,
                  "Weight format of the fast engine (GPT-2 or Llama): f32, f16, or q8 (int8 with a scale per 32 weights), packed at startup; "
                  "default: the folder's own (f32 unless written by orion convert, whose weights are used from the file)")
      ->check(CLI::IsMember({"f32", "f16", "q8"}));
  add_numerics_option(cmd, o->numerics);
  cmd->callback([o] { generate(*o); });
}

}  // namespace orion::cli
