#include "compile/ane/ane_package_writer.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "compile/ane/ane_rules.h"
#include "compile/ane/kernel_sharing.h"
#include "compile/ane/package_weights.h"
#include "compile/driver.h"
#include "core/atomic_file.h"
#include "core/atomic_folder.h"
#include "core/content_hash.h"
#include "core/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"

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

PartitionOptions partition_options(const ProgramSpec& spec, const PackageOptions& o) {
  PartitionOptions po;
  po.target = o.target;
  po.seq = spec.seq;
  po.host_nodes = spec.host_nodes;
  po.prefix = spec.name + "_";
  po.weight_tensor_budget = o.target.max_weight_tensors - 1;  // ANE037, a slot kept for scalar operands
  return po;
}

// Baked while every kernel of the package fits the compile budget; past it, as inputs, where
// the layers share kernels and the count stops growing with depth.
KernelWeights choose_weights(const std::vector<Partition>& parts, const PackageOptions& o, std::string& reason) {
  int kernels = 0;
  for (const Partition& p : parts)
    for (const Segment& s : p.segments) kernels += s.placement == Placement::ane ? 1 : 0;
  const std::string count = std::to_string(kernels) + " kernels baked";
  const std::string budget = "the compile budget of " + std::to_string(o.compile_budget) + " (ANE030)";
  if (o.kernel_weights) {
    reason = std::string(kernel_weights_name(*o.kernel_weights)) + ": chosen (" + count + ", " + budget + ")";
    return *o.kernel_weights;
  }
  if (kernels <= o.compile_budget) {
    reason = "baked: the " + count + " fit " + budget;
    return KernelWeights::baked;
  }
  reason = "inputs: " + count + " would exceed " + budget + "; layers of one shape share a kernel";
  return KernelWeights::inputs;
}

// A host segment's constants of kLiftElements or more (RoPE's tables over the whole context:
// hundreds of MB as IR text) become params named for their content, whose values go to
// host_weights.bin with the model's: the text keeps only their names. Equal constants of one
// segment (two kinds of layers' rope tables that happen to agree) get names of their own.
constexpr std::int64_t kLiftElements = 4096;

