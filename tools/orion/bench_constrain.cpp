// orion bench constrain: what constrained decoding's mask costs against the decode step it
// gates, both measured in the same run on the same model (the fast CPU engine).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "bench_commands.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "engine/decoder_factory.h"
#include "model/model_folder.h"
#include "text/constrain/json_constraint.h"
#include "text/sampler.h"

namespace orion::cli {

namespace {

// Nested objects, an array of objects, enums, bounded strings and numbers, required keys.
constexpr const char* kDefaultSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 24},
    "age": {"type": "integer", "minimum": 0, "maximum": 130},
    "email": {"type": ["string", "null"], "maxLength": 40},
    "role": {"enum": ["admin", "editor", "viewer"]},
    "address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                                 "zip": {"type": "string", "maxLength": 10}},
                "required": ["city"]},
    "scores": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 100}, "maxItems": 4},
    "friends": {"type": "array", "maxItems": 2,
                "items": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                                           "close": {"type": "boolean"}},
                          "required": ["name", "close"]}}
  },
  "required": ["name", "age", "role", "address", "friends"]
})";

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

void add_bench_constrain_command(CLI::App& bench) {
  struct Opts {
    std::string model_dir, schema_file, prompt = "Here is a record as JSON:";
    int answers = 10, max_tokens = 200, threads = 0;
    std::uint64_t seed = 1;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = bench.add_subcommand("constrain", "The JSON-schema mask's time per token against the decode step's, on one model");
  cmd->add_option("-m,--model", o->model_dir, "Model folder (its tokenizer's vocabulary is what the mask covers)")->required();
  cmd->add_option("--schema", o->schema_file, "A JSON Schema file (default: a nested record with arrays and enums)");
  cmd->add_option("-n,--answers", o->answers, "Answers to generate")->check(CLI::Range(1, 100000));
  cmd->add_option("--max-tokens", o->max_tokens, "Tokens an answer may take")->check(CLI::Range(1, 100000));
  cmd->add_option("--threads", o->threads, "Decode threads (0: all cores)");
  cmd->add_option("--seed", o->seed, "Sampling seed (temperature 1)");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] {
    std::string schema_text = kDefaultSchema;
    if (!o->schema_file.empty()) {
      std::ifstream in(o->schema_file, std::ios::binary);
      if (!in) throw Error(o->schema_file + ": cannot be read");
      schema_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(schema_text, nullptr, false);
    if (schema.is_discarded()) throw Error((o->schema_file.empty() ? "the schema" : o->schema_file) + ": not JSON");
    const auto grammar = std::make_shared<const text::constrain::Grammar>(text::constrain::compile_json_schema(schema));
    const model::ModelFolder md = model::ModelFolder::load(o->model_dir);
    engine::DecoderOptions d;
    d.threads = o->threads;
    const engine::ChosenDecoder chosen = engine::make_decoder(md, d, [](const std::string&) {});
    Stopwatch build;
    const auto vocab = std::make_shared<const text::constrain::VocabTrie>(*md.tokenizer);
    const double build_ms = build.ms();
    std::unique_ptr<engine::Decoder> session = chosen.new_session();
    const std::vector<std::int32_t> prompt = md.text_ids(o->prompt);
    std::vector<double> mask_ms, step_ms;
    int whole = 0;
    for (int a = 0; a < o->answers; ++a) {
      session->reset();
      std::vector<float> logits = session->prefill(prompt);
      text::SamplerOptions so;
      so.temperature = 1.0f, so.top_k = 0, so.top_p = 1.0f, so.seed = o->seed + static_cast<std::uint64_t>(a);
      text::Sampler sampler(so);
      text::constrain::JsonConstraint c(grammar, vocab, md.stop_ids);
      for (int t = 0; t < o->max_tokens; ++t) {
        if (c.complete()) {
          ++whole;
          break;
        }
        Stopwatch m;
        c.mask(logits);
        mask_ms.push_back(m.ms());
        const std::int32_t next = sampler.sample(logits);
        if (std::find(md.stop_ids.begin(), md.stop_ids.end(), next) != md.stop_ids.end()) {
          ++whole;
          break;
        }
        c.accept(next);
        Stopwatch s;
        logits = session->decode(next);
        step_ms.push_back(s.ms());
      }
    }
    const double mask_median = quantile(mask_ms, 0.5), step_median = quantile(step_ms, 0.5);
    if (o->json) {
      std::printf("{\"vocab\": %d, \"trie_build_ms\": %.1f, \"answers\": %d, \"whole\": %d, \"steps\": %zu, \"mask_ms_median\": %.3f, "
                  "\"mask_ms_p90\": %.3f, \"mask_ms_max\": %.3f, \"step_ms_median\": %.3f, \"mask_vs_step\": %.4f}\n",
                  vocab->vocab_size(), build_ms, o->answers, whole, mask_ms.size(), mask_median, quantile(mask_ms, 0.9),
                  quantile(mask_ms, 1.0), step_median, step_median > 0 ? mask_median / step_median : 0.0);
      return;
    }
    std::printf("%s", emulation_notice().c_str());
    std::printf("bench constrain: %s (%s weights), vocabulary %d, trie built in %.0f ms\n", o->model_dir.c_str(),
                chosen.weights.c_str(), vocab->vocab_size(), build_ms);
    std::printf("  %d answers, %d whole, %zu tokens: mask %.3f ms median (p90 %.3f, max %.3f), decode step %.2f ms median: "
                "the mask is %.1f%% of a step\n",
                o->answers, whole, mask_ms.size(), mask_median, quantile(mask_ms, 0.9), quantile(mask_ms, 1.0), step_median,
                step_median > 0 ? 100.0 * mask_median / step_median : 0.0);
  });
}

}  // namespace orion::cli
