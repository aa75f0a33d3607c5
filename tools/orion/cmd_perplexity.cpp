// orion perplexity: mean next-token loss and perplexity of a text file; how devices and
// numerics are compared with each other. `--device ane-sim` runs the model compiled into an ANE
// package (engine/device_run.h) on the emulator: each window's first half through the prefill
// program, the rest one token at a time by decode steps on the device, or on the CPU with
// --ane-prefill.
#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "ane_package_cli.h"
#include "commands.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/stopwatch.h"
#include "engine/decoder_factory.h"
#include "model/session/graph_session.h"
#include "model/session/perplexity.h"
#include "model/model_folder.h"
#include "numerics_option.h"

namespace orion::cli {

void add_perplexity_command(CLI::App& app) {
  struct Opts {
    std::string model_dir, file, device = "cpu", numerics = "f32", lora;
    engine::DeviceRunOptions ane;
    std::int64_t window = 0, stride = 0;
    int threads = 0;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("perplexity", "Mean next-token loss and perplexity of a text file");
  cmd->add_option("-m,--model", o->model_dir, "Model folder")->required();
  cmd->add_option("-f,--file", o->file, "Text file")->required();
  cmd->add_option("--lora", o->lora, "LoRA adapter folder to apply (adapter_config.json + adapter_model.safetensors)");
  cmd->add_option("--window", o->window, "Tokens per window (0: the model's context)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--stride", o->stride, "Tokens between window starts (0: half the window)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (0: one per hardware thread)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--device", o->device, "Device to run on: cpu, ane-sim (the emulator), ane (the Neural Engine: macOS on Apple silicon)")->check(CLI::IsMember({"cpu", "ane-sim", "ane"}))->capture_default_str();
  add_device_run_options(cmd, o->ane);
  add_numerics_option(cmd, o->numerics);
  cmd->add_flag("--json", o->json, "Print one JSON object: tokens, loss, perplexity");
  cmd->callback([o] {
    const model::ModelFolder md = model::ModelFolder::load(o->model_dir);
    const auto file = MappedFile::open(o->file);
    const auto bytes = file->bytes();
    // Llama scores the text after its BOS, as it was trained to see texts.
    const std::vector<std::int32_t> ids =
        md.text_ids(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    const bool tty = !o->json && isatty(fileno(stderr));
    const auto progress = [&](std::int64_t done, std::int64_t total) {
      if (tty) std::fprintf(stderr, "\rperplexity: %lld/%lld tokens", static_cast<long long>(done), static_cast<long long>(total));
    };
    std::int64_t window = 0, stride = 0;
    const auto set_window = [&](std::int64_t max_window) {
      window = o->window > 0 ? o->window : max_window;
      stride = o->stride > 0 ? o->stride : std::max<std::int64_t>(1, window / 2);
    };
    Stopwatch sw;
    model::PerplexityResult r;
    // The graph executor on the CPU (any numerics), or the device's run of the model.
    engine::DecoderOptions d;
    d.device = runtime::device_kind(o->device);
    d.graph = true;
    d.numerics = parse_numerics(o->numerics);
    d.threads = o->threads;
    d.run = o->ane;
    d.lora = o->lora;
    const engine::ChosenDecoder chosen = engine::make_decoder(md, d, [&](const std::string& line) {
      if (!o->json) std::fprintf(stderr, "%s\n", line.c_str());
    });
    if (!chosen.lora.empty() && !o->json) std::fprintf(stderr, "%s\n", chosen.lora.c_str());
    if (engine::DeviceRun* run = chosen.run.get()) {
      set_window(run->max_window());
      r = model::evaluate_perplexity(run->window_logits(), run->max_window(), ids, window, stride, progress);
      if (!o->json) std::fprintf(stderr, "%s\n", run->profile().c_str());
    } else {
      set_window(md.lm().context());
      r = model::evaluate_perplexity(static_cast<model::GraphSession&>(*chosen.decoder), ids, window, stride, progress);
    }
    if (tty) std::fputc('\n', stderr);
    if (o->json) {
      std::printf("{\"tokens\": %lld, \"loss\": %.6f, \"perplexity\": %.6f, \"window\": %lld, \"stride\": %lld, \"device\": \"%s\", \"numerics\": \"%s\"}\n",
                  static_cast<long long>(r.tokens), r.loss, r.perplexity, static_cast<long long>(window),
                  static_cast<long long>(stride), o->device.c_str(), o->numerics.c_str());
    } else {
      std::printf("%s: %lld tokens scored, loss %.4f, perplexity %.4f (window %lld, stride %lld, %s, %s numerics, %.1f s)\n",
                  o->file.c_str(), static_cast<long long>(r.tokens), r.loss, r.perplexity, static_cast<long long>(window),
                  static_cast<long long>(stride), o->device.c_str(), o->numerics.c_str(), sw.seconds());
    }
  });
}

}  // namespace orion::cli