void lift_constants(ir::Graph& g, TensorMap& lifted) {
  std::set<ir::ValueId> outputs(g.outputs().begin(), g.outputs().end());
  std::set<std::string> here;
  for (ir::ValueId id = 0; id < g.size(); ++id) {
    ir::Node& n = g.node(id);
    if (n.op != ir::Op::constant || outputs.contains(id) || n.type.dtype != DType::f32) continue;
    const Tensor value = std::get<Tensor>(n.attrs[0]).contiguous();
    if (value.numel() < kLiftElements) continue;
    ContentHasher h;
    h.update(shape_str(value.shape()));
    h.update(std::span(value.raw(), value.nbytes()));
    n.name = "host_const." + h.hex().substr(0, 16);
    for (int k = 2; here.contains(n.name); ++k) n.name = "host_const." + h.hex().substr(0, 16) + "." + std::to_string(k);
    here.insert(n.name);
    n.op = ir::Op::param;
    n.attrs = ir::make_attrs(ir::Op::param, {});
    n.type = {DType::f32, value.shape()};
    lifted.emplace(n.name, value);
  }
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
  std::map<std::string, int> host_params;    // name -> first use, for a deterministic order
  std::map<std::string, int> device_params;  // kernels' weight inputs with values, likewise

  std::vector<Partition> parts;
  for (const ProgramSpec& spec : programs) parts.push_back(plan_segments(spec.graph, partition_options(spec, o)));
  const KernelWeights form = choose_weights(parts, o, m.weights_reason);
  report.weights = form;
  if (form == KernelWeights::inputs)  // cut again, at the layers' ends, for kernels alike
    for (std::size_t pi = 0; pi < programs.size(); ++pi) {
      PartitionOptions po = partition_options(programs[pi], o);
      po.cut_after = programs[pi].layer_ends;
      po.weight_tensor_budget = 0;  // ANE037 counts BLOBFILE tensors; these weights are none
      parts[pi] = plan_segments(programs[pi].graph, po);
    }
  say("weights " + m.weights_reason);
  // Shared kernels by key (kernel_sharing.h): the folder and I/O of the first segment of each.
  struct Shared {
    std::string folder;
    KernelIo io;
    std::int64_t weight_bytes = 0;
    std::vector<std::string> warnings;
  };
  std::map<std::string, Shared> shared;
  const TensorMap no_weights;
  TensorMap lifted;  // host segments' large constants, now params (lift_constants)

  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    const ProgramSpec& spec = programs[pi];
    Partition& part = parts[pi];

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
      if (seg.placement == Placement::ane && form == KernelWeights::inputs) {
        const CanonicalKernel canon = canonical_kernel(seg.graph);
        step.weights = KernelWeights::inputs;
        for (ir::ValueId id : seg.graph.nodes_of(ir::Op::param)) {
          const std::string& param = seg.graph.node(id).name;
          if (weights.contains(param)) device_params.emplace(param, static_cast<int>(device_params.size()));
          else if (!o.runtime_weights) throw Error("write_ane_package: no value for param " + param + " (read by " + seg.name + ")");
        }
        auto found = shared.find(canon.key);
        if (found == shared.end()) {
          KernelOptions ko;
          ko.lowering.target = o.target;
          ko.lowering.kernel_name = seg.name;
          ko.lowering.runtime_weights = true;
          ko.lowering.io.seq = spec.seq;
          ko.mil.dialect = o.dialect;
          const BuiltKernel built = build_kernel(canon.graph, no_weights, dir.string(), ko);
          for (const ir::Diagnostic& d : built.lowered.diagnostics) report.diagnostics.push_back({seg.name + ": " + d.pass, d.message});
          Shared k{seg.name, built.lowered.io, seg.weight_bytes, {}};
          for (const AneViolation& w : built.lowered.warnings) k.warnings.push_back(w.message());
          found = shared.emplace(canon.key, std::move(k)).first;
          ++report.programs;
          say(seg.name + ": kernel, " + std::to_string(built.lowered.graph.size()) + " ops, weights as inputs, sequence " +
              std::to_string(built.lowered.io.seq) + " padded to " + std::to_string(built.lowered.io.padded_seq));
        } else {
          step.kernel = found->second.folder;
          say(seg.name + ": kernel " + found->second.folder + ", shared");
        }
        step.io = found->second.io;
        step.bind = step_bind(canon, step.io);
        for (const auto& [param, taken] : canon.parts)
          if (step.bind.contains(param)) step.weight_parts[param] = taken;
        step.weight_bytes = found->second.weight_bytes;
        step.warnings = found->second.warnings;
        ++report.kernels;
      } else if (seg.placement == Placement::ane) {
        KernelOptions ko;
        ko.lowering.target = o.target;
        ko.lowering.kernel_name = seg.name;
        ko.lowering.runtime_weights = o.runtime_weights;
        ko.lowering.given_int4 = o.given_int4.get();
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
        // What the device reads: the weight files as written (in the target's weight form, one
        // file or one per tensor on M1/M2).
        auto written = static_cast<std::int64_t>(built.mil.weights.count() > 0 ? built.mil.weights.bytes().size() : 0);
        for (const auto& [path, w] : built.mil.tensor_files) written += static_cast<std::int64_t>(w.bytes().size());
        step.weight_bytes = seg.weight_bytes;  // the on-chip budget's measure: the weights in fp16
        report.kernel_weight_bytes += written;
        ++report.kernels;
        ++report.programs;
        say(seg.name + ": kernel, " + std::to_string(k.graph.size()) + " ops, " +
            std::to_string(written / 1000000) + " MB of weight files, sequence " + std::to_string(k.io.seq) +
            " padded to " + std::to_string(k.io.padded_seq));
      } else {
        fs::create_directories(dir, ec);
        if (ec) throw Error::in_file(dir.string(), "cannot create the folder: " + ec.message());
        lift_constants(seg.graph, lifted);
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
  const auto in_order = [](const std::map<std::string, int>& first_use) {
    std::vector<std::pair<int, std::string>> order;
    for (const auto& [name, first] : first_use) order.emplace_back(first, name);
    std::sort(order.begin(), order.end());
    std::vector<std::string> names;
    for (auto& [first, name] : order) names.push_back(std::move(name));
    return names;
  };
  TensorMap host_values = weights;
  host_values.insert(lifted.begin(), lifted.end());
  m.host_weights = write_weight_file((root / kHostWeightsFile).string(), in_order(host_params), host_values, DType::f32,
                                     "read on the host", report.host_weight_bytes);
  if (!device_params.empty())
    m.device_weights = write_weight_file((root / kDeviceWeightsFile).string(), in_order(device_params), weights,
                                         DType::f16, "a kernel's input", report.kernel_weight_bytes);
  write_file_atomic((root / kManifestFile).string(), manifest_to_json(m).dump(2) + "\n");
  folder.commit(o.replace);
  return report;
}

}  // namespace orion::compile
