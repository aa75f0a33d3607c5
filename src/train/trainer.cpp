#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/stopwatch.h"
#include "train/train_data.h"

namespace orion::train {

namespace {

constexpr float kF16Max = 65504.0f;

// Clamps the weights to the fp16 range in place, where the ANE's numerics would otherwise turn
// them into inf; returns how many were clamped.
std::int64_t clamp_to_f16_range(TensorMap& params) {
  std::int64_t clamped = 0;
  for (auto& [name, t] : params)
    for (float& v : t.span<float>())
      if (std::fabs(v) > kF16Max) {  // NaN never gets here: AdamW runs only on finite gradients
        v = std::copysign(kF16Max, v);
        ++clamped;
      }
  return clamped;
}

std::vector<std::string> param_names(const ir::Graph& g) {
  std::vector<std::string> names;
  for (ir::ValueId id : g.nodes_of(ir::Op::param)) names.push_back(g.node(id).name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

LrSchedule TrainConfig::schedule() const {
  return LrSchedule{.peak = lr, .min_lr = lr * min_lr_fraction, .warmup = warmup, .total = steps};
}

nlohmann::json TrainConfig::identity() const {
  return {{"batch", batch},
          {"seq", seq},
          {"accum", accum},
          {"lr", lr},
          {"min_lr_fraction", min_lr_fraction},
          {"warmup", warmup},
          {"beta1", adamw.beta1},
          {"beta2", adamw.beta2},
          {"eps", adamw.eps},
          {"weight_decay", adamw.weight_decay},
          {"clip_norm", adamw.clip_norm},
          {"precision", std::string(exec::numerics_name(precision))},
          {"loss_scaling", scaling()},
          {"seed", seed}};
}

struct Trainer::Impl {
  TrainConfig config;
  LrSchedule schedule;
  TrainData data;
  LossGraphFn loss_fn;
  std::vector<std::string> names;  // params, in the gradient graph's output order
  TensorMap params;  // fp32 masters
  // The CPU's gradient and evaluation graphs take turns on one set of memory slots.
  std::shared_ptr<exec::SharedSlots> slots = std::make_shared<exec::SharedSlots>();
  std::unique_ptr<GradientRunner> grads;
  std::unique_ptr<LossEvaluator> eval;  // made on the first evaluation
  TensorMap feed;    // params (the same buffers), tokens, positions, targets, loss_weights, loss_scale
  AdamW optimizer;
  LossScaler scaler;
  std::int64_t steps = 0, skipped = 0, clamped = 0;
  std::shared_ptr<dist::Collective> collective;  // null: one process
  std::vector<float> flat;                       // the gradients in one vector, for the sum

  Impl(const LossGraphFn& fn, const TensorMap& initial, const TrainConfig& c, TrainData d,
       const GradientRunnerFactory& gradients)
      : config(checked(c)),
        schedule(c.schedule()),
        data(std::move(d)),
        loss_fn(fn),
        names(param_names(fn(c.batch, c.seq))),
        params(copy_params(initial, names)),
        grads(gradients ? gradients(fn, names, c) : cpu_gradient_runner(fn, names, c, slots)),
        optimizer(adamw_config(c), params),
        scaler(scaler_config(c)) {
    if (!data.train) throw Error("train: no training data");
    if (c.precision == exec::Numerics::f16) clamped += clamp_to_f16_range(params);
    feed = params;
    feed["loss_scale"] = Tensor(DType::f32, {});
  }

  static const TrainConfig& checked(const TrainConfig& c) {
    if (c.batch <= 0 || c.seq <= 0 || c.accum <= 0 || c.steps <= 0)
      throw Error("train: batch, seq, accum and steps must be positive");
    return c;
  }

  // The ranks' gradients and losses summed in rank order: every rank gets the same bits.
  void sum_over_ranks(TensorMap& step_grads, double& loss) {
    std::size_t n = 0;
    for (const std::string& name : names) n += static_cast<std::size_t>(step_grads.at(name).numel());
    flat.resize(n);
    std::size_t at = 0;
    for (const std::string& name : names) {
      const auto g = step_grads.at(name).span<const float>();
      std::copy(g.begin(), g.end(), flat.begin() + static_cast<std::ptrdiff_t>(at));
      at += g.size();
    }
    collective->sum(std::span<float>(flat));
    double l[1] = {loss};
    collective->sum(std::span<double>(l));
    loss = l[0];
    at = 0;
    for (const std::string& name : names) {
      const auto g = step_grads.at(name).span<float>();
      std::copy(flat.begin() + static_cast<std::ptrdiff_t>(at), flat.begin() + static_cast<std::ptrdiff_t>(at + g.size()), g.begin());
      at += g.size();
    }
  }

  LossEvaluator& evaluator() {
    if (!eval) eval = std::make_unique<LossEvaluator>(loss_fn, config.batch, config.precision, config.threads, slots);
    return *eval;
  }

  // A pass over a held-out split: `batches` of it, or all when batches <= 0 or more than it
  // holds (a stream has no end: at least one batch).
  EvalResult evaluate(const std::function<std::unique_ptr<BatchSource>()>& make, std::int64_t whole,
                      std::int64_t batches) {
    std::unique_ptr<BatchSource> pass = make();
    const std::int64_t n = whole > 0 ? (batches <= 0 || batches > whole ? whole : batches) : std::max<std::int64_t>(batches, 1);
    return evaluator().run(params, *pass, n);
  }

  static TensorMap copy_params(const TensorMap& initial, const std::vector<std::string>& wanted) {
    TensorMap out;
    for (const std::string& name : wanted) {
      auto it = initial.find(name);
      if (it == initial.end()) throw Error("train: the model has no weight '" + name + "' that its graph needs");
      out.emplace(name, it->second.to(DType::f32).contiguous().clone());
    }
    return out;
  }

  static AdamWConfig adamw_config(const TrainConfig& c) {
    AdamWConfig a = c.adamw;
    a.threads = c.threads;
    return a;
  }

  static LossScalerConfig scaler_config(const TrainConfig& c) {
    LossScalerConfig s;
    s.enabled = c.scaling();
    if (c.precision == exec::Numerics::f16) {
      // The scale is the seed of the backward pass, an fp16 value in the ANE's numerics: 2^15
      // is the largest power of two below 65504.
      s.initial = std::min(s.initial, 32768.0);
      s.max_scale = std::min(s.max_scale, 32768.0);
    }
    return s;
  }

};

Trainer::Trainer(const LossGraphFn& loss_graph, const TensorMap& params, const TrainConfig& config, TrainData data,
                 const GradientRunnerFactory& gradients)
    : impl_(std::make_unique<Impl>(loss_graph, params, config, std::move(data), gradients)) {}

Trainer::Trainer(const LossGraphFn& loss_graph, const TensorMap& params, const TrainConfig& config,
                 std::shared_ptr<const TokenFile> data, const GradientRunnerFactory& gradients)
    : Trainer(loss_graph, params, config, make_train_data(std::move(data), config), gradients) {}

Trainer::~Trainer() = default;

StepStats Trainer::step() {
  Impl& m = *impl_;
  Stopwatch watch;
  StepStats s;
  s.lr = m.schedule.at(m.steps);
  s.loss_scale = m.scaler.scale();  // 1 when scaling is off
  m.feed["loss_scale"].span<float>()[0] = static_cast<float>(s.loss_scale);
  // Before the batches are drawn: a device that restarts the process here checkpoints the
  // loader where this step starts.
  m.grads->prepare(m.params);
  // The step's batches first: their trained targets share the loss's weight.
  std::vector<Batch> batches;
  for (std::int64_t micro = 0; micro < m.config.accum; ++micro) {
    batches.push_back(m.data.train->next());
    s.trained_tokens += batches.back().trained;
    s.tokens += batches.back().rows * batches.back().seq;
  }
  if (s.trained_tokens == 0) throw Error("train: a step's batches hold no trained token");

  TensorMap grads;
  double loss_sum = 0;
  const int ranks = m.collective ? m.collective->size() : 1, rank = m.collective ? m.collective->rank() : 0;
  for (std::int64_t micro = rank; micro < m.config.accum; micro += ranks) {
    fill_batch_feed(m.feed, batches[static_cast<std::size_t>(micro)], 1.0f / static_cast<float>(s.trained_tokens));
    std::vector<Tensor> out = m.grads->run(m.feed);
    loss_sum += static_cast<double>(out[0].span<const float>()[0]);
    for (std::size_t i = 0; i < m.names.size(); ++i) {
      Tensor& g = out[1 + i];
      if (micro == rank)
        grads.insert_or_assign(m.names[i], std::move(g));
      else
        add_into(grads.at(m.names[i]), g);
    }
  }
  if (ranks > 1) {
    Stopwatch reduce;
    m.sum_over_ranks(grads, loss_sum);
    s.reduce_seconds = reduce.seconds();
    s.reduced_bytes = static_cast<std::int64_t>(m.flat.size() * sizeof(float) + sizeof(double));
  }
  s.loss = loss_sum;

  const bool finite = std::isfinite(s.loss) && all_finite(grads);
  const bool may_apply = m.scaler.update(finite);
  s.skipped = !(finite && may_apply);
  if (s.skipped) {
    ++m.skipped;
  } else {
    const AdamW::StepResult r =
        m.optimizer.step(m.params, grads, s.lr, s.loss_scale);
    s.grad_norm = r.grad_norm;
    if (m.config.precision == exec::Numerics::f16) m.clamped += clamp_to_f16_range(m.params);
    // The next step's weights are final: a device installs them while the caller logs,
    // evaluates and checkpoints this step.
    if (m.steps + 1 < m.config.steps) m.grads->prefetch(m.params);
  }
  s.step = ++m.steps;
  s.seconds = watch.seconds();
  return s;
}

void Trainer::distribute(std::shared_ptr<dist::Collective> c) {
  Impl& m = *impl_;
  if (c && m.config.accum % c->size() != 0)
    throw Error("--accum " + std::to_string(m.config.accum) + " is not a multiple of the job's " + std::to_string(c->size()) +
                " ranks: each rank runs accum / ranks of a step's micro-batches, so that a step's batch is the same "
                "at any number of ranks (give --accum " + std::to_string(c->size()) + " or a multiple)");
  m.collective = c && c->size() > 1 ? std::move(c) : nullptr;
}

double Trainer::evaluate(std::int64_t batches) {
  Impl& m = *impl_;
  if (!m.data.val) throw Error("train: the data has no validation split to evaluate");
  return m.evaluate(m.data.val, m.data.val_batches, batches).loss;
}

std::optional<EvalResult> Trainer::evaluate_test() {
  Impl& m = *impl_;
  if (!m.data.test) return std::nullopt;
  return m.evaluate(m.data.test, m.data.test_batches, 0);
}

bool Trainer::has_validation() const { return static_cast<bool>(impl_->data.val); }

std::int64_t Trainer::steps_done() const { return impl_->steps; }
const TrainConfig& Trainer::config() const { return impl_->config; }
const TensorMap& Trainer::params() const { return impl_->params; }
std::int64_t Trainer::skipped_steps() const { return impl_->skipped; }
std::int64_t Trainer::clamped_values() const { return impl_->clamped; }
double Trainer::matmul_flops_per_micro_batch() const { return impl_->grads->matmul_flops(); }
const runtime::DeviceGraphStats* Trainer::device_stats() const { return impl_->grads->device_stats(); }
TensorMap Trainer::optimizer_state() const { return impl_->optimizer.state(); }

nlohmann::json Trainer::state() const {
  const Impl& m = *impl_;
  return {{"steps", m.steps},
          {"skipped_steps", m.skipped},
          {"clamped_values", m.clamped},
          {"optimizer_steps", m.optimizer.steps()},
          {"loss_scaler", m.scaler.to_json()},
          {"loader", to_json(m.data.train->state())},
          {"options", m.config.identity()}};
}

void Trainer::restore(const TensorMap& params, const TensorMap& optimizer, const nlohmann::json& state,
                      const std::string& source) {
  Impl& m = *impl_;
  try {
    const nlohmann::json want = m.config.identity();
    const nlohmann::json& have = state.at("options");
    for (auto it = want.begin(); it != want.end(); ++it)
      if (!have.contains(it.key()) || have.at(it.key()) != it.value())
        throw Error::in_file(source, "the checkpoint was made with " + it.key() + " = " +
                                         (have.contains(it.key()) ? have.at(it.key()).dump() : "(none)") +
                                         ", this run asks for " + it.value().dump());
    for (const std::string& name : m.names) {
      auto it = params.find(name);
      if (it == params.end()) throw Error::in_file(source, "has no weight '" + name + "'");
      Tensor& dst = m.params.at(name);
      if (it->second.shape() != dst.shape()) throw Error::in_file(source, "weight '" + name + "' has another shape");
      const Tensor src = it->second.to(DType::f32).contiguous();
      std::copy(src.span<const float>().begin(), src.span<const float>().end(), dst.span<float>().begin());
    }
    m.optimizer.restore(optimizer, state.at("optimizer_steps").get<std::int64_t>());
    m.scaler.from_json(state.at("loss_scaler"));
    m.data.train->restore(loader_state_from_json(state.at("loader"), source));
    m.steps = state.at("steps").get<std::int64_t>();
    m.skipped = state.at("skipped_steps").get<std::int64_t>();
    m.clamped = state.at("clamped_values").get<std::int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error::in_file(source, std::string("trainer state: ") + e.what());
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with(source)) throw;
    throw Error::in_file(source, e.what());
  }
}

}  // namespace orion::train
