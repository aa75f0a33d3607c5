#include "runtime/device_graph.h"

#include <algorithm>
#include <filesystem>
#include <future>
#include <map>
#include <utility>

#include "compile/ane/kernel_sharing.h"
#include "compile/driver.h"
#include "device/ane_cost_model.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "runtime/kernel_call.h"
#include "runtime/versioned_kernel.h"

namespace orion::runtime {

namespace fs = std::filesystem;

struct DeviceGraph::Segment {
  compile::Segment part;
  bool is_kernel() const { return part.placement == compile::Placement::ane; }
  // Kernels. With weights as inputs, kernels equal but for names share the first one's program
  // (`owner`, null: its own); each has its own surfaces and I/O under its own names.
  std::optional<compile::CanonicalKernel> canon;
  Segment* owner = nullptr;
  std::unique_ptr<VersionedKernel> kernel;  // the program's owner only
  std::optional<compile::KernelIo> io;      // under this segment's names
  std::vector<KernelSurfaces> surfaces;  // one per lane
  // The current set of weights, written by the lowering and install threads before `ready`:
  std::promise<void> lowering_done;
  std::shared_future<void> lowered, ready;
  compile::KernelIo next_io;
  std::optional<compile::KernelIo> program_io;  // a shared program's owner: its I/O under its own names
  InstallPath path = InstallPath::compiled;
  bool installed = false;  // by this version (weights as inputs install only the first)
  double lower_ms = 0, install_ms = 0, weight_ms = 0;
  std::int64_t weight_bytes = 0;
};

DeviceGraph::DeviceGraph(const ir::Graph& graph, device::AneDevice& device, CompileBudget& budget, ReloadSupport& reload,
                         DeviceGraphOptions options)
    : graph_(graph),
      device_(device),
      budget_(budget),
      reload_(reload),
      options_(std::move(options)),
      pool_(options_.threads),
      installer_(std::make_unique<SerialQueue>()) {
  stats_.weights_inputs = options_.weights == DeviceGraphWeights::inputs;
  if (options_.work_folder.empty()) {
    temp_.emplace("orion-device-graph");
    work_ = temp_->path();
  } else {
    work_ = options_.work_folder;
    std::error_code ec;
    fs::create_directories(work_, ec);
    if (ec) throw Error::in_file(work_, "cannot create the folder: " + ec.message());
  }
  const bool share = options_.weights == DeviceGraphWeights::inputs;
  compile::PartitionOptions po;
  po.target = options_.target;
  po.seq = options_.seq;
  if (share) po.cut_after = options_.cut_after;
  compile::Partition part = compile::plan_segments(graph, po);
  std::map<std::string, Segment*> programs;  // by canonical key, the first segment of each
  for (ir::ValueId id : graph.nodes_of(ir::Op::input)) {
    const std::string& name = graph.node(id).name;
    inputs_.emplace_back(name, part.renamed.at(name));
  }
  for (ir::ValueId id : graph.outputs()) outputs_.push_back(part.renamed.at(graph.node(id).name));
  std::vector<SegmentStep> steps;
  for (compile::Segment& s : part.segments) {
    auto seg = std::make_unique<Segment>();
    SegmentStep step{s.placement, s.name, {}, {}, {}};
    if (s.placement == compile::Placement::ane) {
      if (share) {
        seg->canon = compile::canonical_kernel(s.graph);
        auto [first, fresh] = programs.emplace(seg->canon->key, seg.get());
        if (!fresh) seg->owner = first->second;
      }
      // No supervisor: the installs run on the install thread, and restarts are decided before
      // them (plan_installs).
      if (!seg->owner) {
        seg->kernel = std::make_unique<VersionedKernel>(device_, budget_, reload_, (fs::path(work_) / s.name).string());
        ++stats_.programs;
      }
      ++stats_.kernels;
    } else {
      step.inputs = ir::names_of(s.graph, s.graph.nodes_of(ir::Op::input));
      step.params = ir::names_of(s.graph, s.graph.nodes_of(ir::Op::param));
      step.outputs = ir::names_of(s.graph, s.graph.outputs());
      ++stats_.host_segments;
    }
    seg->part = std::move(s);
    segments_.push_back(std::move(seg));
    steps.push_back(std::move(step));
  }
  SegmentSource& source = *this;
  runner_ = std::make_unique<SegmentRunner>(std::move(steps), device_, source, options_.threads, options_.lanes);
}

DeviceGraph::~DeviceGraph() {
  try {
    finish(false);
  } catch (...) {  // the lowering thread's own failure (each kernel's is in its promise): past caring
  }
  segments_.clear();  // unloads the kernels before their folders go
}

std::string DeviceGraph::next_folder(const Segment& seg) const {
  return (fs::path(work_) / ("next_" + seg.part.name)).string();
}

bool DeviceGraph::plan_installs(const std::vector<Segment*>& kernels, int compiles, bool may_restart) {
  budget_.sync(device_.compiles());
  if (budget_.allows_compile(compiles)) return true;
  if (!may_restart) return false;
  const std::string need = "device graph: a new set of weights needs " + std::to_string(compiles) +
                           " kernel compiles and the process has " + std::to_string(budget_.remaining()) + " of its " +
                           std::to_string(budget_.limit()) + " left (ANE030)";
  if (!options_.supervisor) throw Error(need + ": restart the process from a checkpoint (runtime/supervisor.h)");
  // A fresh process spends a compile on the reload probe first: past that, exec'ing again and
  // again would never get the job further.
  if (compiles > budget_.limit() - 1) throw Error(need + ", and a new process would not have enough either");
  for (Segment* seg : kernels) seg->kernel->release();
  options_.supervisor->restart(need);
}

void DeviceGraph::lower(Segment& seg) {
  Stopwatch sw;
  compile::KernelOptions ko;
  ko.lowering.target = options_.target;
  ko.lowering.kernel_name = seg.part.name;
  ko.lowering.weights_vary = true;
  ko.lowering.runtime_weights = options_.weights == DeviceGraphWeights::inputs;
  ko.lowering.io.pad_channels = true;  // per-row values (norm statistics, one score per head) cross kernels
  std::error_code ec;
  fs::remove_all(next_folder(seg), ec);
  const TensorMap none;
  const ir::Graph& g = seg.canon ? seg.canon->graph : seg.part.graph;
  compile::KernelIo io = compile::build_kernel(g, ko.lowering.runtime_weights ? none : params_, next_folder(seg), ko).lowered.io;
  if (seg.io && *seg.io != io)
    throw Error("device graph: kernel " + seg.part.name + " binds other inputs or outputs with new weights");
  seg.next_io = std::move(io);
  seg.lower_ms = sw.ms();
}

void DeviceGraph::install(Segment& seg) {
  Stopwatch sw;
  seg.path = seg.kernel->install(next_folder(seg));
  if (!seg.io && !seg.program_io) {
    check_bindings(device_, seg.kernel->program(), seg.next_io,
                   (fs::path(work_) / seg.part.name / "model.mil").string());
    if (seg.canon) {
      seg.program_io = std::move(seg.next_io);  // bound to each sharing segment's names by bind()
    } else {
      for (int lane = 0; lane < options_.lanes; ++lane) seg.surfaces.emplace_back(device_, seg.next_io);
      seg.io = std::move(seg.next_io);
    }
  }
  std::error_code ec;
  fs::remove_all(next_folder(seg), ec);
  seg.installed = true;
  seg.install_ms = sw.ms();
}

DeviceGraph::Segment& DeviceGraph::owner_of(Segment& seg) { return seg.owner ? *seg.owner : seg; }

void DeviceGraph::bind(Segment& seg) {
  const compile::KernelIo& program_io = *owner_of(seg).program_io;
  std::map<std::string, compile::WeightPart> parts;
  const std::map<std::string, std::string> names = compile::step_bind(*seg.canon, program_io);
  for (const auto& [param, part] : seg.canon->parts)
    if (names.contains(param)) parts.emplace(param, part);
  compile::KernelIo io = compile::bind_io(program_io, names, parts);
  for (int lane = 0; lane < options_.lanes; ++lane) seg.surfaces.emplace_back(device_, io);
  seg.io = std::move(io);
}

void DeviceGraph::write_weights(Segment& seg) {
  Stopwatch sw;
  seg.weight_bytes = 0;
  // Packed once, copied to the other lanes' surfaces as they are.
  for (std::size_t lane = 0; lane < seg.surfaces.size(); ++lane)
    seg.weight_bytes += lane == 0 ? seg.surfaces[0].write_weights(*seg.io, params_)
                                  : seg.surfaces[lane].copy_weights(*seg.io, seg.surfaces[0]);
  seg.weight_ms = sw.ms();
}

bool DeviceGraph::set_weights(const TensorMap& params, bool may_restart) {
  finish(true);
  std::vector<Segment*> kernels, programs;  // every kernel step; those that own a program
  for (auto& seg : segments_) {
    if (seg->is_kernel()) kernels.push_back(seg.get());
    if (seg->kernel) programs.push_back(seg.get());
  }
  const bool inputs = options_.weights == DeviceGraphWeights::inputs;
  // Weights as inputs lower and compile once; a new set is only written.
  const bool lowering = !inputs || !compiled_;
  int compiles = 0;
  for (Segment* seg : programs) compiles += inputs ? !compiled_ : !seg->kernel->will_reload();
  if (!plan_installs(programs, compiles, may_restart)) return false;
  params_ = params;
  version_counted_ = false;
  for (Segment* seg : kernels) {  // in run order: an owner before the segments that share it
    if (seg->owner) {
      seg->lowered = seg->owner->lowered;
      continue;
    }
    seg->lowering_done = std::promise<void>();
    seg->lowered = seg->lowering_done.get_future().share();
    if (!lowering) seg->lowering_done.set_value();
  }
  // Lowering the kernels is independent work (a 110M model's takes seconds a step), side by
  // side on the pool; installing them is not (one budget, one device queue), so it follows on
  // one thread in run order, each kernel as soon as it is lowered.
  if (lowering)
    lowering_ = std::async(std::launch::async, [this, programs] {
      pool_.parallel_for(0, static_cast<std::int64_t>(programs.size()), 1, [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t i = lo; i < hi; ++i) {
          Segment& seg = *programs[static_cast<std::size_t>(i)];
          try {
            lower(seg);
            seg.lowering_done.set_value();
          } catch (...) {
            seg.lowering_done.set_exception(std::current_exception());
          }
        }
      });
    });
  for (Segment* seg : kernels)
    seg->ready = installer_->post([this, seg, lowering, inputs] {
      seg->lowered.get();
      if (lowering && seg->kernel) install(*seg);
      if (!seg->io) bind(*seg);  // shared programs: the step's names, once
      if (inputs) write_weights(*seg);
    });
  compiled_ = true;
  has_weights_ = true;
  return true;
}

