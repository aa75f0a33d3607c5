#include "runtime/program_run.h"

#include <algorithm>
#include <filesystem>

#include "compile/mil/mil_to_ir.h"
#include "compile/passes/to_fp16.h"
#include "compile/target.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/npy_file.h"
#include "core/random.h"
#include "device/ane_bridge_rules.h"
#include "device/ane_surface.h"
#include "exec/cpu/executor.h"

namespace orion::runtime {

namespace fs = std::filesystem;

namespace {

// The value bound to input `io`, in its dtype (the surface holds fp16 or fp32 as the program
// declares): DIR/NAME.npy when an inputs folder is given, else normal(0, 1) from the seed (the
// input's position in binding order keeps each input's values its own).
Tensor program_input(const ProgramRunOptions& o, const device::AneIo& io, std::size_t index) {
  if (const auto given = o.values.find(io.name); given != o.values.end()) {
    if (given->second.shape() != io.type.shape)
      throw Error("input " + io.name + ": the value given has shape " + shape_str(given->second.shape()) +
                  ", the program's input is " + io.type.str());
    return given->second.to(io.type.dtype);
  }
  if (!o.inputs.empty()) {
    const std::string path = (fs::path(o.inputs) / (io.name + ".npy")).string();
    if (!fs::exists(path)) throw Error(path + ": missing: --inputs needs one NAME.npy per program input");
    const Tensor t = read_npy(path);
    if (t.shape() != io.type.shape)
      throw Error(path + ": shape " + shape_str(t.shape()) + ", the program's input " + io.name + " is " +
                  io.type.str());
    if (!is_float(t.dtype()))
      throw Error(path + ": " + std::string(dtype_name(t.dtype())) + " values, the program's input " + io.name + " is " +
                  io.type.str());
    return t.to(io.type.dtype);
  }
  Rng rng(o.seed * 1000003 + index);
  Tensor t(DType::f32, io.type.shape);
  for (float& x : t.span<float>()) x = static_cast<float>(rng.normal());
  return t.to(io.type.dtype);
}

// Throws unless every input and output of the program is fp16 or fp32, the two dtypes a surface
// is written in.
void require_surface_dtypes(const std::string& dir, const std::vector<device::AneIo>& list, const char* role) {
  for (const device::AneIo& io : list)
    if (io.type.dtype != DType::f16 && io.type.dtype != DType::f32)
      throw Error(dir + ": " + role + " " + io.name + " is " + io.type.str() +
                  ": mil run writes and reads surfaces of fp16 or fp32 only");
}

// One allocation size per direction (ANE010), at least the minimum surface (ANE012): the
// largest tensor's bytes in its own dtype (an fp32 value takes 4), rounded up to it.
std::size_t program_surface_bytes(const std::vector<device::AneIo>& list) {
  std::size_t bytes = static_cast<std::size_t>(compile::kMinSurfaceBytes);
  for (const device::AneIo& io : list) bytes = std::max(bytes, device::surface_bytes(io));
  return bytes;
}

// The same text, read again and run in f32 on the CPU executor (every f16 value widened to
// f32): `outputs`' values in their order.
std::vector<Tensor> cpu_reference(const std::string& dir, const std::vector<ProgramValue>& inputs,
                                  const std::vector<ProgramValue>& outputs, int threads) {
  const std::string mil = (fs::path(dir) / "model.mil").string();
  const auto file = MappedFile::open(mil);
  ir::Graph g = compile::parse_mil(
      std::string_view(reinterpret_cast<const char*>(file->bytes().data()), file->size()), mil, dir);
  compile::widen_to_f32(g);
  exec::CpuOptions co;
  co.numerics = exec::Numerics::f32;
  co.threads = threads;
  exec::CpuExecutor ex(std::move(g), co);
  TensorMap bound;
  for (const ProgramValue& in : inputs) bound[in.name] = in.value.to(DType::f32);
  const std::vector<Tensor> want = ex.run(bound);
  const ir::Graph& graph = ex.graph();
  std::vector<Tensor> out;
  for (const ProgramValue& o : outputs) {
    std::size_t k = 0;
    while (k < want.size() && graph.node(graph.outputs()[k]).name != o.name) ++k;
    if (k == want.size()) throw Error(mil + ": output " + o.name + " is not among the program's outputs");
    out.push_back(want[k]);
  }
  return out;
}

}  // namespace

void require_program_folder(const std::string& dir) {
  if (!fs::is_directory(dir)) throw Error(dir + ": not a folder (a program folder holds model.mil and its weights/)");
  if (!fs::exists(fs::path(dir) / "model.mil")) throw Error(dir + ": no model.mil in it");
}

ProgramRun run_program_folder(const std::string& dir, const ProgramRunOptions& o) {
  require_program_folder(dir);
  if (o.device.kind == DeviceKind::cpu) throw Error("--device cpu: mil run runs programs on ane-sim or ane");
  const std::unique_ptr<device::AneDevice> dev = open_device(o.device);
  return run_program_folder(dir, *dev, o);
}

ProgramRun run_program_folder(const std::string& dir, device::AneDevice& dev, const ProgramRunOptions& o) {
  require_program_folder(dir);
  if (o.evaluations < 1) throw Error(dir + ": " + std::to_string(o.evaluations) + " evaluations: at least one is needed");
  const device::AneProgramId id = dev.compile(dir);
  dev.load(id);
  ProgramRun run;
  std::vector<device::AneSurface> out_surfaces;
  const std::vector<device::AneIo> outs = dev.outputs(id);  // a copy: read again after the unload
  try {
    const std::vector<device::AneIo>& ins = dev.inputs(id);
    require_surface_dtypes(dir, ins, "input");
    require_surface_dtypes(dir, outs, "output");
    std::vector<device::AneSurface> in_surfaces;
    const std::size_t in_bytes = program_surface_bytes(ins), out_bytes = program_surface_bytes(outs);
    for (std::size_t i = 0; i < ins.size(); ++i) {
      run.inputs.push_back({ins[i].name, program_input(o, ins[i], i)});
      in_surfaces.emplace_back(in_bytes);
      device::pack_io(run.inputs.back().value, ins[i].type.dtype, in_surfaces.back());
    }
    for (std::size_t i = 0; i < outs.size(); ++i) out_surfaces.emplace_back(out_bytes);
    std::vector<const device::AneSurface*> in_ptrs;
    std::vector<device::AneSurface*> out_ptrs;
    for (auto& s : in_surfaces) in_ptrs.push_back(&s);
    for (auto& s : out_surfaces) out_ptrs.push_back(&s);
    for (int e = 0; e < o.evaluations; ++e) dev.evaluate(id, in_ptrs, out_ptrs);
  } catch (...) {
    dev.unload(id);
    throw;
  }
  dev.unload(id);
  for (std::size_t i = 0; i < outs.size(); ++i)
    run.outputs.push_back({outs[i].name, device::unpack_io(out_surfaces[i], outs[i].type.dtype, outs[i].type.shape)});
  if (o.compare) run.reference = cpu_reference(dir, run.inputs, run.outputs, o.cpu_threads);
  return run;
}

void write_program_run(const ProgramRun& run, const std::string& out) {
  fs::create_directories(fs::path(out) / "inputs");
  for (const ProgramValue& in : run.inputs) write_npy((fs::path(out) / "inputs" / (in.name + ".npy")).string(), in.value);
  for (const ProgramValue& o : run.outputs) {
    const std::string base = (fs::path(out) / o.name).string();
    write_npy(base + ".npy", o.value);
    write_file_atomic(base + (o.value.dtype() == DType::f32 ? ".f32" : ".f16"),
                      std::span<const std::byte>(o.value.raw(), o.value.nbytes()));
  }
}

}  // namespace orion::runtime
