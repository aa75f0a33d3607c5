#include "compile/ane/ane_package_writer.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "compile/ane/ane_rules.h"
#include "compile/blob/weight_blob_writer.h"
#include "compile/driver.h"
#include "core/atomic_file.h"
#include "core/atomic_folder.h"
#include "core/error.h"
#include "ir/printer.h"

namespace orion::compile {

namespace {

std::vector<PackageValue> boundary_values(const ir::Graph& g, const std::vector<ir::ValueId>& ids,
                                          const std::map<std::string, std::string>& renamed) {
  std::vector<PackageValue> out;
  for (ir::ValueId id : ids) {
    const ir::Node& n = g.node(id);
    out.push_back({n.name, renamed.at(n.name), n.type.dtype, n.type.shape});
  }
  return out;
}

}  // namespace

PackageReport write_ane_package(const std::vector<ProgramSpec>& programs, const TensorMap& weights,
                                const PackageOptions& o, const std::string& out, nlohmann::json model) {
  namespace fs = std::filesystem;
  const fs::path parent = fs::absolute(out).parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  AtomicFolderWriter folder(fs::absolute(out).string());
  const fs::path root = folder.temp_path();
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };

  PackageManifest m;
  m.dialect = std::string(o.dialect == MilDialect::ios16 ? "ios16" : "ios18");
  m.target = o.target;
  for (const AneRule& r : ane_rules())
    if (r.stage == AneStage::graph || r.stage == AneStage::mil) m.rules_checked.emplace_back(r.id);
  m.model = std::move(model);
  PackageReport report;
  std::map<std::string, int> host_params;  // name -> first use, for a deterministic order

  for (const ProgramSpec& spec : programs) {
    PartitionOptions po;
    po.target = o.target;
    po.seq = spec.seq;
    po.host_nodes = spec.host_nodes;
    po.prefix = spec.name + "_";
    po.weight_tensor_budget = o.target.max_weight_tensors - 1;  // ANE037, a slot kept for scalar operands
    Partition part = plan_segments(spec.graph, po);

    PackageProgram prog;
    prog.name = spec.name;
    prog.seq = spec.seq;
    prog.session = spec.session;
    prog.inputs = boundary_values(spec.graph, spec.graph.nodes_of(ir::Op::input), part.renamed);
    prog.outputs = boundary_values(spec.graph, spec.graph.outputs(), part.renamed);
    for (Segment& seg : part.segments) {
      PackageStep step;
      step.placement = seg.placement;
      step.name = seg.name;
      step.stage = seg.stage;
      const fs::path dir = root / seg.name;
      if (seg.placement == Placement::ane) {
        KernelOptions ko;
        ko.lowering.target = o.target;
        ko.lowering.kernel_name = seg.name;
        ko.lowering.runtime_weights = o.runtime_weights;
        ko.lowering.io.seq = spec.seq;  // inputs of another length (a decode step's KV cache) are fixed-length
        ko.mil.dialect = o.dialect;
        const BuiltKernel built = build_kernel(seg.graph, weights, dir.string(), ko);
        const AneLowered& k = built.lowered;
        for (const ir::Diagnostic& d : k.diagnostics) report.diagnostics.push_back({seg.name + ": " + d.pass, d.message});
        for (const AneViolation& w : k.warnings) step.warnings.push_back(w.message());
        // ANE037 is counted, not yet refused (its rule says why): a kernel over it is said loudly.
        const WeightSlots& slots = built.slots;
        if (slots.total() > o.target.max_weight_tensors) {
          step.warnings.push_back("ANE037 warning " + seg.name + ": " + std::to_string(slots.total()) +
                                  " weight slots, over the " + std::to_string(o.target.max_weight_tensors) +
                                  " a program was seen to compile with");
          say(step.warnings.back());
        }
        step.io = k.io;
        // What the device reads: the weight files as written (int8 or fp16, one file or one per
        // tensor on M1/M2).
        auto written = static_cast<std::int64_t>(built.mil.weights.count() > 0 ? built.mil.weights.bytes().size() : 0);
        for (const auto& [path, w] : built.mil.tensor_files) written += static_cast<std::int64_t>(w.bytes().size());
        step.weight_bytes = seg.weight_bytes;  // the on-chip budget's measure: the weights in fp16
        report.kernel_weight_bytes += written;
        ++report.kernels;
        say(seg.name + ": kernel, " + std::to_string(k.graph.size()) + " ops, " +
            std::to_string(written / 1000000) + " MB of weight files, sequence " + std::to_string(k.io.seq) +
            " padded to " + std::to_string(k.io.padded_seq));
      } else {
        fs::create_directories(dir, ec);
        if (ec) throw Error::in_file(dir.string(), "cannot create the folder: " + ec.message());
        write_file_atomic((dir / kHostGraphFile).string(), ir::print_graph(seg.graph));
        step.inputs = ir::names_of(seg.graph, seg.graph.nodes_of(ir::Op::input));
        step.outputs = ir::names_of(seg.graph, seg.graph.outputs());
        step.params = ir::names_of(seg.graph, seg.graph.nodes_of(ir::Op::param));
        for (const std::string& p : step.params) host_params.emplace(p, static_cast<int>(host_params.size()));
        ++report.host_segments;
        say(seg.name + ": host, " + std::to_string(seg.graph.size()) + " nodes");
      }
      prog.steps.push_back(std::move(step));
    }
    m.programs.push_back(std::move(prog));
  }

  if (o.runtime_weights) {
    std::map<std::string, Shape> runtime;
    for (const ProgramSpec& spec : programs)
      for (ir::ValueId id : spec.graph.nodes_of(ir::Op::param))
        if (!weights.contains(spec.graph.node(id).name)) runtime.emplace(spec.graph.node(id).name, spec.graph.node(id).type.shape);
    for (const auto& [name, shape] : runtime) {
      m.runtime_weights.push_back({name, shape});
      host_params.erase(name);
    }
  }
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [name, first] : host_params) order.emplace_back(first, name);
  std::sort(order.begin(), order.end());
  WeightBlobWriter hw;
  for (const auto& [first, name] : order) {
    auto it = weights.find(name);
    if (it == weights.end()) throw Error("write_ane_package: no value for param " + name + " (read on the host)");
    const Tensor t = it->second.dtype() == DType::f32 ? it->second.contiguous() : it->second.to(DType::f32);
    const auto span = t.span<float>();
    m.host_weights.push_back({name, t.shape(), hw.add_fp32({span.data(), span.size()})});
    report.host_weight_bytes += static_cast<std::int64_t>(t.nbytes());
  }
  hw.write((root / kHostWeightsFile).string());
  write_file_atomic((root / kManifestFile).string(), manifest_to_json(m).dump(2) + "\n");
  folder.commit(o.replace);
  return report;
}

}  // namespace orion::compile