void DeviceGraph::finish(bool rethrow) {
  if (lowering_.valid()) lowering_.get();  // every kernel's error is in its own promise
  installer_->drain();
  if (version_counted_ || !rethrow) return;
  for (auto& seg : segments_)
    if (seg->is_kernel()) seg->ready.get();
  count_version();
}

void DeviceGraph::count_version() {
  if (lowering_.valid()) lowering_.get();
  for (auto& seg : segments_) {
    if (!seg->is_kernel()) continue;
    stats_.weight_bytes += seg->weight_bytes;
    stats_.weight_ms += seg->weight_ms;
    seg->weight_bytes = 0;
    seg->weight_ms = 0;
    if (!seg->kernel || !std::exchange(seg->installed, false)) continue;
    stats_.lower_ms += seg->lower_ms;
    stats_.install_ms += seg->install_ms;
    ++(seg->path == InstallPath::reloaded ? stats_.reloads : stats_.compiles);
  }
  if (stats_.kernel_works.empty()) {  // once every kernel has its I/O (after a first run)
    std::vector<device::KernelWork> works;
    for (auto& seg : segments_)
      if (seg->is_kernel() && seg->io) works.push_back(device::kernel_work(*seg->io, seg->part.graph));
    if (static_cast<int>(works.size()) == stats_.kernels) stats_.kernel_works = std::move(works);
  }
  ++stats_.versions;
  version_counted_ = true;
}

