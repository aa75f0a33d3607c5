#include "engine/pipeline.h"

#include <atomic>
#include <map>
#include <mutex>

#include "core/error.h"
#include "core/stopwatch.h"

namespace orion::engine {

namespace {

// What rank r sends rank r + 1 before a session's rows (run) or instead of them.
enum class Op : std::int32_t { run = 1, reset = 2, close = 3, quit = 4 };
struct Message {
  Op op = Op::run;
  std::int32_t session = 0;
  std::int64_t rows = 0;  // run: the rows of the residual stream that follow
};

std::span<const std::byte> bytes_of(const Message& m) { return std::as_bytes(std::span(&m, 1)); }
std::span<std::byte> bytes_of(Message& m) { return std::as_writable_bytes(std::span(&m, 1)); }
std::span<const std::byte> bytes_of(std::span<const float> v) { return std::as_bytes(v); }
std::span<std::byte> bytes_of(std::span<float> v) { return std::as_writable_bytes(v); }

void check_options(const DecoderOptions& o) {
  if (o.device != runtime::DeviceKind::cpu) throw Error("--pipeline runs the fast CPU engine on every rank: leave out --device");
  if (o.graph || o.numerics != exec::Numerics::f32)
    throw Error("--pipeline runs the fast CPU engine on every rank: leave out --engine graph and --numerics f16");
  if (!o.lora.empty()) throw Error("--pipeline does not apply a LoRA adapter yet: merge it first (orion merge-lora)");
}

// This rank's layers, packed in `dtype`.
std::shared_ptr<const LlamaFastModel> stage_model(const model::ModelFolder& md, const DecoderOptions& o,
                                                  model::WeightDType dtype, const dist::Collective& job) {
  check_options(o);
  const auto* llama = std::get_if<model::LlamaModel>(&md.model);
  if (!llama) throw Error::in_file(md.dir, "--pipeline splits Llama-family models; this is a GPT-2 one");
  const LayerRange range = pipeline_stage_range(llama->config().num_hidden_layers, job.size(), job.rank());
  return std::make_shared<const LlamaFastModel>(*llama, dtype, range);
}

// Rank 0's end of the pipeline, which its sessions share: the job, its stage and the session
// numbers. One session talks to the next stage at a time.
class PipelineLink {
 public:
  PipelineLink(std::shared_ptr<dist::Collective> job, std::shared_ptr<const LlamaFastModel> model, int threads)
      : job_(std::move(job)), model_(std::move(model)), threads_(threads) {}
  ~PipelineLink() {
    try {
      tell({Op::quit, 0, 0});
    } catch (const std::exception&) {
      // The job is ending with an error already (abort_job_if_ranked ends the other ranks).
    }
  }
  PipelineLink(const PipelineLink&) = delete;
  PipelineLink& operator=(const PipelineLink&) = delete;

  std::unique_lock<std::mutex> lock() { return std::unique_lock(mutex_); }
  std::int32_t new_id() { return next_id_++; }
  const LlamaFastModel& model() const { return *model_; }
  std::shared_ptr<const LlamaFastModel> model_ptr() const { return model_; }
  int threads() const { return threads_; }
  bool alone() const { return job_->size() == 1; }

  // A message for the next stage (called with the lock held); nothing when there is none.
  void tell(const Message& m, std::span<const float> rows = {}) {
    if (alone()) return;
    job_->send(bytes_of(m), 1);
    if (m.op == Op::run) job_->send(bytes_of(rows), 1);
  }
  // The last stage's logits.
  void receive_logits(std::span<float> logits) { job_->receive(bytes_of(logits), job_->size() - 1); }

 private:
  std::shared_ptr<dist::Collective> job_;
  std::shared_ptr<const LlamaFastModel> model_;
  int threads_;
  std::mutex mutex_;
  std::atomic<std::int32_t> next_id_ = 0;
};

class PipelineSession final : public Decoder {
 public:
  explicit PipelineSession(std::shared_ptr<PipelineLink> link)
      : link_(std::move(link)), id_(link_->new_id()), stage_(link_->model_ptr(), link_->threads()) {}
  ~PipelineSession() override {
    try {
      const auto held = link_->lock();
      link_->tell({Op::close, id_, 0});
    } catch (const std::exception&) {
      // As ~PipelineLink.
    }
  }

  std::vector<float> prefill(std::span<const std::int32_t> tokens) override {
    const model::LlamaConfig& c = link_->model().config();
    check_decoder_tokens(tokens, position(), context(), c.vocab_size, c.model_type.c_str());
    const auto T = static_cast<std::int64_t>(tokens.size());
    rows_.resize(static_cast<std::size_t>(T * c.hidden_size));
    const auto held = link_->lock();
    stage_.embed_rows(tokens, rows_.data());
    stage_.stage_layers(rows_.data(), T);
    if (link_->alone()) return stage_.stage_logits(rows_.data() + (T - 1) * c.hidden_size);
    link_->tell({Op::run, id_, T}, rows_);
    std::vector<float> logits(static_cast<std::size_t>(c.vocab_size));
    link_->receive_logits(logits);
    return logits;
  }
  std::int64_t position() const override { return stage_.position(); }
  std::int64_t context() const override { return stage_.context(); }
  void reset() override {
    const auto held = link_->lock();
    stage_.reset();
    link_->tell({Op::reset, id_, 0});
  }

