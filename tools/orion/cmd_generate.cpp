// orion generate: text from a prompt, streamed token by token, with a KV cache. On the CPU
// (fast or graph engine) or on ane-sim (engine/device_run.h: the model compiled into the
// package cache on first use; everything on the device, or --ane-prefill); the engine is
// chosen by engine/decoder_factory.h. Under mpirun, --pipeline splits the model's layers over the
// ranks (engine/pipeline.h): rank 0 prints, the others run their layers.
#include <cstdio>

#include "decoder_cli.h"
#include "commands.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "engine/decoder_factory.h"
#include "engine/generation.h"
#include "model/formats/config_json.h"
#include "model/model_folder.h"
#include "core/process_memory.h"
#include "text/sampler.h"

namespace orion::cli {

namespace {

struct GenerateOpts {
  std::string model_dir, prompt;
  bool chat = false;   // the prompt as a user's message in the folder's chat template
  std::string system;  // with --chat: a system message first
  std::string messages_file;  // with --chat: the conversation before the prompt (a JSON array)
  int tokens = 64;
  bool profile = false;
  bool pipeline = false;
  DecoderCli run;
};

void generate(const GenerateOpts& o) {
  // The fast decoder by default (GPT-2 and Llama); the graph executor for ANE-style f16
  // numerics and on request.
  const engine::DecoderOptions d = decoder_options(o.run);
  Stopwatch load_sw;
  std::optional<PipelinePart> part;
  if (o.pipeline && !(part = start_pipeline(o.model_dir, d, false))) return;  // this rank ran its stage
  const model::ModelFolder md =
      part ? std::move(part->md) : model::ModelFolder::load(o.model_dir, device_context(o.run.device, o.run.ane.pkg));
  const double load_ms = load_sw.ms();
  const model::CausalLm& lm = md.lm();
  // Llama: BOS first. GPT-2 was trained with <|endoftext|> between documents: an empty prompt
  // starts a new one. --chat: the template's text, which writes its own special tokens.
  std::string shown = o.prompt;
  if (o.chat) {
    nlohmann::json messages = nlohmann::json::array();
    if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
    if (!o.messages_file.empty()) {
      const nlohmann::json earlier = nlohmann::json::parse(model::read_config_text(o.messages_file), nullptr, false);
      if (!earlier.is_array()) throw Error::in_file(o.messages_file, "must be a JSON array of {\"role\", \"content\"} messages");
      for (const nlohmann::json& m : earlier) messages.push_back(m);
    }
    if (!o.prompt.empty() || o.messages_file.empty()) messages.push_back({{"role", "user"}, {"content", o.prompt}});
    shown = md.chat_template().render(messages);
  } else if (!o.system.empty() || !o.messages_file.empty()) {
    throw Error("--system and --messages are chat messages: use them with --chat");
  }
  std::vector<std::int32_t> ids = o.chat ? md.chat_ids(shown) : md.text_ids(o.prompt);
  if (static_cast<std::int64_t>(ids.size()) >= lm.context())
    throw Error("the prompt has " + std::to_string(ids.size()) + " tokens; the context holds " +
                std::to_string(lm.context()));
  // Packing the weights for the fast engine (none for a converted folder, whose weights are
  // mapped); the session's KV cache and activations are not counted.
  const engine::ChosenDecoder chosen =
      part ? std::move(part->chosen)
           : engine::make_decoder(md, d, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  if (!chosen.lora.empty()) std::fprintf(stderr, "%s\n", chosen.lora.c_str());
  const double pack_ms = chosen.pack_ms;
  engine::DeviceRun* ane = chosen.run.get();
  engine::Decoder& session = *chosen.decoder;
  text::Sampler sampler(o.run.sampling);

  std::fputs(shown.c_str(), stdout);
  std::fflush(stdout);
  Stopwatch sw;
  std::vector<float> logits = session.prefill(ids);
  const double prefill_ms = sw.ms();
  const std::size_t prompt_tokens = ids.size();
  const engine::GenerationOutcome g =
      engine::generate_tokens(session, sampler, *md.tokenizer, std::move(logits), ids, {o.tokens, md.stop_ids},
                              [](std::string_view piece) {
                                std::fwrite(piece.data(), 1, piece.size(), stdout);
                                std::fflush(stdout);
                              });
  const std::string& stop = g.stop;
  const int generated = g.generated;
  std::fputc('\n', stdout);
  std::fflush(stdout);
  std::fprintf(stderr,
               "%s. prompt %zu tokens, generated %d tokens; load %.0f ms, pack %.0f ms, prefill %.1f ms (%.1f tok/s), decode %s; "
               "resident %.0f MB, peak %.0f MB (%s)\n",
               stop.c_str(), prompt_tokens, generated, load_ms, pack_ms, prefill_ms,
               static_cast<double>(prompt_tokens) / (prefill_ms * 1e-3),
               g.decode_steps > 0 ? g.decode_rate().c_str() : "-",
               resident_mb(), peak_resident_mb(), engine_description(o.run, chosen).c_str());
  if (ane) std::fprintf(stderr, "%s\n", ane->profile().c_str());
  if (ane && o.profile) std::fprintf(stderr, "%s", ane->profile_table().c_str());
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto o = std::make_shared<GenerateOpts>();
  auto* cmd = app.add_subcommand("generate", "Generate text from a prompt, streaming tokens as they come");
  cmd->add_option("-m,--model", o->model_dir, "Model folder (config.json, model.safetensors or its shards, and tokenizer.json, tokenizer.model or vocab.json + merges.txt), or a GGUF file")->required();
  cmd->add_option("-p,--prompt", o->prompt, "Prompt text (empty: start a new document)");
  cmd->add_flag("--chat", o->chat,
                "Send the prompt as a user's message through the folder's chat template (tokenizer_config.json), "
                "ending with the assistant's turn");
  cmd->add_option("--system", o->system, "With --chat: a system message before the prompt");
  cmd->add_option("--messages", o->messages_file,
                  "With --chat: a JSON file of the conversation so far (an array of {\"role\", \"content\"}), after the "
                  "system message and before the prompt (which may then be empty)");
  cmd->add_option("-n,--tokens", o->tokens, "Tokens to generate")->check(CLI::NonNegativeNumber)->capture_default_str();
  add_decoder_cli(cmd, o->run);
  cmd->add_flag("--profile", o->profile, "ane-sim: per-kernel compile, load and run times");
  cmd->add_flag("--pipeline", o->pipeline,
                "Under mpirun: split the model's layers over the ranks, each holding only its own (a model larger than one "
                "machine's memory); rank 0 prints. The fast CPU engine, Llama family");
  cmd->callback([o] { generate(*o); });
}

}  // namespace orion::cli
