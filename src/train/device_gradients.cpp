#include "train/device_gradients.h"


#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <utility>

#include "core/error.h"
#include "device/ane_cost_model.h"
#include "train/trainer.h"

namespace orion::train {

namespace {

class DeviceGradients final : public GradientRunner {
 public:
  DeviceGradients(const LossGraphFn& loss, std::span<const std::string> wrt, const TrainConfig& c,
                  device::AneDevice& device, runtime::CompileBudget& budget, runtime::ReloadSupport& reload,
                  const DeviceGradientsOptions& o)
      : inputs_(o.weights == runtime::DeviceGraphWeights::inputs),
        batch_(c.batch),
        buckets_(checked_buckets(c)),
        make_graph_([=, &device, &budget, &reload, wrt = std::vector<std::string>(wrt.begin(), wrt.end())](
                        runtime::DeviceGraphWeights w, std::int64_t seq) {
          DeviceGradientsOptions with = o;
          with.weights = w;
          return device_graph(loss, wrt, c, seq, device, budget, reload, with);
        }) {
    make_graphs(o.weights);
    flops_ = device::product_flops(graphs_.at(c.seq).graph->graph()) * static_cast<double>(c.batch);
    // The probe (one compile, baked weights only) and one compile per program must fit in one
    // process, or no restart could ever make progress.
    int kernels = 0;
    for (const auto& [seq, g] : graphs_) kernels += g.graph->stats().programs;
    if (kernels + (o.weights == runtime::DeviceGraphWeights::baked) > budget.limit())
      throw Error("train: the gradient graph compiles to " + std::to_string(kernels) + " programs" +
                  (buckets_.size() > 1 ? " over " + std::to_string(buckets_.size()) + " sequence buckets" : std::string()) +
                  ", more than a process's compile budget of " + std::to_string(budget.limit()) +
                  " allows with the reload probe (ANE030)" + (buckets_.size() > 1 ? "; give fewer --buckets" : ""));
  }

  // Kernels pad the sequence to a multiple of 32 (ANE011); the lowering proves padding safe
  // for a forward pass (padded keys masked), not for a backward one, whose sums over tokens
  // (probabilities^T gradients) would have to be shown to see zeros there. Record data pads
  // its own batches to the buckets, at the end of each row, where causal attention keeps them
  // out of every real token's sums and their weight of 0 gives them no gradient.
  static std::vector<std::int64_t> checked_buckets(const TrainConfig& c) {
    std::vector<std::int64_t> b = c.buckets.empty() ? std::vector<std::int64_t>{c.seq} : c.buckets;
    for (std::int64_t s : b)
      if (s % 32 != 0)
        throw Error("train: sequence length " + std::to_string(s) +
                    " on an ANE device must be a multiple of 32, the kernels' sequence bucket (ANE011): "
                    "padded tokens are not proven to stay out of the backward pass's sums over tokens");
    return b;
  }

  void prefetch(const TensorMap& params) override {
    prefetched_ = true;
    for (auto& [seq, g] : graphs_) prefetched_ = g.graph->set_weights(params, false) && prefetched_;
  }

  void prepare(const TensorMap& params) override {
    params_ = &params;
    if (!std::exchange(prefetched_, false))
      first_weights([&] {
        for (auto& [seq, g] : graphs_) g.graph->set_weights(params);
      });
  }

  std::vector<Tensor> run(const TensorMap& feed) override {
    const std::int64_t seq = feed.at("tokens").numel() / batch_;
    auto it = graphs_.find(seq);
    if (it == graphs_.end()) throw Error("train: a batch of sequence " + std::to_string(seq) + " has no compiled bucket");
    // Each sequence's window, run up to two at once (DeviceGraph::run_many), summed in order.
    std::vector<TensorMap>& windows = windows_.at(seq);
    for (std::int64_t b = 0; b < batch_; ++b) {
      TensorMap& one = windows[static_cast<std::size_t>(b)];
      one["loss_scale"] = feed.at("loss_scale");
      const auto at = static_cast<std::size_t>(b * seq), n = static_cast<std::size_t>(seq);
      for (const char* name : {"tokens", "targets"}) {
        const auto from = feed.at(name).span<const std::int32_t>().subspan(at, n);
        std::copy(from.begin(), from.end(), one.at(name).span<std::int32_t>().begin());
      }
      const auto w = feed.at("loss_weights").span<const float>().subspan(at, n);
      std::copy(w.begin(), w.end(), one.at("loss_weights").span<float>().begin());
    }
    std::vector<std::vector<Tensor>> outs;  // f32: host segments and unpacked kernel outputs
    first_weights([&] { outs = graphs_.at(seq).graph->run_many(windows); }, true);
    // The loss weights already make the sum over the sequences the batch's mean.
    std::vector<Tensor> sum = std::move(outs[0]);
    for (std::size_t b = 1; b < outs.size(); ++b)
      for (std::size_t i = 0; i < sum.size(); ++i) add_into(sum[i], outs[b][i]);
    return sum;
  }

