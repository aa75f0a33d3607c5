#include "runtime/package_runner.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compile/weight_blob_reader.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "device/ane_packing.h"
#include "exec/cpu/executor.h"
#include "ir/parser.h"

namespace orion::runtime {

namespace fs = std::filesystem;

struct PackageRunner::Kernel {
  device::AneProgramId id = -1;
  std::vector<device::AneSurface> in, out;
};

struct PackageRunner::Host {
  std::unique_ptr<exec::CpuExecutor> exec;
};

namespace {

std::string read_text(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error::in_file(file, "cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const Tensor& lookup(const Values& table, const std::string& name, const std::string& step) {
  auto it = table.find(name);
  if (it == table.end()) throw Error("package step " + step + ": no value %" + name + " was computed before it");
  return it->second;
}

}  // namespace

PackageRunner::PackageRunner(std::string dir, device::AneDevice& device, int threads, CompileBudget* budget)
    : dir_(std::move(dir)), device_(device), threads_(threads), budget_(budget), manifest_(compile::read_manifest(dir_)) {
  const std::string hw = (fs::path(dir_) / compile::kHostWeightsFile).string();
  const auto reader = std::make_shared<compile::WeightBlobReader>(compile::WeightBlobReader::open(hw));
  for (const compile::HostWeight& w : manifest_.host_weights) host_weights_[w.name] = reader->tensor(w.offset, DType::f32, w.shape);
}

PackageRunner::~PackageRunner() {
  for (auto& [name, k] : kernels_) {
    try {
      device_.unload(k->id);
      if (budget_) budget_->note_unload();
    } catch (const Error&) {  // a device that failed is past caring; never throw from here
    }
  }
}

PackageRunner::Kernel& PackageRunner::kernel(const compile::PackageStep& step) {
  auto it = kernels_.find(step.name);
  if (it != kernels_.end()) return *it->second;
  auto k = std::make_unique<Kernel>();
  if (budget_) {
    budget_->sync(device_.compiles());
    if (!budget_->allows_compile())
      throw Error("package step " + step.name + ": compiling it would take the process past its ANE compile budget (" +
                  std::to_string(budget_->compiles()) + " of " + std::to_string(budget_->limit()) +
                  " used, ANE030): restart the process from a checkpoint (runtime/supervisor.h)");
  }
  Stopwatch sw;
  k->id = device_.compile((fs::path(dir_) / step.name).string());
  device_.load(k->id);
  if (budget_) {
    budget_->sync(device_.compiles());
    budget_->note_load(step.name);
  }
  stats_.compile_ms += sw.ms();
  stats_.steps[step.name].compile_ms += sw.ms();
  ++stats_.compiles;
  // The device must bind what the manifest says, in its order (ANE027): a package compiled by
  // another writer, or edited by hand, is caught here, not by wrong numbers.
  const auto check = [&](const std::vector<device::AneIo>& got, const std::vector<compile::KernelIoTensor>& want,
                         const char* what) {
    bool same = got.size() == want.size();
    for (std::size_t i = 0; same && i < got.size(); ++i) same = got[i].name == want[i].name && got[i].type.shape == want[i].padded;
    if (!same)
      throw Error::in_file((fs::path(dir_) / step.name / "model.mil").string(),
                           std::string("the program's ") + what + " are not the ones the manifest lists");
  };
  check(device_.inputs(k->id), step.io.inputs, "inputs");
  check(device_.outputs(k->id), step.io.outputs, "outputs");
  for (std::size_t i = 0; i < step.io.inputs.size(); ++i) k->in.emplace_back(static_cast<std::size_t>(step.io.input_bytes));
  for (std::size_t i = 0; i < step.io.outputs.size(); ++i) k->out.emplace_back(static_cast<std::size_t>(step.io.output_bytes));
  return *kernels_.emplace(step.name, std::move(k)).first->second;
}

PackageRunner::Host& PackageRunner::host(const compile::PackageStep& step) {
  auto it = hosts_.find(step.name);
  if (it != hosts_.end()) return *it->second;
  const std::string file = (fs::path(dir_) / step.name / compile::kHostGraphFile).string();
  auto h = std::make_unique<Host>();
  h->exec = std::make_unique<exec::CpuExecutor>(ir::parse_graph(read_text(file), file),
                                                exec::CpuOptions{exec::Numerics::f32, threads_});
  return *hosts_.emplace(step.name, std::move(h)).first->second;
}

void PackageRunner::run_kernel(const compile::PackageStep& step, Values& table) {
  Kernel& k = kernel(step);
  StepStats& ss = stats_.steps[step.name];
  Stopwatch sw;
  std::vector<const device::AneSurface*> ins;
  for (std::size_t i = 0; i < step.io.inputs.size(); ++i) {
    const compile::KernelIoTensor& t = step.io.inputs[i];
    const Tensor& v = lookup(table, t.name, step.name);
    if (v.shape() != Shape{t.logical[3], t.logical[1]})
      throw Error("package step " + step.name + ": %" + t.name + " is " + shape_str(v.shape()) + ", the kernel reads [" +
                  std::to_string(t.logical[3]) + ", " + std::to_string(t.logical[1]) + "]");
    device::pack_token_major(v, step.io.padded_seq, k.in[i]);
    ins.push_back(&k.in[i]);
  }
  std::vector<device::AneSurface*> outs;
  for (device::AneSurface& s : k.out) outs.push_back(&s);
  stats_.pack_ms += sw.ms();
  ss.pack_ms += sw.ms();
  sw.restart();
  // Only the first seq columns are read back below: the device may skip the padding ones.
  device_.evaluate_live(k.id, ins, outs, step.io.seq);
  stats_.device_ms += sw.ms();
  ss.run_ms += sw.ms();
  ++ss.runs;
  ++stats_.evaluations;
  sw.restart();
  for (std::size_t i = 0; i < step.io.outputs.size(); ++i) {
    const compile::KernelIoTensor& t = step.io.outputs[i];
    table[t.name] = device::unpack_token_major(k.out[i], t.logical[1], step.io.seq, step.io.padded_seq);
  }
  stats_.pack_ms += sw.ms();
  ss.pack_ms += sw.ms();
}

void PackageRunner::run_host(const compile::PackageStep& step, Values& table) {
  Host& h = host(step);
  Stopwatch sw;
  exec::Bindings b;
  for (const std::string& in : step.inputs) b[in] = lookup(table, in, step.name);
  for (const std::string& p : step.params) {
    auto it = host_weights_.find(p);
    if (it == host_weights_.end())
      throw Error::in_file((fs::path(dir_) / compile::kManifestFile).string(),
                           "host step " + step.name + " reads param " + p + ", which host_weights does not hold");
    b[p] = it->second;
  }
  std::vector<Tensor> out = h.exec->run(b);
  for (std::size_t i = 0; i < step.outputs.size(); ++i) table[step.outputs[i]] = std::move(out[i]);
  stats_.host_ms += sw.ms();
  StepStats& ss = stats_.steps[step.name];
  ss.run_ms += sw.ms();
  ++ss.runs;
  ++stats_.host_runs;
}

Values PackageRunner::run(std::string_view name, const Values& inputs) {
  const compile::PackageProgram& p = manifest_.program(name);
  Values table;
  for (const compile::PackageValue& v : p.inputs) {
    auto it = inputs.find(v.name);
    if (it == inputs.end()) throw Error("program " + p.name + ": input " + v.name + " is not given");
    if (it->second.shape() != v.shape)
      throw Error("program " + p.name + ": input " + v.name + " is " + shape_str(it->second.shape()) + ", the program takes " +
                  shape_str(v.shape));
    table[v.value] = it->second;
  }
  for (const compile::PackageStep& s : p.steps) {
    if (s.placement == compile::Placement::ane) run_kernel(s, table);
    else run_host(s, table);
  }
  Values out;
  for (const compile::PackageValue& v : p.outputs) out[v.name] = lookup(table, v.value, "(outputs)");
  return out;
}

}  // namespace orion::runtime