 private:
  std::shared_ptr<PipelineLink> link_;
  std::int32_t id_;
  LlamaFastSession stage_;
  std::vector<float> rows_;
};

}  // namespace

LayerRange pipeline_stage_range(std::int64_t layers, int stages, int stage) {
  if (stages < 1 || stage < 0 || stage >= stages) throw Error("pipeline stage " + std::to_string(stage) + " of " + std::to_string(stages));
  if (stages > layers)
    throw Error("--pipeline: " + std::to_string(stages) + " ranks for a model of " + std::to_string(layers) +
                " layers; each rank needs one at least");
  const std::int64_t base = layers / stages, longer = layers % stages;
  const std::int64_t first = stage * base + std::min<std::int64_t>(stage, longer);
  return {first, first + base + (stage < longer ? 1 : 0)};
}

model::ParamFilter pipeline_stage_params(const model::LlamaConfig& config, LayerRange range) {
  const bool first = range.first == 0, last = range.last == config.num_hidden_layers;
  const bool tied = config.tie_word_embeddings;
  return [=](std::string_view name) {
    constexpr std::string_view layer_prefix = "model.layers.";
    if (name.starts_with(layer_prefix)) {
      name.remove_prefix(layer_prefix.size());
      const std::int64_t l = std::stoll(std::string(name.substr(0, name.find('.'))));
      return l >= range.first && l < range.last;
    }
    if (name == "model.embed_tokens.weight") return first || (last && tied);
    return last;  // the final norm and lm_head
  };
}

model::ModelFolder load_pipeline_stage(const std::string& dir, const dist::Collective& job) {
  const model::LlamaConfig config = model::read_any_llama_config(dir);
  const LayerRange range = pipeline_stage_range(config.num_hidden_layers, job.size(), job.rank());
  return model::ModelFolder::load(dir, 0, pipeline_stage_params(config, range));
}

std::function<std::unique_ptr<Decoder>()> pipeline_sessions(std::shared_ptr<const LlamaFastModel> stage, int threads,
                                                             std::shared_ptr<dist::Collective> job) {
  if (job->rank() != 0) throw Error("pipeline sessions start on rank 0; the other ranks run their stage");
  if (!stage->embeds()) throw Error("pipeline: rank 0's stage must start at the first layer");
  auto link = std::make_shared<PipelineLink>(std::move(job), std::move(stage), threads);
  return [link]() -> std::unique_ptr<Decoder> { return std::make_unique<PipelineSession>(link); };
}

ChosenDecoder make_pipeline_decoder(const model::ModelFolder& md, const DecoderOptions& o,
                                    std::shared_ptr<dist::Collective> job) {
  ChosenDecoder c;
  const FastWeights weights = fast_weights(md, o.weights);
  Stopwatch sw;
  const std::shared_ptr<const LlamaFastModel> stage = stage_model(md, o, weights.dtype, *job);
  c.pack_ms = sw.ms();
  c.kind = EngineKind::fast;
  c.weights = weights.name;
  c.packed_bytes = stage->packed_bytes();
  c.new_session = pipeline_sessions(stage, o.threads, std::move(job));
  c.decoder = c.new_session();
  return c;
}

void run_pipeline_stage(const model::ModelFolder& md, const DecoderOptions& o, dist::Collective& job) {
  run_stage(stage_model(md, o, fast_weights(md, o.weights).dtype, job), o.threads, job);
}

void run_stage(std::shared_ptr<const LlamaFastModel> model, int threads, dist::Collective& job) {
  if (job.rank() == 0) throw Error("pipeline: rank 0 runs the sessions (pipeline_sessions), not a stage");
  const int rank = job.rank(), previous = rank - 1;
  const bool last = rank + 1 == job.size();
  if (last != model->has_head()) throw Error("pipeline: the last rank's stage must end with the head, and only it");
  const std::int64_t C = model->config().hidden_size;
  std::map<std::int32_t, std::unique_ptr<LlamaFastSession>> sessions;
  std::vector<float> rows;
  for (;;) {
    Message m;
    job.receive(bytes_of(m), previous, dist::Collective::Wait::idle);
    if (m.op == Op::run) {
      if (m.rows < 1 || m.rows > model->config().context())
        throw Error("pipeline stage " + std::to_string(rank) + ": rank " + std::to_string(previous) + " sent " +
                    std::to_string(m.rows) + " rows");
      rows.resize(static_cast<std::size_t>(m.rows * C));
      job.receive(bytes_of(std::span(rows)), previous);
      std::unique_ptr<LlamaFastSession>& s = sessions[m.session];
      if (!s) s = std::make_unique<LlamaFastSession>(model, threads);
      s->stage_layers(rows.data(), m.rows);
      if (last) {
        job.send(bytes_of(std::span<const float>(s->stage_logits(rows.data() + (m.rows - 1) * C))), 0);
        continue;
      }
    } else if (m.op == Op::reset) {
      if (auto it = sessions.find(m.session); it != sessions.end()) it->second->reset();
    } else if (m.op == Op::close) {
      sessions.erase(m.session);
    } else if (m.op != Op::quit) {
      throw Error("pipeline stage " + std::to_string(rank) + ": rank " + std::to_string(previous) + " sent an unknown message (" +
                  std::to_string(static_cast<int>(m.op)) + ")");
    }
    if (!last) {
      job.send(bytes_of(m), rank + 1);
      if (m.op == Op::run) job.send(bytes_of(std::span<const float>(rows)), rank + 1);
    }
    if (m.op == Op::quit) return;
  }
}

}  // namespace orion::engine
