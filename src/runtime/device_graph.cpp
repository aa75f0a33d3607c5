#include "runtime/device_graph.h"

#include <filesystem>

#include "compile/ane_lowering.h"
#include "compile/mil_writer.h"
#include "compile/partition.h"
#include "compile/passes/chunk_matmuls.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "runtime/kernel_call.h"
#include "runtime/versioned_kernel.h"

namespace orion::runtime {

namespace fs = std::filesystem;

struct DeviceGraph::Segment {
  compile::Segment part;
  // Kernels:
  std::unique_ptr<VersionedKernel> kernel;
  std::optional<compile::KernelIo> io;
  std::optional<KernelSurfaces> surfaces;
  // Host segments:
  std::unique_ptr<exec::CpuExecutor> host;
  std::vector<std::string> inputs, params, outputs;
};

namespace {

bool same_io(const compile::KernelIo& a, const compile::KernelIo& b) {
  const auto same = [](const std::vector<compile::KernelIoTensor>& x, const std::vector<compile::KernelIoTensor>& y) {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (x[i].name != y[i].name || x[i].padded != y[i].padded) return false;
    return true;
  };
  return a.seq == b.seq && a.padded_seq == b.padded_seq && same(a.inputs, b.inputs) && same(a.outputs, b.outputs);
}

}  // namespace

DeviceGraph::DeviceGraph(const ir::Graph& graph, device::AneDevice& device, CompileBudget& budget, ReloadSupport& reload,
                         DeviceGraphOptions options)
    : graph_(graph),
      device_(device),
      budget_(budget),
      reload_(reload),
      options_(std::move(options)),
      pool_(options_.threads) {
  if (options_.work_folder.empty()) {
    temp_.emplace("orion-device-graph");
    work_ = temp_->path();
  } else {
    work_ = options_.work_folder;
    std::error_code ec;
    fs::create_directories(work_, ec);
    if (ec) throw Error::in_file(work_, "cannot create the folder: " + ec.message());
  }
  ir::Graph g = graph;
  compile::chunk_matmuls(g, options_.target.on_chip_bytes);
  compile::PartitionOptions po;
  po.target = options_.target;
  po.seq = options_.seq;
  compile::Partition part = compile::partition_graph(g, po);
  for (ir::ValueId id : graph.nodes_of(ir::Op::input)) {
    const std::string& name = graph.node(id).name;
    inputs_.emplace_back(name, part.renamed.at(name));
  }
  for (ir::ValueId id : graph.outputs()) outputs_.push_back(part.renamed.at(graph.node(id).name));
  for (compile::Segment& s : part.segments) {
    auto seg = std::make_unique<Segment>();
    if (s.placement == compile::Placement::ane) {
      seg->kernel = std::make_unique<VersionedKernel>(device_, budget_, reload_, (fs::path(work_) / s.name).string(),
                                                      options_.supervisor);
      ++stats_.kernels;
    } else {
      seg->inputs = ir::names_of(s.graph, s.graph.nodes_of(ir::Op::input));
      seg->params = ir::names_of(s.graph, s.graph.nodes_of(ir::Op::param));
      seg->outputs = ir::names_of(s.graph, s.graph.outputs());
      seg->host = std::make_unique<exec::CpuExecutor>(s.graph, exec::CpuOptions{exec::Numerics::f32, options_.threads});
      ++stats_.host_segments;
    }
    seg->part = std::move(s);
    segments_.push_back(std::move(seg));
  }
}

DeviceGraph::~DeviceGraph() {
  segments_.clear();  // unloads the kernels before their folders go
}

void DeviceGraph::set_weights(const exec::Bindings& params) {
  params_ = params;
  std::vector<Segment*> kernels;
  for (auto& seg : segments_)
    if (seg->kernel) kernels.push_back(seg.get());
  const auto next = [&](const Segment& seg) { return (fs::path(work_) / ("next_" + seg.part.name)).string(); };
  // Lowering the kernels is independent work (a 110M model's takes seconds a step); installing
  // them is not (one budget, one supervisor), so it follows in order.
  Stopwatch sw;
  std::vector<compile::KernelIo> ios(kernels.size());
  pool_.parallel_for(0, static_cast<std::int64_t>(kernels.size()), 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      const Segment& seg = *kernels[static_cast<std::size_t>(i)];
      compile::AneLoweringOptions lo_options;
      lo_options.target = options_.target;
      lo_options.kernel_name = seg.part.name;
      lo_options.weights_vary = true;
      lo_options.io.pad_channels = true;  // per-row values (norm statistics, one score per head) cross kernels
      compile::AneLowered k = compile::lower_for_ane(seg.part.graph, params_, lo_options);
      if (seg.io && !same_io(*seg.io, k.io))
        throw Error("device graph: kernel " + seg.part.name + " binds other inputs or outputs with new weights");
      std::error_code ec;
      fs::remove_all(next(seg), ec);
      compile::write_model_folder(compile::write_mil(k.graph), next(seg));
      ios[static_cast<std::size_t>(i)] = std::move(k.io);
    }
  });
  stats_.lower_ms += sw.ms();
  sw.restart();
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    Segment& seg = *kernels[i];
    const InstallPath how = seg.kernel->install(next(seg));
    ++(how == InstallPath::reloaded ? stats_.reloads : stats_.compiles);
    if (!seg.io) {
      check_bindings(device_, seg.kernel->program(), ios[i], (fs::path(work_) / seg.part.name / "model.mil").string());
      seg.surfaces.emplace(ios[i]);
      seg.io = std::move(ios[i]);
    }
    std::error_code ec;
    fs::remove_all(next(seg), ec);
  }
  stats_.install_ms += sw.ms();
  ++stats_.versions;
}

std::vector<Tensor> DeviceGraph::run(const exec::Bindings& inputs) {
  if (stats_.versions == 0) throw Error("device graph: run before set_weights");
  Values table;
  for (const auto& [name, value] : inputs_) {
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error("device graph: input " + name + " is not given");
    table[value] = it->second;
  }
  for (auto& seg : segments_) {
    if (seg->kernel) {
      const KernelCallTiming t = seg->surfaces->call(device_, seg->kernel->program(), *seg->io, table, seg->part.name);
      stats_.device_ms += t.device_ms;
      stats_.pack_ms += t.pack_ms;
      continue;
    }
    Stopwatch sw;
    exec::Bindings b;
    for (const std::string& in : seg->inputs) b[in] = lookup_value(table, in, seg->part.name);
    for (const std::string& p : seg->params) {
      auto it = params_.find(p);
      if (it == params_.end()) throw Error("device graph: no weight " + p + " for host step " + seg->part.name);
      b[p] = it->second;
    }
    std::vector<Tensor> out = seg->host->run(b);
    for (std::size_t i = 0; i < seg->outputs.size(); ++i) table[seg->outputs[i]] = std::move(out[i]);
    stats_.host_ms += sw.ms();
  }
  ++stats_.runs;
  std::vector<Tensor> out;
  for (const std::string& name : outputs_) out.push_back(lookup_value(table, name, "(outputs)"));
  return out;
}

}  // namespace orion::runtime
