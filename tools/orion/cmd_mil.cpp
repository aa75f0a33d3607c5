// orion mil: a workbench for ANE programs written by hand or by other tools, as well as the
// kernel folders Orion writes. `check` prints the validator's verdict with rule ids, MIL lines,
// fixes and sources; `run` evaluates the program on ane-sim (or the ANE) with seeded or given
// inputs, writes the outputs as .npy and raw fp16, and with --compare runs the same program in
// f32 on the CPU executor and reports each output's error.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "compile/ane/program_check.h"
#include "compile/mil/mil_parser.h"
#include "compile/mil/mil_to_ir.h"
#include "compile/passes/to_fp16.h"
#include "compile/target.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/npy_file.h"
#include "core/random.h"
#include "device/ane_surface.h"
#include "exec/cpu/executor.h"
#include "runtime/device_factory.h"
#include "tensor_summary.h"

namespace orion::cli {

namespace fs = std::filesystem;

namespace {

struct TargetOpts {
  std::string target = "any";
};

void add_target_option(CLI::App* cmd, TargetOpts& o) {
  cmd->add_option("--target", o.target,
                  "Chip family whose rules apply: any (the rules every ANE keeps) or m1-m2 (stricter: ios16, no "
                  "cast, matmul inner dimensions of 32)")
      ->check(CLI::IsMember({"any", "m1-m2"}))
      ->capture_default_str();
}

compile::AneTarget target_of(const TargetOpts& o) {
  compile::AneTarget t;
  t.m1_m2 = o.target == "m1-m2";
  return t;
}

void require_program_folder(const std::string& dir) {
  if (!fs::is_directory(dir)) throw Error(dir + ": not a folder (a program folder holds model.mil and its weights/)");
  if (!fs::exists(fs::path(dir) / "model.mil")) throw Error(dir + ": no model.mil in it");
}

std::string type_str(const compile::MilVar& v) {
  return v.type.dtype + shape_str(v.type.shape);
}

void check_command(const std::string& dir, const TargetOpts& t) {
  require_program_folder(dir);
  const compile::ProgramVerdict v = compile::check_program_folder(dir, target_of(t));
  std::printf("%s: %d ops, %zu inputs, %zu outputs, weight files: ", v.mil_path.c_str(), v.ops, v.inputs.size(),
              v.outputs.size());
  for (std::size_t i = 0; i < v.weight_files.size(); ++i) std::printf("%s%s", i ? ", " : "", v.weight_files[i].c_str());
  std::printf("%s\n", v.weight_files.empty() ? "none" : "");
  const compile::AneTarget target = target_of(t);
  std::printf("  weight slots: %lld of %lld (%lld BLOBFILE tensors%s; ANE037)\n", static_cast<long long>(v.slots.total()),
              static_cast<long long>(target.max_weight_tensors), static_cast<long long>(v.slots.blobfile_tensors),
              v.slots.scalar_operand ? " + 1 for scalar operands" : "");
  if (v.slots.total() > target.max_weight_tensors)
    std::printf("  warning: over the %lld weight slots a program was seen to compile with (ANE037)\n",
                static_cast<long long>(target.max_weight_tensors));
  for (const compile::MilVar& in : v.inputs) std::printf("  input  %-24s %s\n", in.name.c_str(), type_str(in).c_str());
  for (const compile::MilVar& out : v.outputs) std::printf("  output %-24s %s\n", out.name.c_str(), type_str(out).c_str());
  for (const compile::ProgramFinding& f : v.findings) std::fputs(compile::describe_finding(f).c_str(), stdout);
  if (!v.unreadable.empty())
    std::printf("error: %s\n  (the program has no meaning the emulator can run, so the graph rules were not checked; "
                "the device's compiler refuses such a program too)\n",
                v.unreadable.c_str());
  const int errors = v.errors();
  const int warnings = static_cast<int>(v.findings.size()) - (errors - (v.unreadable.empty() ? 0 : 1));
  if (errors > 0) {
    const auto first = std::find_if(v.findings.begin(), v.findings.end(),
                                     [](const compile::ProgramFinding& f) { return f.violation.is_error(); });
    throw Error(dir + ": the device would reject this program: " + std::to_string(errors) + " error(s), " +
                std::to_string(warnings) + " warning(s); the first: " +
                (first != v.findings.end() ? std::string(first->violation.rule->id) + " at " + first->at
                                           : v.unreadable));
  }
  std::printf("%s: the %s rules hold (%d warning(s))\n", dir.c_str(), t.target == "m1-m2" ? "M1/M2" : "ANE",
              warnings);
}

struct RunOpts {
  std::string dir, inputs, out = "mil-run", device = "ane-sim";
  TargetOpts target;
  bool faithful = false, compare = false;
  std::uint64_t seed = 0;
  int threads = 2;
};

// The value bound to input `io`: DIR/NAME.npy when an inputs folder is given, else normal(0, 1)
// from the seed (the input's position in binding order keeps each input's values its own).
Tensor input_value(const RunOpts& o, const device::AneIo& io, std::size_t index) {
  if (!o.inputs.empty()) {
    const std::string path = (fs::path(o.inputs) / (io.name + ".npy")).string();
    if (!fs::exists(path)) throw Error(path + ": missing: --inputs needs one NAME.npy per program input");
    const Tensor t = read_npy(path);
    if (t.shape() != io.type.shape)
      throw Error(path + ": shape " + shape_str(t.shape()) + ", the program's input " + io.name + " is " +
                  io.type.str());
    if (!is_float(t.dtype())) throw Error(path + ": " + std::string(dtype_name(t.dtype())) + " values, the input is fp16");
    return t.to(DType::f16);
  }
  Rng rng(o.seed * 1000003 + index);
  Tensor t(DType::f32, io.type.shape);
  for (float& x : t.span<float>()) x = static_cast<float>(rng.normal());
  return t.to(DType::f16);
}

// One allocation size per direction (ANE010), at least the minimum surface (ANE012): the
// largest tensor's bytes, rounded up to it.
std::size_t surface_bytes(const std::vector<device::AneIo>& list) {
  std::int64_t bytes = compile::kMinSurfaceBytes;
  for (const device::AneIo& io : list) bytes = std::max(bytes, io.type.numel() * 2);
  return static_cast<std::size_t>(bytes);
}

void run_command(const RunOpts& o) {
  require_program_folder(o.dir);
  runtime::DeviceOptions d;
  d.kind = runtime::device_kind(o.device);
  if (d.kind == runtime::DeviceKind::cpu) throw Error("--device cpu: mil run runs programs on ane-sim or ane");
  d.threads = o.threads;
  d.target = target_of(o.target);
  d.faithful = o.faithful;
  const std::unique_ptr<device::AneDevice> dev = runtime::open_device(d);
  const device::AneProgramId id = dev->compile(o.dir);
  dev->load(id);
  const std::vector<device::AneIo>& ins = dev->inputs(id);
  const std::vector<device::AneIo>& outs = dev->outputs(id);

  fs::create_directories(fs::path(o.out) / "inputs");
  TensorMap bound;
  std::vector<device::AneSurface> in_surfaces, out_surfaces;
  const std::size_t in_bytes = surface_bytes(ins), out_bytes = surface_bytes(outs);
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const Tensor v = input_value(o, ins[i], i);
    write_npy((fs::path(o.out) / "inputs" / (ins[i].name + ".npy")).string(), v);
    in_surfaces.emplace_back(in_bytes);
    device::pack_fp16(v, in_surfaces.back());
    bound[ins[i].name] = v.to(DType::f32);
  }
  for (std::size_t i = 0; i < outs.size(); ++i) out_surfaces.emplace_back(out_bytes);
  std::vector<const device::AneSurface*> in_ptrs;
  std::vector<device::AneSurface*> out_ptrs;
  for (auto& s : in_surfaces) in_ptrs.push_back(&s);
  for (auto& s : out_surfaces) out_ptrs.push_back(&s);
  dev->evaluate(id, in_ptrs, out_ptrs);
  dev->unload(id);

