#include "exec/cpu/executor.h"

#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "exec/cpu/kernels.h"
#include "exec/cpu/openmp_threads.h"
#include "ir/verifier.h"

namespace orion::exec {

using cpu::compute_dtype;

std::string_view numerics_name(Numerics n) { return n == Numerics::f16 ? "f16" : "f32"; }

namespace {

std::size_t compute_bytes(const ir::Node& n) {
  return static_cast<std::size_t>(n.type.numel()) * dtype_size(compute_dtype(n.type.dtype));
}

}  // namespace

struct CpuExecutor::State {
  ir::Graph graph;
  CpuOptions options;
  ThreadPool pool;
  std::vector<ir::ValueId> order;
  MemoryPlan plan;
  std::vector<std::shared_ptr<Buffer>> slots;
  std::vector<Tensor> values;  // per node, valid during run()
  // Constants as bound (converted to the compute dtype, rounded in f16 numerics), made on the
  // first run and kept: a model's weights are constants on ane-sim, and converting them on
  // every run cost more than the products that read them.
  std::vector<Tensor> bound_constants;
  // The buffers of the values the memory plan leaves out (the graph's outputs), kept from the
  // last run and reused once the caller has released the tensors it got: a training step's
  // gradients are hundreds of MB, and fresh memory each step cost the kernel's page zeroing.
  std::vector<std::shared_ptr<Buffer>> unplanned;

  State(ir::Graph g, CpuOptions o) : graph(std::move(g)), options(o), pool(o.threads, cpu::openmp_fork_join) {}

  // Rounds a freshly written float value to the precision it is stored in.
  void round_stored(const ir::Node& n, Tensor& t) const {
    if (!is_float(n.type.dtype)) return;
    auto v = t.span<float>();
    if (n.type.dtype == DType::bf16) round_to_bf16(v);
    if (n.type.dtype == DType::f16 || options.numerics == Numerics::f16) round_to_half(v);
  }

  std::shared_ptr<Buffer> unplanned_buffer(ir::ValueId id, std::size_t bytes) {
    std::shared_ptr<Buffer>& b = unplanned[static_cast<std::size_t>(id)];
    // use_count 1: only this cache holds it, no tensor the caller kept views it.
    if (!b || b.use_count() != 1 || b->size() != bytes) b = Buffer::allocate(bytes);
    return b;
  }

  // An input converted (f16 -> f32) or copied to be rounded, into a buffer kept from the last
  // run like the outputs' (ane-sim binds the same inputs every evaluation, a KV cache of
  // megabytes among them, and fresh memory each time cost more than the kernel that read it);
  // an empty tensor for the conversions other than these.
  Tensor bind_reused(const ir::Node& n, ir::ValueId id, const Tensor& given, DType cd) {
    const bool f16_to_f32 = given.dtype() == DType::f16 && cd == DType::f32;
    if (n.op != ir::Op::input || !(f16_to_f32 || given.dtype() == cd) || !given.is_contiguous()) return {};
    Tensor t = Tensor::view_of(cd, n.type.shape, unplanned_buffer(id, static_cast<std::size_t>(n.type.numel()) * dtype_size(cd)), 0);
    if (f16_to_f32)
      halves_to_floats({reinterpret_cast<const std::uint16_t*>(given.raw()), static_cast<std::size_t>(given.numel())}, t.span<float>());
    else
      std::memcpy(t.raw(), given.raw(), given.nbytes());
    return t;
  }

