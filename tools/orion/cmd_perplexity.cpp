// orion perplexity: mean next-token loss and perplexity of a text file; how devices and
// numerics are compared with each other. `--device ane-sim` runs the model compiled into an ANE
// package (engine/device_run.h) on the emulator: each window's first half through the prefill
// program, the rest one token at a time by decode steps on the device, or on the CPU with
// --ane-prefill. `--data FILE.jsonl` scores JSONL records instead, as training evaluates its
// validation split (train/jsonl_perplexity.h): with --mask-prompt over the answers only.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <fstream>
#include <unistd.h>

#include "ane_package_cli.h"
#include "commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/stopwatch.h"
#include "engine/decoder_factory.h"
#include "engine/graph_session.h"
#include "engine/perplexity.h"
#include "model/model_folder.h"
#include "numerics_option.h"
#include "text/hf/hf_components.h"
#include "train/jsonl_perplexity.h"

namespace orion::cli {

void add_perplexity_command(CLI::App& app) {
  struct Opts {
    std::string model_dir, file, device = "cpu", numerics = "f32", lora, data, token_logprobs;
    int top = 5;
    engine::DeviceRunOptions ane;
    std::int64_t window = 0, stride = 0, batch = 4, seq = 0;
    int threads = 0;
    bool json = false, mask_prompt = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("perplexity", "Mean next-token loss and perplexity of a text file or JSONL records");
  cmd->add_option("-m,--model", o->model_dir, "Model folder, or a GGUF file")->required();
  auto* file_opt = cmd->add_option("-f,--file", o->file, "Text file");
  auto* data = cmd->add_option("--data", o->data,
                               "JSONL records (text, prompt/completion or chat) scored as training evaluates them, "
                               "each on its own from its first token")
                   ->excludes(file_opt);
  file_opt->excludes(data);
  cmd->add_flag("--mask-prompt", o->mask_prompt, "--data: score the answers only (the assistant's turns, the completion)")
      ->needs(data);
  cmd->add_option("--batch", o->batch, "--data: records per batch")->check(CLI::PositiveNumber)->capture_default_str()->needs(data);
  cmd->add_option("--data-seq", o->seq, "--data: records are cut to this + 1 tokens, as train --seq cuts them (0: the longest record's length)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->needs(data);
  cmd->add_option("--lora", o->lora, "LoRA adapter folder to apply (adapter_config.json + adapter_model.safetensors)");
  auto* token_logprobs = cmd->add_option("--token-logprobs", o->token_logprobs,
                                         "With --file: write each scored token's log-probability and the --top most likely "
                                         "tokens' at its position to this JSON Lines file")->needs(file_opt);
  cmd->add_option("--top", o->top, "With --token-logprobs: alternatives listed per token")->check(CLI::Range(0, 100))->capture_default_str()->needs(token_logprobs);
  cmd->add_option("--window", o->window, "Tokens per window (0: the model's context)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--stride", o->stride, "Tokens between window starts (0: half the window)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (0: one per hardware thread)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--device", o->device, "Device to run on: cpu, ane-sim (the emulator), ane (the Neural Engine: macOS on Apple silicon)")->check(CLI::IsMember({"cpu", "ane-sim", "ane"}))->capture_default_str();
  add_device_run_options(cmd, o->ane);
  add_numerics_option(cmd, o->numerics);
  cmd->add_flag("--json", o->json, "Print one JSON object: tokens, loss, perplexity");
  cmd->callback([o] {
    if (o->file.empty() == o->data.empty()) throw Error("give a text file (-f FILE) or JSONL records (--data FILE.jsonl)");
    if (!o->data.empty()) {
      if (o->device != "cpu")
        throw Error("--data runs on the cpu (training's evaluation does too); --numerics f16 gives the device's numerics");
      Stopwatch sw;
      train::JsonlPerplexityOptions jo{.model_dir = o->model_dir, .data = o->data, .lora = o->lora,
                                       .mask_prompt = o->mask_prompt, .batch = o->batch, .seq = o->seq,
                                       .numerics = parse_numerics(o->numerics), .threads = o->threads};
      const train::JsonlPerplexity p = train::jsonl_perplexity(jo);
      const double ppl = std::exp(p.result.loss);
      if (o->json) {
        std::printf("{\"tokens\": %lld, \"loss\": %.6f, \"perplexity\": %.6f, \"records\": %zu, \"truncated\": %zu, "
                    "\"seq\": %lld, \"mask_prompt\": %s, \"numerics\": \"%s\"}\n",
                    static_cast<long long>(p.result.tokens), p.result.loss, ppl, p.records, p.truncated,
                    static_cast<long long>(p.seq), o->mask_prompt ? "true" : "false", o->numerics.c_str());
      } else {
        std::printf("%s: %zu records, %lld %s scored, loss %.4f, perplexity %.4f (%s numerics, %.1f s)\n", o->data.c_str(),
                    p.records, static_cast<long long>(p.result.tokens), o->mask_prompt ? "answer tokens" : "tokens",
                    p.result.loss, ppl, o->numerics.c_str(), sw.seconds());
        if (p.truncated)
          std::fprintf(stderr, "perplexity: warning: %zu records cut to --seq %lld + 1 tokens\n", p.truncated,
                       static_cast<long long>(p.seq));
      }
      return;
    }
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
    engine::PerplexityResult r;
    // --token-logprobs: one line per scored token, written whole at the end (core/atomic_file).
    std::string lines;
    engine::ScoredRowFn scored;
    if (!o->token_logprobs.empty())
      scored = [&](std::int64_t t, std::span<const float> logits) {
        double peak = -std::numeric_limits<double>::infinity(), sum = 0;
        for (const float v : logits) peak = std::max(peak, static_cast<double>(v));
        for (const float v : logits) sum += std::exp(static_cast<double>(v) - peak);
        const double log_total = peak + std::log(sum);
        std::vector<std::int32_t> order(logits.size());
        std::iota(order.begin(), order.end(), 0);
        const auto k = std::min<std::size_t>(static_cast<std::size_t>(o->top), order.size());
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), [&](std::int32_t a, std::int32_t b) {
          return logits[static_cast<std::size_t>(a)] > logits[static_cast<std::size_t>(b)] ||
                 (logits[static_cast<std::size_t>(a)] == logits[static_cast<std::size_t>(b)] && a < b);
        });
        const std::int32_t id = ids[static_cast<std::size_t>(t)];
        nlohmann::json top = nlohmann::json::array();
        for (std::size_t i = 0; i < k; ++i)
          top.push_back({order[i], static_cast<double>(logits[static_cast<std::size_t>(order[i])]) - log_total});
        lines += nlohmann::json{{"index", t}, {"id", id}, {"piece", text::hf::valid_utf8(md.tokenizer->piece(id))},
                                {"logprob", static_cast<double>(logits[static_cast<std::size_t>(id)]) - log_total}, {"top", top}}
                     .dump() +
                 "\n";
      };
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
      r = engine::evaluate_perplexity(run->window_logits(), run->max_window(), ids, window, stride, progress, scored);
      if (!o->json) std::fprintf(stderr, "%s\n", run->profile().c_str());
    } else {
      set_window(md.lm().context());
      r = engine::evaluate_perplexity(static_cast<engine::GraphSession&>(*chosen.decoder), ids, window, stride, progress, scored);
    }
    if (!o->token_logprobs.empty()) write_file_atomic(o->token_logprobs, lines);
    {
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