  std::vector<Tensor> got;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    got.push_back(device::unpack_fp16(out_surfaces[i], outs[i].type.shape));
    const std::string base = (fs::path(o.out) / outs[i].name).string();
    write_npy(base + ".npy", got.back());
    write_file_atomic(base + ".f16", std::span<const std::byte>(got.back().raw(), got.back().nbytes()));
    std::printf("%s %s\n", outs[i].name.c_str(), summarize(got.back()).c_str());
  }
  std::fprintf(stderr, "ran %s on %s%s: %zu inputs (%s), outputs in %s/ (.npy and raw .f16)\n", o.dir.c_str(),
               o.device.c_str(), o.faithful ? " (faithful)" : "", ins.size(),
               o.inputs.empty() ? ("seed " + std::to_string(o.seed)).c_str() : o.inputs.c_str(), o.out.c_str());
  if (!o.compare) return;

  // The same text, read again and run in f32 on the CPU executor: what the program means
  // without the device's fp16 (every f16 value widened to f32).
  const std::string mil = (fs::path(o.dir) / "model.mil").string();
  const auto file = MappedFile::open(mil);
  ir::Graph g = compile::parse_mil(
      std::string_view(reinterpret_cast<const char*>(file->bytes().data()), file->size()), mil, o.dir);
  compile::widen_to_f32(g);
  exec::CpuOptions co;
  co.numerics = exec::Numerics::f32;
  co.threads = o.threads;
  exec::CpuExecutor ex(std::move(g), co);
  const std::vector<Tensor> want = ex.run(bound);
  const ir::Graph& graph = ex.graph();
  std::printf("compared with the program in f32 on the CPU:\n");
  for (std::size_t i = 0; i < outs.size(); ++i) {
    std::size_t k = 0;
    while (k < want.size() && graph.node(graph.outputs()[k]).name != outs[i].name) ++k;
    if (k == want.size()) throw Error(mil + ": output " + outs[i].name + " is not among the program's outputs");
    const std::vector<float> w = want[k].to_floats(), h = got[i].to_floats();
    double max_abs = 0;
    for (std::size_t j = 0; j < w.size(); ++j) max_abs = std::max(max_abs, std::abs(double(w[j]) - double(h[j])));
    std::printf("  %-24s relative rms error %.3g, max abs error %.3g\n", outs[i].name.c_str(),
                relative_rms(want[k], got[i]), max_abs);
  }
}

}  // namespace

