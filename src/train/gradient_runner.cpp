#include "train/gradient_runner.h"


#include <map>

#include "device/ane_cost_model.h"
#include "ir/transforms/rematerialize.h"
#include "train/autodiff.h"
#include "train/trainer.h"

namespace orion::train {

namespace {

// One gradient graph per sequence length the batches come in (a record file's buckets), all
// made at the start, so that no step pays for building one and the memory they take shows at
// once.
class CpuGradients final : public GradientRunner {
 public:
  // The buckets' graphs run one at a time: they share one set of slots.
  CpuGradients(const LossGraphFn& loss, std::span<const std::string> wrt, const TrainConfig& c,
               std::shared_ptr<exec::SharedSlots> slots)
      : loss_(loss),
        wrt_(wrt.begin(), wrt.end()),
        batch_(c.batch),
        options_{.numerics = c.precision, .threads = c.threads, .shared_slots = std::move(slots)} {
    flops_ = device::product_flops(executor(c.seq).graph());
    for (std::int64_t seq : c.buckets) executor(seq);
  }

  void prepare(const TensorMap&) override {}  // the params are bound on every run
  std::vector<Tensor> run(const TensorMap& feed) override {
    return executor(feed.at("tokens").numel() / batch_).run(feed);
  }
  double matmul_flops() const override { return flops_; }

 private:
  exec::CpuExecutor& executor(std::int64_t seq) {
    auto& e = by_seq_[seq];
    if (!e) e = std::make_unique<exec::CpuExecutor>(loss_gradient_graph(loss_, batch_, seq, wrt_), options_);
    return *e;
  }

  LossGraphFn loss_;
  std::vector<std::string> wrt_;
  std::int64_t batch_;
  exec::CpuOptions options_;
  std::map<std::int64_t, std::unique_ptr<exec::CpuExecutor>> by_seq_;
  double flops_ = 0;  // at the longest sequence
};

}  // namespace

ir::Graph loss_gradient_graph(const LossGraphFn& loss, std::int64_t batch, std::int64_t seq,
                              std::span<const std::string> wrt) {
  // A quantized base's widened weights are made again where the backward pass reads them.
  return ir::rematerialize(gradient_graph(loss(batch, seq), "loss", wrt,
                                          GradientOptions{.seed_input = "loss_scale", .name_gradients_of = "layer_out."}));
}

void add_into(Tensor& sum, const Tensor& term) {
  auto s = sum.span<float>();
  auto t = term.span<const float>();
  for (std::size_t i = 0; i < s.size(); ++i) s[i] += t[i];
}

std::unique_ptr<GradientRunner> cpu_gradient_runner(const LossGraphFn& loss, std::span<const std::string> wrt,
                                                    const TrainConfig& config, std::shared_ptr<exec::SharedSlots> slots) {
  return std::make_unique<CpuGradients>(loss, wrt, config, slots ? std::move(slots) : std::make_shared<exec::SharedSlots>());
}

}  // namespace orion::train
