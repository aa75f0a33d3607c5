#pragma once
// The CPU executor: runs any verified graph. It is the reference every other device is
// compared against.
//
// Numerics: in f32 mode values are computed and stored in fp32 (values declared f16 or bf16 are
// rounded to their precision when written). In f16 mode every float value is rounded to fp16
// when an op writes it and when it is bound, as the ANE stores tensors; arithmetic inside an op
// stays fp32.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/tensor_map.h"
#include "core/thread_pool.h"
#include "exec/memory_plan.h"
#include "ir/graph.h"

namespace orion::exec {

enum class Numerics { f32, f16 };

// The memory plans' slots of executors that take turns (one model's graphs, one per sequence
// length, of which one runs at a time): slot i is as large as the largest of theirs, so together
// they take about the largest plan rather than the sum. Executors size it when they are made and
// fetch their slots at every run; two of them must never run at once.
class SharedSlots {
 public:
  void reserve(std::size_t slot, std::size_t bytes);
  std::shared_ptr<Buffer> slot(std::size_t i) const;
  std::size_t bytes() const;  // what the slots hold together

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Buffer>> buffers_;
};

std::string_view numerics_name(Numerics n);

struct CpuOptions {
  Numerics numerics = Numerics::f32;
  int threads = 0;  // 0: one per hardware thread
  // Pointwise (1x1) convs compute each output position by itself, with bits that never depend
  // on how many positions there are (exec/cpu/kernels/conv.cpp), instead of through sgemm,
  // which is faster on many positions; and matmuls go row by row, never through sgemm, with
  // each element's bits independent of the numbers of rows and columns (attention over a KV
  // cache). ane-sim sets it for the programs whose live columns it evaluates alone
  // (device/ane_live_columns.h).
  bool column_independent = false;
  // Slots shared with other executors (null: this executor's own).
  std::shared_ptr<SharedSlots> shared_slots = nullptr;
};

class CpuExecutor {
 public:
  // Verifies the graph and plans its memory; throws orion::Error on an invalid graph.
  explicit CpuExecutor(ir::Graph graph, CpuOptions options = {});
  ~CpuExecutor();
  CpuExecutor(CpuExecutor&&) noexcept;
  CpuExecutor& operator=(CpuExecutor&&) noexcept;

  // Runs the graph once. Every input and param must be bound, with its declared shape and a
  // dtype equal to the declared one or any float dtype for a float value; other names are
  // ignored (one map of model weights serves several graphs). Returns the graph's outputs in
  // order, each in its declared dtype.
  std::vector<Tensor> run(const TensorMap& bindings);

  const ir::Graph& graph() const;
  const MemoryPlan& memory_plan() const;
  const CpuOptions& options() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace orion::exec