void add_mil_command(CLI::App& app) {
  auto* mil = app.add_subcommand("mil", "Check and run ANE programs (a folder with model.mil and its weights)");
  mil->require_subcommand(1);

  auto* check = mil->add_subcommand("check", "Print the validator's verdict: rule ids, MIL lines, fixes, sources");
  auto dir = std::make_shared<std::string>();
  auto target = std::make_shared<TargetOpts>();
  check->add_option("dir", *dir, "Program folder (model.mil + weights/), e.g. a kernel folder of a package")->required();
  add_target_option(check, *target);
  check->callback([dir, target] { check_command(*dir, *target); });

  auto* run = mil->add_subcommand("run", "Run a program on ane-sim with seeded or given inputs; write the outputs");
  auto o = std::make_shared<RunOpts>();
  run->add_option("dir", o->dir, "Program folder (model.mil + weights/)")->required();
  run->add_option("--inputs", o->inputs, "Folder with NAME.npy per program input (f16 or f32); else seeded normal(0, 1)");
  run->add_option("--out", o->out, "Folder for the outputs (NAME.npy, NAME.f16) and the inputs used (inputs/)")
      ->capture_default_str();
  run->add_option("--seed", o->seed, "Seed of the random inputs")->capture_default_str();
  run->add_option("--device", o->device, "ane-sim, or ane on a Mac")->check(CLI::IsMember({"ane-sim", "ane"}))
      ->capture_default_str();
  run->add_flag("--faithful", o->faithful, "ane-sim does what the hardware does: silent failures stay silent");
  run->add_flag("--compare", o->compare, "Also run the program in f32 on the CPU and report each output's error");
  run->add_option("--threads", o->threads, "The emulator's threads")->check(CLI::PositiveNumber)->capture_default_str();
  add_target_option(run, o->target);
  run->callback([o] { run_command(*o); });
}

}  // namespace orion::cli
