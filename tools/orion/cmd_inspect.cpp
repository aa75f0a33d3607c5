// orion inspect PKG: a compiled ANE package, readably: what it was compiled from and for, and
// per program the steps in run order, each kernel's surfaces in binding order (the order the
// device binds them by, ANE027) and the weights it bakes, each host segment's values. And
// orion inspect FILE.gguf: a GGUF file's keys and tensors.
#include <algorithm>
#include <cstdio>
#include <map>

#include "commands.h"
#include "compile/ane/ane_package.h"
#include "compile/ane/weight_slots.h"
#include "compile/mil/mil_parser.h"
#include "device/ane_cost_model.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "model/formats/gguf.h"

namespace orion::cli {

namespace {

std::string mb(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

void print_surfaces(const char* role, const std::vector<compile::KernelIoTensor>& list) {
  int i = 0;
  for (const compile::KernelIoTensor& t : list)
    std::printf("      %s %d  %-22s %-18s padded %-18s %lld bytes%s\n", role, i++, t.name.c_str(), shape_str(t.logical).c_str(),
                shape_str(t.padded).c_str(), static_cast<long long>(t.bytes), t.fixed ? ", fixed length" : "");
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "-" : s;
}

// The program's weight slots against the target's limit (ANE037), counted on its MIL text.
void print_weight_slots(const std::string& mil, const compile::AneTarget& target) {
  const auto file = MappedFile::open(mil);
  const compile::MilAst ast =
      compile::parse_mil_ast(std::string_view(reinterpret_cast<const char*>(file->bytes().data()), file->size()), mil);
  for (const compile::MilFunction& f : ast.functions) {
    const compile::WeightSlots w = compile::count_weight_slots(f);
    std::printf("      weight slots %lld of %lld (%lld BLOBFILE tensors%s, ANE037)%s\n", static_cast<long long>(w.total()),
                static_cast<long long>(target.max_weight_tensors), static_cast<long long>(w.blobfile_tensors),
                w.scalar_operand ? " + 1 for scalar operands" : "",
                w.total() > target.max_weight_tensors ? ": over the limit a program was seen to compile with" : "");
  }
}

void print(const compile::PackageManifest& m, const std::string& dir) {
  std::printf("package %s\n", dir.c_str());
  std::printf("  model:   %s\n", m.model.dump().c_str());
  std::string weights(compile::weight_form_name(m.target.weights));
  if (m.target.weights == compile::WeightForm::lut4) weights += " (a table per " + std::to_string(m.target.weight_block) + " channels)";
  else if (m.target.weights != compile::WeightForm::fp16) weights += " (block " + std::to_string(m.target.weight_block) + ")";
  std::printf("  target:  MIL %s%s, concat %s, %s on chip per kernel, %s weights; %zu rules checked\n", m.dialect.c_str(),
              m.target.m1_m2 ? ", M1/M2" : "", m.target.allow_concat ? "on the ANE" : "on the host",
              mb(m.target.on_chip_bytes).c_str(), weights.c_str(), m.rules_checked.size());
  std::int64_t host_bytes = 0;
  for (const compile::HostWeight& w : m.host_weights) host_bytes += shape_numel(w.shape) * 4;
  std::printf("  host weights (%s, fp32): ", mb(host_bytes).c_str());
  for (std::size_t i = 0; i < m.host_weights.size(); ++i)
    std::printf("%s%s %s", i ? ", " : "", m.host_weights[i].name.c_str(), shape_str(m.host_weights[i].shape).c_str());
  std::printf("\n");
  if (!m.device_weights.empty()) {
    std::int64_t device_bytes = 0;
    for (const compile::HostWeight& w : m.device_weights) device_bytes += shape_numel(w.shape) * 2;
    std::printf("  kernels' weight inputs (%s, fp16): %zu params\n", mb(device_bytes).c_str(), m.device_weights.size());
  }
  if (!m.weights_reason.empty()) std::printf("  weights: %s\n", m.weights_reason.c_str());
  for (const compile::PackageProgram& p : m.programs) {
    int kernels = 0;
    std::int64_t bytes = 0;
    for (const compile::PackageStep& s : p.steps)
      if (s.placement == compile::Placement::ane) {
        ++kernels;
        bytes += s.weight_bytes;
      }
    std::printf("\nprogram %s: window of %lld tokens, %zu steps (%d kernels, %s of weights, %zu host segments)\n",
                p.name.c_str(), static_cast<long long>(p.seq), p.steps.size(), kernels, mb(bytes).c_str(),
                p.steps.size() - static_cast<std::size_t>(kernels));
    std::printf("  inputs:  ");
    for (const compile::PackageValue& v : p.inputs) std::printf("%s %s%s  ", v.name.c_str(), std::string(dtype_name(v.dtype)).c_str(), shape_str(v.shape).c_str());
    std::printf("\n  outputs: %zu (", p.outputs.size());
    for (std::size_t i = 0; i < p.outputs.size() && i < 3; ++i) std::printf("%s%s %s", i ? ", " : "", p.outputs[i].name.c_str(), shape_str(p.outputs[i].shape).c_str());
    std::printf("%s)\n", p.outputs.size() > 3 ? ", ..." : "");
    for (const compile::PackageStep& s : p.steps) {
      if (s.placement == compile::Placement::ane) {
        std::printf("  [stage %d] ane  %-16s %s of weights %s%s; sequence %lld padded to %lld; surfaces %lld bytes in, %lld out\n",
                    s.stage, s.name.c_str(), mb(s.weight_bytes).c_str(),
                    s.weights == compile::KernelWeights::inputs ? "as inputs" : "baked",
                    s.kernel.empty() ? "" : (", runs kernel " + s.kernel).c_str(), static_cast<long long>(s.io.seq),
                    static_cast<long long>(s.io.padded_seq), static_cast<long long>(s.io.input_bytes),
                    static_cast<long long>(s.io.output_bytes));
        const compile::KernelIo io = compile::bound_io(s);  // the step's names, not the shared kernel's
        print_surfaces("in ", io.inputs);
        print_surfaces("out", io.outputs);
        print_weight_slots(dir + "/" + compile::kernel_folder(s) + "/model.mil", m.target);
        for (const std::string& w : s.warnings) std::printf("      warning: %s\n", w.c_str());
      } else {
        std::printf("  [stage %d] host %-16s reads %s; writes %s; params %s\n", s.stage, s.name.c_str(),
                    joined(s.inputs).c_str(), joined(s.outputs).c_str(), joined(s.params).c_str());
      }
    }
  }
}

// The cost model's projection of each program on `chip` (device/ane_cost_model.h): what one run
// of each would take on the device, labelled as a projection.
void print_projection(const compile::PackageManifest& m, const std::string& chip_name) {
  const device::AneChip& chip = device::ane_chip(chip_name);
  std::printf("\nprojected on %s (a cost model, not a measurement: %.1f fp16 TFLOPS, %.1f GB/s, %.3f ms a dispatch; %s):\n",
              chip.name.c_str(), chip.fp16_tflops, chip.ane_gbps, chip.dispatch_ms, chip.basis.c_str());
  double one_stream = 0;  // decode's tokens a second
  for (const device::ProgramProjection& p : device::project_package(m, chip)) {
    std::printf("  %-12s %8.2f ms a run (%d evaluations, %.2f GFLOP, %.1f MB moved)", p.program.c_str(), p.ms,
                p.evaluations, p.flops / 1e9, p.bytes / 1e6);
    if (p.program == "decode" && p.ms > 0) {
      one_stream = 1e3 / p.ms;
      std::printf(": %.1f tok/s", one_stream);
    }
    if (p.program == "decode_batch" && p.ms > 0) {
      const auto streams = m.program(p.program).session.value("sequences", std::int64_t{1});
      const double rate = 1e3 * static_cast<double>(streams) / p.ms;
      std::printf(": %lld streams, %.1f tok/s together", static_cast<long long>(streams), rate);
      if (one_stream > 0) std::printf(" (%.2fx one stream's)", rate / one_stream);
    }
    std::printf("\n");
  }
}

// A GGUF file readably: its header, each key (arrays by their length and first entries) and
// each tensor with its type, shape and size.
void print_gguf(const std::string& path) {
  const model::GgufFile g = model::GgufFile::open(path);
  std::printf("GGUF %s: version %u, alignment %u, %zu keys, %zu tensors, data from byte %llu\n", path.c_str(), g.version(),
              g.alignment(), g.metadata().size(), g.tensors().size(), static_cast<unsigned long long>(g.data_begin()));
  const auto shown = [](const std::string& s) { return in_quotes(s.size() > 60 ? s.substr(0, 60) + "..." : s); };
  for (const auto& [key, v] : g.metadata()) {
    std::string text;
    for (std::size_t i = 0; i < std::min<std::size_t>(v.size(), 5); ++i) {
      text += i ? ", " : "";
      char real[32];
      if (!v.reals.empty()) std::snprintf(real, sizeof real, "%.9g", v.reals[i]);
      text += !v.strings.empty()                     ? shown(v.strings[i])
              : !v.reals.empty()                     ? std::string(real)
              : v.element == model::GgufType::boolean ? (v.ints[i] ? "true" : "false")
                                                     : std::to_string(v.ints[i]);
    }
    if (v.is_array())
      text = std::to_string(v.size()) + " " + std::string(model::gguf_type_name(v.element)) + " [" + text + (v.size() > 5 ? ", ..." : "") + "]";
    std::printf("  %-44s %s\n", key.c_str(), text.c_str());
  }
  std::map<std::string, std::pair<int, std::uint64_t>> by_type;
  for (const model::GgufTensorInfo& t : g.tensors()) {
    std::printf("  %-32s %-5s %-18s %s\n", t.name.c_str(), std::string(t.type_info().name).c_str(), shape_str(t.shape()).c_str(),
                mb(static_cast<std::int64_t>(t.bytes)).c_str());
    auto& [count, bytes] = by_type[std::string(t.type_info().name)];
    ++count;
    bytes += t.bytes;
  }
  for (const auto& [type, n] : by_type) std::printf("  %s: %d tensors, %s\n", type.c_str(), n.first, mb(static_cast<std::int64_t>(n.second)).c_str());
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto chip = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("inspect", "Show a compiled ANE package (from `orion compile --target ane`), or a GGUF file's keys and tensors");
  cmd->add_option("package", *dir, "Package folder, or a GGUF file")->required();
  cmd->add_flag("--json", *json, "Print the manifest (a GGUF file's header) as read and checked, as JSON");
  std::vector<std::string> chips;
  for (const device::AneChip& c : device::ane_chips()) chips.push_back(c.name);
  cmd->add_option("--chip", *chip, "Also project each program's device time on this chip (a cost model: docs/ane/COST_MODEL.md)")
      ->check(CLI::IsMember(chips));
  cmd->callback([dir, json, chip] {
    if (model::is_gguf_file(*dir)) {
      if (*json)
        std::printf("%s\n", model::gguf_header_json(model::GgufFile::open(*dir)).dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      else
        print_gguf(*dir);
      return;
    }
    const compile::PackageManifest m = compile::read_manifest(*dir);
    if (*json) std::printf("%s\n", compile::manifest_to_json(m).dump(2).c_str());
    else print(m, *dir);
    if (!chip->empty() && !*json) print_projection(m, *chip);
  });
}

}  // namespace orion::cli
