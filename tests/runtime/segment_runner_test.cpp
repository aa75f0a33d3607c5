// The segment runner (runtime/segment_runner.h) with a source of its own: a host step and a
// kernel over one table, weights and graphs asked of the source, each lane's executors made
// once, and the source's errors passed on.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "compile/driver.h"
#include "core/error.h"
#include "core/temp_folder.h"
#include "device/ane_sim.h"
#include "ir/builder.h"
#include "runtime/segment_runner.h"

namespace orion::runtime {
namespace {

constexpr std::int64_t kRunnerSeq = 32, kRunnerDim = 64;

// h0 (host): y = x + b.  k0 (kernel): z = y @ (2 I). Exact in fp16 for small integers.
ir::Graph runner_host_graph() {
  ir::Builder b("h0");
  const auto x = b.input("x", DType::f32, {kRunnerSeq, kRunnerDim});
  b.output(b.name(b.add(x, b.param("b", DType::f32, {kRunnerSeq, kRunnerDim})), "y"));
  return b.finish();
}

class TwoSteps final : public SegmentSource {
 public:
  TwoSteps(device::AneDevice& device, const std::string& folder) : device_(device) {
    ir::Builder b("k0");
    const auto y = b.input("y", DType::f32, {kRunnerSeq, kRunnerDim});
    b.output(b.name(b.matmul(y, b.param("w", DType::f32, {kRunnerDim, kRunnerDim})), "z"));
    std::vector<float> w(kRunnerDim * kRunnerDim, 0.0f);
    for (std::int64_t i = 0; i < kRunnerDim; ++i) w[static_cast<std::size_t>(i * kRunnerDim + i)] = 2.0f;
    compile::KernelOptions o;
    o.lowering.kernel_name = "k0";
    io_ = compile::build_kernel(b.finish(), {{"w", Tensor::from_floats({kRunnerDim, kRunnerDim}, w)}}, folder, o).lowered.io;
    id_ = device_.compile(folder);
    device_.load(id_);
    surfaces_.emplace_back(device_, io_);
    surfaces_.emplace_back(device_, io_);
    std::vector<float> bias(kRunnerSeq * kRunnerDim);
    for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i % 5);
    params_.emplace("b", Tensor::from_floats({kRunnerSeq, kRunnerDim}, bias));
  }
  ~TwoSteps() override { device_.unload(id_); }

  ReadyKernel kernel(std::size_t step, int lane) override {
    EXPECT_EQ(step, 1u);
    return {id_, &io_, &surfaces_[static_cast<std::size_t>(lane)]};
  }
  ir::Graph host_graph(std::size_t step) override {
    EXPECT_EQ(step, 0u);
    ++graphs_asked;
    return runner_host_graph();
  }
  const Tensor& host_param(std::size_t, const std::string& param) override {
    auto it = params_.find(param);
    if (it == params_.end()) throw Error("no weight " + param);
    return it->second;
  }

  int graphs_asked = 0;
  TensorMap params_;

 private:
  device::AneDevice& device_;
  compile::KernelIo io_;
  device::AneProgramId id_ = -1;
  std::vector<KernelSurfaces> surfaces_;
};

std::vector<SegmentStep> runner_steps() {
  return {{compile::Placement::host, "h0", {"x"}, {"b"}, {"y"}}, {compile::Placement::ane, "k0", {}, {}, {}}};
}

Tensor runner_input(int offset) {
  std::vector<float> x(kRunnerSeq * kRunnerDim);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 11) - offset);
  return Tensor::from_floats({kRunnerSeq, kRunnerDim}, x);
}

TEST(SegmentRunner, RunsHostStepsAndKernelsOverOneTable) {
  const TempFolder dir("orion-segment-runner-test");
  device::AneSim sim;
  TwoSteps source(sim, dir.path() + "/k0");
  SegmentRunner runner(runner_steps(), sim, source, 1, 2);
  for (int lane : {0, 1, 0, 1}) {
    TensorMap table{{"x", runner_input(lane + 3)}};
    std::vector<std::size_t> done;
    runner.run(table, lane, [&](std::size_t step, const StepTiming& t) {
      done.push_back(step);
      EXPECT_EQ(t.packed_bytes > 0, step == 1);
      EXPECT_FALSE(t.beside_device);
    });
    EXPECT_EQ(done, (std::vector<std::size_t>{0, 1}));
    const std::vector<float> x = table.at("x").to_floats(), b = source.params_.at("b").to_floats();
    const std::vector<float> z = table.at("z").to_floats();
    ASSERT_EQ(z.size(), x.size());
    for (std::size_t i = 0; i < z.size(); ++i) ASSERT_EQ(z[i], 2 * (x[i] + b[i])) << i;
  }
  EXPECT_EQ(source.graphs_asked, 2);  // once per lane
}

TEST(SegmentRunner, TheSourcesErrorsReachTheCaller) {
  const TempFolder dir("orion-segment-runner-test");
  device::AneSim sim;
  TwoSteps source(sim, dir.path() + "/k0");
  source.params_.clear();
  SegmentRunner runner(runner_steps(), sim, source, 1);
  TensorMap table{{"x", runner_input(0)}};
  EXPECT_THROW(runner.run(table), Error);
  TensorMap empty;
  try {
    runner.run(empty);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step h0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace orion::runtime
