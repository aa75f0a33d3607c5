// orion perplexity: mean next-token loss and perplexity of a text file; how devices and
// numerics are compared with each other. `--device ane-sim` runs the model compiled into an ANE
// package (the one --package names, or one compiled into a temporary folder for this run) on
// the emulator; its window is the package's prefill window.
#include <cstdio>
#include <fstream>
#include <optional>
#include <unistd.h>

#include "ane_package_cli.h"
#include "commands.h"
#include "core/temp_folder.h"
#include "runtime/package_session.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/stopwatch.h"
#include "model/perplexity.h"
#include "model_dir.h"
#include "numerics_option.h"

namespace orion::cli {

void add_perplexity_command(CLI::App& app) {
  struct Opts {
    std::string model_dir, file, device = "cpu", numerics = "f32", package;
    AnePackageOptions pkg;
    std::int64_t window = 0, stride = 0;
    int threads = 0;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("perplexity", "Mean next-token loss and perplexity of a text file");
  cmd->add_option("-m,--model", o->model_dir, "Model folder")->required();
  cmd->add_option("-f,--file", o->file, "Text file")->required();
  cmd->add_option("--window", o->window, "Tokens per window (0: the model's context)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--stride", o->stride, "Tokens between window starts (0: half the window)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (0: one per hardware thread)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--device", o->device, "Device to run on")->check(CLI::IsMember({"cpu", "ane-sim"}))->capture_default_str();
  cmd->add_option("--package", o->package, "ane-sim: a package from `orion compile --target ane` (else one is compiled for this run)");
  add_ane_package_options(cmd, o->pkg);
  add_numerics_option(cmd, o->numerics);
  cmd->add_flag("--json", o->json, "Print one JSON object: tokens, loss, perplexity");
  cmd->callback([o] {
    const ModelDir md = load_model_dir(o->model_dir);
    const auto file = MappedFile::open(o->file);
    const auto bytes = file->bytes();
    const std::vector<std::int32_t> ids =
        md.tokenizer.encode(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
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
    if (o->device == "cpu") {
      set_window(md.model.config().n_positions);
      model::Gpt2Session session(md.model, {parse_numerics(o->numerics), o->threads});
      r = model::evaluate_perplexity(session, ids, window, stride, progress);
    } else {
      std::optional<TempFolder> temp;
      std::string dir = o->package;
      if (dir.empty()) {
        temp.emplace("orion-package");
        dir = temp->path() + "/pkg";
        if (!o->json) std::fprintf(stderr, "compiling the model for ane-sim (pass --package to reuse a compiled one)\n");
        compile_gpt2_package(md.model, o->pkg, dir, false, false);
      }
      device::AneSimOptions so;
      so.threads = o->threads > 0 ? o->threads : 2;
      device::AneSim sim(so);
      runtime::PackageRunner runner(dir, sim, so.threads);
      runtime::PackageSession session(runner);
      set_window(session.prefill_window());
      r = model::evaluate_perplexity([&](std::span<const std::int32_t> t) { return session.prefill(t); },
                                     session.prefill_window(), ids, window, stride, progress);
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
