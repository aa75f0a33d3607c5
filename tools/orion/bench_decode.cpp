// orion bench decode: tokens per second of the fast decoder (GPT-2 or Llama), and how close its weight
// streaming comes to the machine's read bandwidth, measured in the same run with the same
// threads. With f16, q8 or q4 weights it also reports what the format costs in accuracy: the
// relative error of the logits and the top-1 agreement against f32 weights (or the --reference
// folder's f16), and with --corpus the perplexity of both on a text. --against times a second
// format of the same weights run for run beside the first, and reports their ratio.
#if defined(__linux__)
#include <malloc.h>  // malloc_trim, glibc only (macOS has no <malloc.h>)
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "bench_commands.h"
#include "bench_decode_ane.h"
#include "core/emulation.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "engine/perplexity.h"
#include "core/stopwatch.h"
#include "exec/cpu/machine_limits.h"
#include "engine/fast/fast_engine.h"
#include "engine/logit_compare.h"
#include "model/model_folder.h"
#include "core/process_memory.h"

namespace orion::cli {

namespace {

struct DecodeOpts {
  std::string arch = "gpt2-124m", model_dir, dtype = "f16", reference, package, against, corpus;
  std::int64_t corpus_tokens = 512;
  std::int64_t probe_mb = 1024;
  bool dtype_given = false;
  int threads = 0, tokens = 256, runs = 5;
  std::uint64_t seed = 0;
  bool json = false;
};

model::AnyModel bench_model(const DecodeOpts& o) { return bench_any_model(o.arch, o.model_dir, o.seed); }

std::vector<std::int32_t> bench_tokens(std::int64_t n, std::int64_t vocab) {
  std::vector<std::int32_t> t;
  for (std::int64_t i = 0; i < n; ++i) t.push_back(static_cast<std::int32_t>((i * 7919 + 13) % vocab));
  return t;
}

// Teacher-forced logits of an engine over `tokens`, from an empty context.
engine::LogitRows engine_logits(const engine::FastEngine& e, std::span<const std::int32_t> tokens, int threads) {
  return engine::teacher_forced_logits(*e.session(threads, exec::cpu::best_isa()), tokens);
}

// Teacher-forced over `n` positions: the format's logits against f32's.
engine::LogitAgreement format_error(const engine::FastEngine& ref, const engine::FastEngine& fmt, std::int64_t vocab, int threads,
                                    int n) {
  const auto tokens = bench_tokens(n, vocab);
  return engine::compare_logits(engine_logits(ref, tokens, threads), engine_logits(fmt, tokens, threads));
}

// `v` printed with `format`, or JSON's null when it was not measured.
std::string json_number(bool measured, double v, const char* format) {
  if (!measured) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A comparison's relative error and top-1 agreement as JSON numbers, or nulls when not measured.
std::string json_rel_error(const std::optional<engine::LogitAgreement>& a) {
  return json_number(a.has_value(), a ? a->rel_l2 : 0.0, "%.3g");
}
std::string json_top1(const std::optional<engine::LogitAgreement>& a) {
  return json_number(a.has_value(), a ? a->top1 : 0.0, "%.4f");
}

// The f32 reference for a converted folder: the folder it was converted from (--reference).
engine::FastEngine reference_engine(const DecodeOpts& o, const model::Gpt2Config& c) {
  const model::ModelFolder md = model::ModelFolder::load(o.reference);
  const auto& r = md.gpt2("orion bench decode").config();
  if (r.n_layer != c.n_layer || r.n_embd != c.n_embd || r.n_head != c.n_head || r.vocab_size != c.vocab_size ||
      r.n_positions != c.n_positions || r.hidden() != c.hidden())
    throw Error::in_file(o.reference, "--reference has another shape than " + o.model_dir);
  return engine::make_fast_engine(md.model, model::WeightDType::f32);
}

// Perplexity of an engine teacher-forced over `ids` from an empty context.
double engine_perplexity(const engine::FastEngine& e, std::span<const std::int32_t> ids, int threads) {
  const engine::LogitRows rows = engine_logits(e, ids.first(ids.size() - 1), threads);
  double nll = 0;
  for (std::size_t i = 0; i + 1 < ids.size(); ++i) nll += engine::token_nll(rows[i], ids[i + 1]);
  return std::exp(nll / static_cast<double>(ids.size() - 1));
}

// An MLX folder's reference: the folder it was quantized from, in f16 (what a Mac user would
// otherwise have downloaded).
engine::FastEngine llama_reference_engine(const DecodeOpts& o, const model::CausalLm& lm) {
  const model::ModelFolder md = model::ModelFolder::load(o.reference);
  const model::CausalLm& r = model::causal_lm(md.model);
  if (r.arch() != lm.arch() || r.layers() != lm.layers() || r.vocab_size() != lm.vocab_size() || r.kv_width() != lm.kv_width())
    throw Error::in_file(o.reference, "--reference has another shape than " + o.model_dir);
  return engine::make_fast_engine(md.model, model::WeightDType::f16);
}

void bench_decode(DecodeOpts o) {
  Stopwatch sw;
  engine::FastEngine fast, other;  // other: --against's format
  std::string reference_name = "f32 weights";
  std::optional<double> ppl, ref_ppl;
  std::int64_t ppl_tokens = 0;
  std::optional<engine::LogitAgreement> err, ane_err;  // empty: not measured
  engine::LogitRows f32_logits;  // with --package: the f32 engine's, for ane-sim's error
  std::int64_t n_params = 0, context = 0, vocab = 0;
  bool mapped = false;
  {
    const model::AnyModel any = bench_model(o);
    const model::CausalLm& lm = model::causal_lm(any);
    n_params = std::visit([](const auto& m) { return m.config().parameter_count(); }, any);
    context = lm.context();
    vocab = lm.vocab_size();
    const auto* gpt2 = std::get_if<model::Gpt2Model>(&any);
    if (const model::StoredWeights* st = gpt2 ? gpt2->stored() : nullptr) {
      // A converted folder runs in the format it is stored in: re-encoding it here would measure
      // a format nobody asked for.
      const std::string stored(model::weight_dtype_name(st->format().dtype));
      if (o.dtype_given && o.dtype != stored)
        throw Error::in_file(st->path(), "is stored as " + model::stored_format_name(st->format()) + " (orion convert), not " +
                                             o.dtype + ": leave out --dtype, or convert the original folder to " + o.dtype);
      o.dtype = stored;
      mapped = true;
    }
    const auto* llama = std::get_if<model::LlamaModel>(&any);
    const bool mlx = llama && !llama->quantized().empty();
    if (!o.reference.empty() && !mapped && !mlx)
      throw Error("--reference compares a converted or MLX quantized folder with its original; " + o.model_dir + " is neither");
    // An MLX folder in 4 bits runs from its own words unless another format is asked for.
    if (mlx && !o.dtype_given) o.dtype = "q4";
    const model::WeightDType dtype = model::weight_dtype_from_name(o.dtype);
    fast = engine::make_fast_engine(any, dtype);
    if (!o.against.empty()) other = engine::make_fast_engine(any, model::weight_dtype_from_name(o.against));
    if (!o.package.empty() && !mapped)
      f32_logits = engine_logits(engine::make_fast_engine(any, model::WeightDType::f32), bench_tokens(32, vocab), o.threads);
    std::optional<engine::FastEngine> reference;
    if (!o.reference.empty()) {
      reference = mapped ? reference_engine(o, gpt2->config()) : llama_reference_engine(o, lm);
      reference_name = mapped ? "the f32 --reference" : "the --reference folder's f16";
    } else if (dtype != model::WeightDType::f32 && !mapped) {
      reference = engine::make_fast_engine(any, model::WeightDType::f32);
    }
    if (reference && (dtype != model::WeightDType::f32 || !o.reference.empty()))
      err = format_error(*reference, fast, vocab, o.threads, 32);
    if (!o.corpus.empty()) {
      if (o.model_dir.empty()) throw Error("--corpus needs a model folder (-m) for its tokenizer");
      const auto tokenizer = model::load_tokenizer(o.model_dir);
      const auto text = MappedFile::open(o.corpus);
      // The first bytes only: a token is rarely longer than 32 of them.
      const std::size_t n = std::min(text->bytes().size(), static_cast<std::size_t>(o.corpus_tokens) * 32);
      std::vector<std::int32_t> ids = tokenizer->encode(std::string_view(reinterpret_cast<const char*>(text->bytes().data()), n));
      ids.resize(static_cast<std::size_t>(std::min<std::int64_t>({static_cast<std::int64_t>(ids.size()), o.corpus_tokens, context})));
      if (ids.size() < 2) throw Error::in_file(o.corpus, "has fewer than two tokens");
      ppl_tokens = static_cast<std::int64_t>(ids.size()) - 1;
      ppl = engine_perplexity(fast, ids, o.threads);
      if (reference) ref_ppl = engine_perplexity(*reference, ids, o.threads);
    }
    if (mapped) o.dtype = model::stored_format_name(gpt2->stored()->format());
  }  // the f32 weights are gone: what stays resident is the packed (or mapped) model
#if defined(__GLIBC__)
  malloc_trim(0);  // hand the freed f32 weights back, so that the resident figure is honest
#endif
  const double setup_s = sw.seconds();
  if (o.tokens + 1 > context) throw Error("--tokens must be below the context of " + std::to_string(context));

  const std::unique_ptr<engine::Decoder> session = fast.session(o.threads, exec::cpu::best_isa());
  ThreadPool pool(o.threads);
  const auto bytes = static_cast<double>(fast.weight_bytes_per_token);

  // The read bandwidth is measured around every timed run (fractions_of_limit): on a shared VM
  // it moves a lot between consecutive runs (docs/PERFORMANCE.md, "Machines").
  const auto tokens = bench_tokens(o.tokens + 1, vocab);
  // With --package, each run of the fast decoder is followed by one of ane-sim on the same
  // tokens, so that the two are compared on the same state of a shared machine.
  std::unique_ptr<AneSimDecodeBench> ane;
  if (!o.package.empty()) {
    ane = std::make_unique<AneSimDecodeBench>(o.package, pool.size());
    if (!f32_logits.empty()) ane_err = engine::compare_logits(f32_logits, ane->logits(bench_tokens(32, vocab)));
  }
  // --against's format runs right after each run of the first, so each ratio compares two runs
  // on the same state of the machine.
  const std::unique_ptr<engine::Decoder> other_session = o.against.empty() ? nullptr : other.session(o.threads, exec::cpu::best_isa());
  auto timed = [&](engine::Decoder& d) {
    d.reset();
    d.decode(tokens[0]);
    Stopwatch run;
    for (int i = 1; i <= o.tokens; ++i) d.decode(tokens[static_cast<std::size_t>(i)]);
    return o.tokens / run.seconds();
  };
  const auto probe_bytes = static_cast<std::size_t>(o.probe_mb) << 20;
  std::vector<double> rates, probes{exec::cpu::measure_read_bandwidth_gbps(pool, probe_bytes)}, ane_rates, other_rates, ratios;
  for (int r = 0; r < o.runs; ++r) {
    rates.push_back(timed(*session));
    probes.push_back(exec::cpu::measure_read_bandwidth_gbps(pool, probe_bytes));
    if (other_session) {
      other_rates.push_back(timed(*other_session));
      ratios.push_back(rates.back() / other_rates.back());
    }
    if (ane) ane_rates.push_back(ane->run(tokens));
  }
  const Spread other_tok_s = spread(other_rates), ratio = spread(ratios);
  const Spread ane_tok_s = spread(ane_rates), tok_s = spread(rates), bandwidth = spread(probes);
  const double gbps = bytes * tok_s.median / 1e9;
  std::vector<double> achieved;
  for (double r : rates) achieved.push_back(bytes * r / 1e9);
  const Spread fraction = spread(fractions_of_limit(achieved, probes));
  const double rss = resident_mb();
  // What decoding needs resident: the packed weights, the KV cache and one set of activations.
  const double need_mb = (bytes + static_cast<double>(fast.session_bytes)) / 1e6;
  const char* isa = exec::cpu::isa_name(exec::cpu::best_isa()).data();
  if (o.json) {
    std::printf("{\"bench\": \"decode\", \"emulator\": \"%s\", \"model\": \"%s\", \"params\": %lld, \"dtype\": \"%s\", \"threads\": %d, \"isa\": \"%s\", "
                "\"tokens\": %d, \"runs\": %d, \"tok_per_s\": %.3f, \"tok_per_s_min\": %.3f, \"tok_per_s_max\": %.3f, "
                "\"bytes_per_token\": %.0f, \"achieved_gbps\": %.3f, \"measured_bandwidth_gbps\": %.3f, "
                "\"bandwidth_fraction\": %.4f, \"bandwidth_fraction_min\": %.4f, \"bandwidth_fraction_max\": %.4f, "
                "\"measured_bandwidth_min_gbps\": %.3f, \"measured_bandwidth_max_gbps\": %.3f, \"logits_rel_error\": %s, \"top1_agreement\": %s, \"weights_mapped\": %s, "
                "\"resident_mb\": %.1f, \"needed_mb\": %.1f, \"ane_sim_tok_per_s\": %s, \"ane_sim_fraction_of_cpu\": %s, "
                "\"ane_sim_logits_rel_error\": %s, \"ane_sim_top1_agreement\": %s, \"error_reference\": \"%s\", "
                "\"against\": %s, \"against_tok_per_s\": %s, \"speedup_over_against\": %s, \"speedup_min\": %s, \"speedup_max\": %s, "
                "\"perplexity_tokens\": %lld, \"perplexity\": %s, \"reference_perplexity\": %s}\n", emulator_name().c_str(),
                o.model_dir.empty() ? o.arch.c_str() : o.model_dir.c_str(), static_cast<long long>(n_params), o.dtype.c_str(),
                pool.size(), isa, o.tokens, o.runs, tok_s.median, tok_s.min, tok_s.max, bytes, gbps, bandwidth.median,
                fraction.median, fraction.min, fraction.max, bandwidth.min, bandwidth.max,
                json_rel_error(err).c_str(), json_top1(err).c_str(),
                mapped ? "true" : "false", rss, need_mb, json_number(ane != nullptr, ane_tok_s.median, "%.3f").c_str(),
                json_number(ane != nullptr, ane_tok_s.median / tok_s.median, "%.4f").c_str(),
                json_rel_error(ane_err).c_str(), json_top1(ane_err).c_str(), reference_name.c_str(),
                o.against.empty() ? "null" : ("\"" + o.against + "\"").c_str(),
                json_number(other_session != nullptr, other_tok_s.median, "%.3f").c_str(),
                json_number(other_session != nullptr, ratio.median, "%.4f").c_str(),
                json_number(other_session != nullptr, ratio.min, "%.4f").c_str(),
                json_number(other_session != nullptr, ratio.max, "%.4f").c_str(), static_cast<long long>(ppl_tokens),
                json_number(ppl.has_value(), ppl.value_or(0), "%.4f").c_str(),
                json_number(ref_ppl.has_value(), ref_ppl.value_or(0), "%.4f").c_str());
    return;
  }
  std::printf("decode %s (%.1fM params), %s weights%s, %d threads, %s kernels, %d tokens x %d runs (setup %.1f s)\n",
              o.model_dir.empty() ? o.arch.c_str() : o.model_dir.c_str(), static_cast<double>(n_params) / 1e6,
              o.dtype.c_str(), mapped ? " mapped from the file" : "", pool.size(), isa, o.tokens, o.runs, setup_s);
  std::fputs(emulation_notice().c_str(), stdout);
  std::printf("  %.2f tok/s median (min %.2f, max %.2f)\n", tok_s.median, tok_s.min, tok_s.max);
  std::printf("  %.1f MB of weights per token -> %.2f GB/s; read bandwidth around the runs %.2f GB/s median "
              "(%.2f-%.2f)\n  fraction of the bandwidth measured around each run: %.1f%% median (%.1f%%-%.1f%%)\n",
              bytes / 1e6, gbps, bandwidth.median, bandwidth.min, bandwidth.max, 100 * fraction.median, 100 * fraction.min,
              100 * fraction.max);
  if (other_session)
    std::printf("  %s, run for run after each: %.2f tok/s median (min %.2f, max %.2f); %s is %.2fx as fast (%.2fx-%.2fx)\n",
                o.against.c_str(), other_tok_s.median, other_tok_s.min, other_tok_s.max, o.dtype.c_str(), ratio.median,
                ratio.min, ratio.max);
  if (err)
    std::printf("  %s against %s over 32 positions: logits relative L2 error %.3g, top-1 agreement %.1f%%\n",
                o.dtype.c_str(), reference_name.c_str(), err->rel_l2, 100 * err->top1);
  else if (o.dtype != "f32")
    std::printf("  %s against f32 weights: not measured (a converted folder: pass --reference with the folder it was converted from)\n",
                o.dtype.c_str());
  if (ppl)
    std::printf("  perplexity over the first %lld tokens of %s: %.3f%s\n", static_cast<long long>(ppl_tokens), o.corpus.c_str(),
                *ppl, ref_ppl ? (" (" + reference_name + ": " + std::to_string(*ref_ppl).substr(0, 8) + ")").c_str() : "");
  std::printf("  resident %.1f MB; weights + KV cache + activations need %.1f MB\n", rss, need_mb);
  if (ane)
    std::printf("  ane-sim running %s, same tokens after each run: %.2f tok/s median (min %.2f, max %.2f), %.1f%% of "
                "the above\n",
                o.package.c_str(), ane_tok_s.median, ane_tok_s.min, ane_tok_s.max, 100 * ane_tok_s.median / tok_s.median);
  if (ane_err)
    std::printf("  ane-sim running %s against f32 weights over 32 positions: logits relative L2 error %.3g, top-1 agreement %.1f%%\n",
                o.package.c_str(), ane_err->rel_l2, 100 * ane_err->top1);
}

}  // namespace

void add_bench_decode_command(CLI::App& bench) {
  auto o = std::make_shared<DecodeOpts>();
  auto* cmd = bench.add_subcommand("decode", "Decode tok/s of the fast decoder against the machine's measured read bandwidth");
  cmd->add_option("--arch", o->arch, "A randomly initialised model of these shapes")->check(CLI::IsMember({"gpt2-124m", "stories110m"}))->capture_default_str();
  cmd->add_option("-m,--model", o->model_dir, "A model folder (GPT-2 or Llama) or a GGUF file instead of --arch");
  auto* dtype = cmd->add_option("--dtype", o->dtype,
                                "Weight format: f32, f16, q8 or q4 (a converted folder: its own; an MLX 4-bit folder: q4 from its own words)")
                    ->check(CLI::IsMember({"f32", "f16", "q8", "q4"}))
                    ->capture_default_str();
  cmd->add_option("--against", o->against, "Also time this format of the same weights, run for run, and report the speed ratio")
      ->check(CLI::IsMember({"f32", "f16", "q8", "q4"}));
  cmd->add_option("--reference", o->reference,
                  "With a converted -m: the f32 folder it was converted from; with an MLX quantized -m: the float folder it was "
                  "quantized from (run in f16), to report the format's logits error and perplexity against");
  cmd->add_option("--corpus", o->corpus, "A text file: report the perplexity of its first --corpus-tokens tokens (and the reference's)");
  cmd->add_option("--corpus-tokens", o->corpus_tokens, "Tokens of --corpus scored (at most the context)")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads (0: one per hardware thread)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--tokens", o->tokens, "Tokens decoded per run")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--runs", o->runs, "Timed runs (the median is reported)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the --arch model's weights")->capture_default_str();
  cmd->add_option("--package", o->package,
                  "Also decode the same tokens on ane-sim with this package of the model's shapes (orion compile --target "
                  "ane), after each run, and report its tok/s as a fraction of the above");
  cmd->add_option("--probe-mb", o->probe_mb, "MiB the read-bandwidth probe streams (well above the caches for a true figure)")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o, dtype] {
    DecodeOpts opts = *o;
    opts.dtype_given = dtype->count() > 0;
    bench_decode(opts);
  });
}

}  // namespace orion::cli