  Tensor bind(const ir::Node& n, const Tensor& given, ir::ValueId id) {
    const std::string who = (n.op == ir::Op::input ? "input %" : "param %") + n.name;
    if (!given.defined()) throw Error(who + " is bound to an empty tensor");
    if (given.shape() != n.type.shape)
      throw Error(who + " expects shape " + shape_str(n.type.shape) + ", got " + shape_str(given.shape()));
    const bool ok = given.dtype() == n.type.dtype || (is_float(n.type.dtype) && is_float(given.dtype()));
    if (!ok)
      throw Error(who + " expects " + n.type.str() + ", got dtype " + std::string(dtype_name(given.dtype())));
    const DType cd = compute_dtype(n.type.dtype);
    const bool rounds = is_float(n.type.dtype) && (n.type.dtype != DType::f32 || options.numerics == Numerics::f16);
    Tensor t = given.dtype() != cd || rounds ? bind_reused(n, id, given, cd) : Tensor{};
    if (!t.defined()) t = given.dtype() == cd ? given.contiguous() : given.to(cd);
    if (rounds) {
      if (t.raw() == given.raw()) t = t.clone();  // never round the caller's tensor in place
      round_stored(n, t);
    }
    return t;
  }
};

void SharedSlots::reserve(std::size_t slot, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  if (buffers_.size() <= slot) buffers_.resize(slot + 1);
  if (!buffers_[slot] || buffers_[slot]->size() < bytes) buffers_[slot] = Buffer::allocate(bytes);
}

std::shared_ptr<Buffer> SharedSlots::slot(std::size_t i) const {
  std::lock_guard lock(mutex_);
  return buffers_.at(i);
}

std::size_t SharedSlots::bytes() const {
  std::lock_guard lock(mutex_);
  std::size_t sum = 0;
  for (const auto& b : buffers_) sum += b ? b->size() : 0;
  return sum;
}

CpuExecutor::CpuExecutor(ir::Graph graph, CpuOptions options)
    : state_(std::make_unique<State>(std::move(graph), options)) {
  ir::verify(state_->graph);
  State& s = *state_;
  s.order = s.graph.topological_order();
  s.plan = plan_memory(s.graph, s.order, compute_bytes);
  for (std::size_t i = 0; i < s.plan.slot_bytes.size(); ++i) {
    if (s.options.shared_slots) s.options.shared_slots->reserve(i, s.plan.slot_bytes[i]);
    else s.slots.push_back(Buffer::allocate(s.plan.slot_bytes[i]));
  }
  s.values.resize(static_cast<std::size_t>(s.graph.size()));
  s.bound_constants.resize(static_cast<std::size_t>(s.graph.size()));
  s.unplanned.resize(static_cast<std::size_t>(s.graph.size()));
}

CpuExecutor::~CpuExecutor() = default;
CpuExecutor::CpuExecutor(CpuExecutor&&) noexcept = default;
CpuExecutor& CpuExecutor::operator=(CpuExecutor&&) noexcept = default;

const ir::Graph& CpuExecutor::graph() const { return state_->graph; }
const MemoryPlan& CpuExecutor::memory_plan() const { return state_->plan; }
const CpuOptions& CpuExecutor::options() const { return state_->options; }

std::vector<Tensor> CpuExecutor::run(const TensorMap& bindings) {
  State& s = *state_;
  if (s.options.shared_slots) {
    s.slots.clear();
    for (std::size_t i = 0; i < s.plan.slot_bytes.size(); ++i) s.slots.push_back(s.options.shared_slots->slot(i));
  }
  for (ir::ValueId id : s.order) {
    const ir::Node& n = s.graph.node(id);
    Tensor& out = s.values[static_cast<std::size_t>(id)];
    switch (n.op) {
      case ir::Op::input:
      case ir::Op::param: {
        auto it = bindings.find(n.name);
        if (it == bindings.end())
          throw Error((n.op == ir::Op::input ? "input %" : "param %") + n.name + " is not bound");
        out = s.bind(n, it->second, id);
        continue;
      }
      case ir::Op::constant: {
        Tensor& c = s.bound_constants[static_cast<std::size_t>(id)];
        if (!c.defined()) c = s.bind(n, n.attr<Tensor>("value"), id);
        out = c;
        continue;
      }
      default:
        break;
    }
    const DType cd = compute_dtype(n.type.dtype);
    const int slot = s.plan.slot_of[static_cast<std::size_t>(id)];
    out = Tensor::view_of(cd, n.type.shape,
                          slot >= 0 ? s.slots[static_cast<std::size_t>(slot)] : s.unplanned_buffer(id, compute_bytes(n)), 0);
    std::vector<Tensor> ins;
    ins.reserve(n.inputs.size());
    for (ir::ValueId in : n.inputs) ins.push_back(s.values[static_cast<std::size_t>(in)]);
    cpu::kernel_for(n.op)(cpu::KernelArgs{n, ins, out, s.pool, s.options.column_independent});
    s.round_stored(n, out);
  }
  std::vector<Tensor> outputs;
  for (ir::ValueId id : s.graph.outputs()) {
    const ir::Node& n = s.graph.node(id);
    const Tensor& v = s.values[static_cast<std::size_t>(id)];
    // Outputs are never planned, so they own their memory, except sources, which may share
    // the caller's tensor or the graph's constant.
    if (v.dtype() != n.type.dtype) outputs.push_back(v.to(n.type.dtype));
    else outputs.push_back(n.info().cls == ir::OpClass::source ? v.clone() : v);
  }
  for (Tensor& v : s.values) v = Tensor{};
  if (s.options.shared_slots) s.slots.clear();  // a slot regrown for another executor frees the old one
  return outputs;
}

}  // namespace orion::exec