struct DeviceGraph::LaneStats {
  double wait_ms = 0, device_ms = 0, pack_ms = 0, host_ms = 0;
  int host_beside_device = 0;
  std::int64_t evaluations = 0, surface_bytes = 0;
};

ReadyKernel DeviceGraph::kernel(std::size_t step, int lane) {
  Segment& seg = *segments_[step];
  const std::shared_future<void> ready = seg.ready;  // a lane's own copy to wait on
  ready.get();  // its install's error, at the kernel that needs it
  return {owner_of(seg).kernel->program(), &*seg.io, &seg.surfaces[static_cast<std::size_t>(lane)]};
}

ir::Graph DeviceGraph::host_graph(std::size_t step) { return segments_[step]->part.graph; }

const Tensor& DeviceGraph::host_param(std::size_t step, const std::string& param) {
  auto it = params_.find(param);
  if (it == params_.end()) throw Error("device graph: no weight " + param + " for host step " + segments_[step]->part.name);
  return it->second;
}

std::vector<Tensor> DeviceGraph::run_lane(int lane, const TensorMap& inputs, LaneStats& st) {
  TensorMap table;
  for (const auto& [name, value] : inputs_) {
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error("device graph: input " + name + " is not given");
    table[value] = it->second;
  }
  runner_->run(table, lane, [&](std::size_t step, const StepTiming& t) {
    if (const auto& io = segments_[step]->io) {
      ++st.evaluations;
      for (const auto* list : {&io->inputs, &io->outputs})
        for (const compile::KernelIoTensor& k : *list) st.surface_bytes += k.bytes;
    }
    st.wait_ms += t.wait_ms;
    st.device_ms += t.device_ms;
    st.pack_ms += t.pack_ms;
    st.host_ms += t.host_ms;
    st.host_beside_device += t.beside_device;
  });
  std::vector<Tensor> out;
  for (const std::string& name : outputs_) out.push_back(lookup_value(table, name, "(outputs)"));
  return out;
}

