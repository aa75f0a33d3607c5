#include "train/device_gradients.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <utility>

#include "core/error.h"
#include "train/trainer.h"

namespace orion::train {

namespace {

class DeviceGradients final : public GradientRunner {
 public:
  DeviceGradients(const LossGraphFn& loss, std::span<const std::string> wrt, const TrainConfig& c,
                  device::AneDevice& device, runtime::CompileBudget& budget, runtime::ReloadSupport& reload,
                  const DeviceGradientsOptions& o)
      : inputs_(o.weights == runtime::DeviceGraphWeights::inputs),
        batch_(checked_seq(c).batch),
        seq_(c.seq),
        make_graph_([=, &device, &budget, &reload, wrt = std::vector<std::string>(wrt.begin(), wrt.end())](
                        runtime::DeviceGraphWeights w) {
          DeviceGradientsOptions with = o;
          with.weights = w;
          return device_graph(loss, wrt, c, device, budget, reload, with);
        }),
        graph_(make_graph_(o.weights)),
        flops_(train::matmul_flops(graph_->graph()) * static_cast<double>(c.batch)) {
    // Each sequence's window inputs, refilled at every micro-batch.
    windows_.resize(static_cast<std::size_t>(batch_));
    for (TensorMap& one : windows_) {
      for (const char* name : {"tokens", "targets", "positions"}) one[name] = Tensor(DType::i32, {seq_});
      auto pos = one.at("positions").span<std::int32_t>();
      for (std::int64_t i = 0; i < seq_; ++i) pos[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
    }
    // The probe (one compile, baked weights only) and one compile per kernel must fit in one
    // process, or no restart could ever make progress.
    if (graph_->stats().kernels + (o.weights == runtime::DeviceGraphWeights::baked) > budget.limit())
      throw Error("train: the gradient graph compiles to " + std::to_string(graph_->stats().kernels) +
                  " kernels, more than a process's compile budget of " + std::to_string(budget.limit()) +
                  " allows with the reload probe (ANE030)");
  }

  // Kernels pad the sequence to a multiple of 32 (ANE011); the lowering proves padding safe
  // for a forward pass (padded keys masked), not for a backward one, whose sums over tokens
  // (probabilities^T gradients) would have to be shown to see zeros there.
  static const TrainConfig& checked_seq(const TrainConfig& c) {
    if (c.seq % 32 != 0)
      throw Error("train: --seq " + std::to_string(c.seq) +
                  " on an ANE device must be a multiple of 32, the kernels' sequence bucket (ANE011): "
                  "padded tokens are not proven to stay out of the backward pass's sums over tokens");
    return c;
  }

  void prefetch(const TensorMap& params) override { prefetched_ = graph_->set_weights(params, false); }

  void prepare(const TensorMap& params) override {
    params_ = &params;
    if (!std::exchange(prefetched_, false)) first_weights([&] { graph_->set_weights(params); });
  }

  std::vector<Tensor> run(const TensorMap& feed) override {
    // Each sequence's window, run up to two at once (DeviceGraph::run_many), summed in order.
    for (std::int64_t b = 0; b < batch_; ++b) {
      TensorMap& one = windows_[static_cast<std::size_t>(b)];
      one["loss_scale"] = feed.at("loss_scale");
      for (const char* name : {"tokens", "targets"}) {
        const auto from = feed.at(name).span<const std::int32_t>().subspan(static_cast<std::size_t>(b * seq_),
                                                                            static_cast<std::size_t>(seq_));
        std::copy(from.begin(), from.end(), one.at(name).span<std::int32_t>().begin());
      }
    }
    std::vector<std::vector<Tensor>> outs;  // f32: host segments and unpacked kernel outputs
    first_weights([&] { outs = graph_->run_many(windows_); }, true);
    std::vector<Tensor> sum = std::move(outs[0]);
    for (std::size_t b = 1; b < outs.size(); ++b)
      for (std::size_t i = 0; i < sum.size(); ++i) add_into(sum[i], outs[b][i]);
    // The batch's loss is the mean over its tokens: the mean of the sequences' means.
    const float scale = 1.0f / static_cast<float>(batch_);
    for (Tensor& t : sum)
      for (float& v : t.span<float>()) v *= scale;
    return sum;
  }

  double matmul_flops() const override { return flops_; }
  const runtime::DeviceGraphStats* device_stats() const override { return &graph_->stats(); }

 private:
  static std::unique_ptr<runtime::DeviceGraph> device_graph(const LossGraphFn& loss, std::span<const std::string> wrt,
                                                            const TrainConfig& c, device::AneDevice& device,
                                                            runtime::CompileBudget& budget, runtime::ReloadSupport& reload,
                                                            const DeviceGradientsOptions& o) {
    runtime::DeviceGraphOptions dg;
    dg.target = o.target;
    dg.seq = c.seq;
    dg.threads = c.threads;
    dg.work_folder = o.work_folder;
    dg.supervisor = o.supervisor;
    dg.lanes = o.lanes;
    dg.weights = o.weights;
    return std::make_unique<runtime::DeviceGraph>(
        loss_gradient_graph(loss, 1, c.seq, wrt), device, budget, reload, dg);
  }

  // Until a first run has gone through, a failure to lower or compile a kernel (at set_weights,
  // or at the run that waits for it) is the model's graph not fitting the device. With the
  // weights as inputs, the kernels are made again with the weights baked (each kernel the
  // same computation, reloaded each step); baked kernels that fail are the error.
  // `reruns`: f is a run, which the new kernels need the weights for first (prepare's f sets them).
  // A std::function, not a template: the fallback calls it again with a lambda of its own.
  void first_weights(const std::function<void()>& f, bool reruns = false) {
    if (graph_->stats().runs > 0) return f();
    try {
      f();
    } catch (const Error& e) {
      if (!inputs_ || !params_)
        throw Error(std::string("train: the model's gradient graph does not compile to ANE kernels: ") + e.what());
      std::fprintf(stderr,
                   "train: warning: the device refused the kernels with the weights as inputs (%s); falling back to "
                   "baked weights, reloaded or recompiled each step\n",
                   e.what());
      inputs_ = false;
      graph_ = make_graph_(runtime::DeviceGraphWeights::baked);
      if (reruns) first_weights([&] { graph_->set_weights(*params_); }, false);
      first_weights(f, reruns);
    }
  }

  bool inputs_;
  std::int64_t batch_, seq_;
  std::function<std::unique_ptr<runtime::DeviceGraph>(runtime::DeviceGraphWeights)> make_graph_;
  std::unique_ptr<runtime::DeviceGraph> graph_;
  const TensorMap* params_ = nullptr;  // the step's weights (prepare), for a fallback's kernels
  double flops_;
  std::vector<TensorMap> windows_;  // tokens, targets, positions and loss_scale of each sequence
  bool prefetched_ = false;  // the weights of the coming step are installing already
};

}  // namespace

std::unique_ptr<GradientRunner> device_gradient_runner(const LossGraphFn& loss, std::span<const std::string> wrt,
                                                       const TrainConfig& config, device::AneDevice& device,
                                                       runtime::CompileBudget& budget, runtime::ReloadSupport& reload,
                                                       const DeviceGradientsOptions& options) {
  return std::make_unique<DeviceGradients>(loss, wrt, config, device, budget, reload, options);
}

}  // namespace orion::train
