// orion chat: a conversation on the terminal with a model folder that ships a chat template
// (tokenizer_config.json). Each turn the whole conversation is rendered by the template, as
// transformers' apply_chat_template renders it; the tokens the KV cache already holds are kept
// when the new prompt starts with them, so a turn costs its own tokens, not the history's.
// Lines starting with "/" are commands: /reset forgets the conversation, /exit (or end of
// input) ends it.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "commands.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "decoder_cli.h"
#include "engine/generation.h"
#include "model/model_folder.h"

namespace orion::cli {

namespace {

struct ChatOpts {
  std::string model_dir, system;
  int tokens = 512;
  DecoderCli run;
};

void chat(const ChatOpts& o) {
  const model::ModelFolder md = model::ModelFolder::load(o.model_dir, device_context(o.run.device, o.run.ane.pkg));
  const text::ChatTemplate tmpl = md.chat_template();
  const engine::ChosenDecoder chosen =
      engine::make_decoder(md, decoder_options(o.run), [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  engine::Decoder& session = *chosen.decoder;
  text::Sampler sampler(o.run.sampling);
  const bool terminal = isatty(STDIN_FILENO) != 0;
  std::fprintf(stderr, "chat with %s (%s); /reset forgets the conversation, /exit ends it\n", o.model_dir.c_str(),
               engine_description(o.run, chosen).c_str());

  nlohmann::json messages = nlohmann::json::array();
  auto start = [&] {
    messages = nlohmann::json::array();
    if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
  };
  start();
  std::vector<std::int32_t> cached;  // the ids the session holds, in order
  for (std::string line;;) {
    if (terminal) std::fputs("> ", stderr);
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line.empty()) continue;
    if (line == "/reset") {
      start();
      cached.clear();
      session.reset();
      std::fprintf(stderr, "(the conversation is forgotten)\n");
      continue;
    }
    if (line.starts_with("/")) {
      std::fprintf(stderr, "unknown command %s: /reset or /exit\n", line.c_str());
      continue;
    }
    messages.push_back({{"role", "user"}, {"content", line}});
    std::vector<std::int32_t> ids = md.chat_ids(tmpl.render(messages));
    if (static_cast<std::int64_t>(ids.size()) >= session.context()) {
      messages.erase(messages.end() - 1);
      std::fprintf(stderr, "the conversation would hold %zu tokens, more than the context of %lld: /reset to go on\n",
                   ids.size(), static_cast<long long>(session.context()));
      continue;
    }
    // Keep the cache where the new prompt starts with it; else run the whole prompt again.
    const bool extends = cached.size() < ids.size() && std::equal(cached.begin(), cached.end(), ids.begin());
    if (!extends) {
      session.reset();
      cached.clear();
    }
    Stopwatch sw;
    std::vector<float> logits = session.prefill(std::span(ids).subspan(cached.size()));
    const double prefill_ms = sw.ms();
    const std::size_t prompt_tokens = ids.size() - cached.size();
    std::string reply;
    const engine::GenerationOutcome g =
        engine::generate_tokens(session, sampler, *md.tokenizer, std::move(logits), ids, {o.tokens, md.stop_ids},
                                [&](std::string_view piece) {
                                  reply += piece;
                                  std::fwrite(piece.data(), 1, piece.size(), stdout);
                                  std::fflush(stdout);
                                });
    std::fputc('\n', stdout);
    std::fflush(stdout);
    cached.assign(ids.begin(), ids.begin() + session.position());
    messages.push_back({{"role", "assistant"}, {"content", reply}});
    std::fprintf(stderr, "(%s; %zu new prompt tokens in %.0f ms, %d generated%s)\n", g.stop.c_str(), prompt_tokens,
                 prefill_ms, g.generated,
                 g.decode_steps > 0 ? (", " + g.decode_rate()).c_str() : "");
  }
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto o = std::make_shared<ChatOpts>();
  auto* cmd = app.add_subcommand("chat", "Talk with a model that ships a chat template, one line per message (history kept)");
  cmd->add_option("-m,--model", o->model_dir, "Model folder with tokenizer_config.json's chat_template, or a GGUF file with tokenizer.chat_template")->required();
  cmd->add_option("--system", o->system, "A system message that starts the conversation");
  cmd->add_option("-n,--tokens", o->tokens, "Most tokens of one reply")->check(CLI::PositiveNumber)->capture_default_str();
  add_decoder_cli(cmd, o->run);
  cmd->callback([o] { chat(*o); });
}

}  // namespace orion::cli