std::vector<Tensor> DeviceGraph::run(const TensorMap& inputs) { return std::move(run_many({inputs})[0]); }

std::vector<std::vector<Tensor>> DeviceGraph::run_many(const std::vector<TensorMap>& inputs) {
  if (!has_weights_) throw Error("device graph: run before set_weights");
  const int lanes = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(options_.lanes), inputs.size()));
  std::vector<std::vector<Tensor>> out(inputs.size());
  std::vector<LaneStats> st(static_cast<std::size_t>(std::max(lanes, 1)));
  // Lane k takes inputs k, k + lanes, ...: the same work in each lane as one after another.
  const auto lane_work = [&](int lane) {
    for (std::size_t i = static_cast<std::size_t>(lane); i < inputs.size(); i += static_cast<std::size_t>(lanes))
      out[i] = run_lane(lane, inputs[i], st[static_cast<std::size_t>(lane)]);
  };
  std::vector<std::future<void>> others;
  for (int lane = 1; lane < lanes; ++lane) others.push_back(std::async(std::launch::async, lane_work, lane));
  std::exception_ptr failed;
  try {
    if (lanes > 0) lane_work(0);
  } catch (...) {
    failed = std::current_exception();
  }
  for (std::future<void>& f : others) {
    try {
      f.get();
    } catch (...) {
      if (!failed) failed = std::current_exception();
    }
  }
  if (failed) std::rethrow_exception(failed);
  double waited = 0;
  for (const LaneStats& s : st) {
    stats_.device_ms += s.device_ms;
    stats_.pack_ms += s.pack_ms;
    stats_.host_ms += s.host_ms;
    stats_.host_beside_device += s.host_beside_device;
    stats_.evaluations += s.evaluations;
    stats_.surface_bytes += s.surface_bytes;
    waited = std::max(waited, s.wait_ms);  // the lanes wait side by side
  }
  if (!version_counted_) {
    stats_.wait_ms += waited;
    count_version();
  }
  stats_.runs += static_cast<int>(inputs.size());
  return out;
}

}  // namespace orion::runtime
