#include "train/jsonl_perplexity.h"

#include <algorithm>

#include "core/error.h"
#include "model/lora/lora_adapter.h"
#include "model/model_folder.h"
#include "train/data/jsonl_records.h"
#include "train/data/record_loader.h"
#include "train/model_loss.h"

namespace orion::train {

namespace {

constexpr std::int64_t kRound = 16;  // the longest record's window, rounded up to it

}  // namespace

JsonlPerplexity jsonl_perplexity(const JsonlPerplexityOptions& o) {
  const RecordEncoder encoder = RecordEncoder::load(o.model_dir);
  const Records records = read_jsonl_records(o.data, encoder, o.mask_prompt);
  const model::AnyModel model = model::load_any_model(o.model_dir);
  const model::CausalLm& lm = model::causal_lm(model);
  JsonlPerplexity out;
  out.seq = o.seq;
  if (out.seq <= 0) {
    std::uint64_t longest = 0;
    for (std::size_t r = 0; r < records.count(); ++r) longest = std::max(longest, records.length(r) - 1);
    out.seq = std::min<std::int64_t>(lm.context(), (static_cast<std::int64_t>(longest) + kRound - 1) / kRound * kRound);
  }
  if (out.seq > lm.context())
    throw Error("--seq " + std::to_string(out.seq) + " is longer than the model's context of " + std::to_string(lm.context()));
  const RecordLoaderOptions lo{.batch = o.batch, .seq = out.seq, .buckets = sequence_buckets(out.seq, false),
                               .skip_long = false, .seed = 0, .pad_id = encoder.eot_id()};
  const auto loader = std::make_shared<const RecordLoader>(records, lo, o.data);
  out.records = loader->stats().records;
  out.truncated = loader->stats().truncated;
  LossGraphFn loss = model_loss_graph(model);
  TensorMap params;
  if (!o.lora.empty()) {
    // As training evaluates an adapter: the base weights constants, the adapter the params.
    const model::LoraAdapter adapter = model::read_lora_adapter(o.lora, lm.decoding_graph(1, 0, false), lm.arch());
    loss = lora_loss_graph(loss, frozen_base(model), adapter.config);
    params = adapter.weights;
  } else {
    params = lm.weights();
  }
  LossEvaluator evaluator(loss, o.batch, o.numerics, o.threads);
  RecordPass pass(loader);
  out.result = evaluator.run(params, pass, static_cast<std::int64_t>(loader->batches_per_epoch()));
  return out;
}

}  // namespace orion::train