  double matmul_flops() const override { return flops_; }
  const runtime::DeviceGraphStats* device_stats() const override {
    if (graphs_.size() == 1) return &graphs_.begin()->second.graph->stats();
    // Several buckets: their counts and times added.
    stats_ = {};
    for (const auto& [seq, g] : graphs_) {
      const runtime::DeviceGraphStats& s = g.graph->stats();
      stats_.weights_inputs = s.weights_inputs;
      stats_.kernels += s.kernels;
      stats_.host_segments += s.host_segments;
      stats_.versions = std::max(stats_.versions, s.versions);
      stats_.compiles += s.compiles;
      stats_.reloads += s.reloads;
      stats_.runs += s.runs;
      stats_.weight_bytes += s.weight_bytes;
      stats_.weight_ms += s.weight_ms;
      stats_.lower_ms += s.lower_ms;
      stats_.install_ms += s.install_ms;
      stats_.wait_ms += s.wait_ms;
      stats_.host_beside_device += s.host_beside_device;
      stats_.device_ms += s.device_ms;
      stats_.pack_ms += s.pack_ms;
      stats_.host_ms += s.host_ms;
      stats_.evaluations += s.evaluations;
      stats_.surface_bytes += s.surface_bytes;
    }
    return &stats_;
  }

 private:
  struct Graph {
    std::unique_ptr<runtime::DeviceGraph> graph;
  };

  static std::unique_ptr<runtime::DeviceGraph> device_graph(const LossGraphFn& loss, std::span<const std::string> wrt,
                                                            const TrainConfig& c, std::int64_t seq,
                                                            device::AneDevice& device, runtime::CompileBudget& budget,
                                                            runtime::ReloadSupport& reload, const DeviceGradientsOptions& o) {
    runtime::DeviceGraphOptions dg;
    dg.target = o.target;
    dg.seq = seq;
    dg.threads = c.threads;
    dg.work_folder = o.work_folder.empty() ? "" : o.work_folder + (seq == c.seq ? "" : "/seq-" + std::to_string(seq));
    dg.supervisor = o.supervisor;
    dg.lanes = o.lanes;
    dg.weights = o.weights;
    ir::Graph g = loss_gradient_graph(loss, 1, seq, wrt);
    // Each layer's end, forward and backward: kernels cut there are alike and share programs.
    for (const ir::Node& n : g.nodes())
      if (n.name.starts_with("layer_out.") || n.name.starts_with("grad.at.layer_out.")) dg.cut_after.insert(n.name);
    return std::make_unique<runtime::DeviceGraph>(g, device, budget, reload, dg);
  }

  void make_graphs(runtime::DeviceGraphWeights w) {
    if (w == runtime::DeviceGraphWeights::baked && buckets_.size() > 1)
      throw Error("train: baked weights would reinstall the kernels of " + std::to_string(buckets_.size()) +
                  " sequence buckets every step; give one bucket (--buckets " + std::to_string(buckets_.back()) + ")");
    graphs_.clear();
    for (std::int64_t seq : buckets_) {
      graphs_.emplace(seq, Graph{make_graph_(w, seq)});
      if (windows_.contains(seq)) continue;
      // Each sequence's window inputs, refilled at every micro-batch (kept across a fallback).
      std::vector<TensorMap>& windows = windows_[seq];
      windows.resize(static_cast<std::size_t>(batch_));
      for (TensorMap& one : windows) {
        for (const char* name : {"tokens", "targets", "positions"}) one[name] = Tensor(DType::i32, {seq});
        one["loss_weights"] = Tensor(DType::f32, {seq});
        auto pos = one.at("positions").span<std::int32_t>();
        for (std::int64_t i = 0; i < seq; ++i) pos[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
      }
    }
  }

  int runs() const {
    int n = 0;
    for (const auto& [seq, g] : graphs_) n += g.graph->stats().runs;
    return n;
  }

  // Until a first run has gone through, a failure to lower or compile a kernel (at set_weights,
  // or at the run that waits for it) is the model's graph not fitting the device. With the
  // weights as inputs, the kernels are made again with the weights baked (each kernel the
  // same computation, reloaded each step); baked kernels that fail are the error.
  // `reruns`: f is a run, which the new kernels need the weights for first (prepare's f sets them).
  // A std::function, not a template: the fallback calls it again with a lambda of its own.
  void first_weights(const std::function<void()>& f, bool reruns = false) {
    if (runs() > 0) return f();
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
      make_graphs(runtime::DeviceGraphWeights::baked);
      if (reruns)
        first_weights([&] {
          for (auto& [seq, g] : graphs_) g.graph->set_weights(*params_);
        });
      first_weights(f, reruns);
    }
  }

  bool inputs_;
  std::int64_t batch_;
  std::vector<std::int64_t> buckets_;
  std::function<std::unique_ptr<runtime::DeviceGraph>(runtime::DeviceGraphWeights, std::int64_t)> make_graph_;
  std::map<std::int64_t, Graph> graphs_;
  std::map<std::int64_t, std::vector<TensorMap>> windows_;  // tokens, targets, positions, loss_weights, loss_scale
  const TensorMap* params_ = nullptr;  // the step's weights (prepare), for a fallback's kernels
  double flops_ = 0;
  bool prefetched_ = false;  // the weights of the coming step are installing already
  mutable runtime::DeviceGraphStats stats_;
};

}  // namespace

std::unique_ptr<GradientRunner> device_gradient_runner(const LossGraphFn& loss, std::span<const std::string> wrt,
                                                       const TrainConfig& config, device::AneDevice& device,
                                                       runtime::CompileBudget& budget, runtime::ReloadSupport& reload,
                                                       const DeviceGradientsOptions& options) {
  return std::make_unique<DeviceGradients>(loss, wrt, config, device, budget, reload, options);
}

}  // namespace orion::train
