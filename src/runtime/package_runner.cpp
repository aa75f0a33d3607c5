#include "runtime/package_runner.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>

#include "compile/blob/weight_blob_reader.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "ir/parser.h"
#include "runtime/segment_runner.h"

namespace orion::runtime {

namespace fs = std::filesystem;

struct PackageRunner::Kernel {
  // Written by the compile thread before `ready` is set; read by the caller's thread after it.
  device::AneProgramId id = -1;
  bool loaded = false;
  double compile_ms = 0;
  std::shared_future<void> ready;  // compiled, loaded and its bindings checked, or why not
  bool counted = false;            // its compile is in stats_
};

struct PackageRunner::StepState {
  StepState(device::AneDevice& device, const compile::PackageStep& s) : io(compile::bound_io(s)), surfaces(device, s.io) {}
  compile::KernelIo io;  // the step's names: what it reads from and writes to the table
  KernelSurfaces surfaces;
  int weights_version = -1;  // the runner's weights its surfaces hold; -1: none yet
};

namespace {

std::string read_text(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error::in_file(file, "cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<SegmentStep> segment_steps(const compile::PackageProgram& p) {
  std::vector<SegmentStep> out;
  for (const compile::PackageStep& s : p.steps) out.push_back({s.placement, s.name, s.inputs, s.params, s.outputs});
  return out;
}

}  // namespace

// The package as the segment runner's source: kernels compiled from their folders (on the
// compile thread, or now), host graphs parsed from theirs, host weights from host_weights.bin.
struct PackageRunner::Program final : SegmentSource {
  Program(PackageRunner& r, const compile::PackageProgram& p)
      : runner(r), program(p), segments(segment_steps(p), r.device_, *this, r.threads_) {}

  ReadyKernel kernel(std::size_t step, int /*lane*/) override {
    const compile::PackageStep& s = program.steps[step];
    Kernel& k = runner.kernel(s);
    StepState& st = runner.step_state(s);
    return {k.id, &st.io, &st.surfaces};
  }
  ir::Graph host_graph(std::size_t step) override {
    const std::string file = (fs::path(runner.dir_) / program.steps[step].name / compile::kHostGraphFile).string();
    return ir::parse_graph(read_text(file), file);
  }
  const Tensor& host_param(std::size_t step, const std::string& param) override {
    if (auto rt = runner.runtime_weights_.find(param); rt != runner.runtime_weights_.end()) return rt->second;
    auto it = runner.host_weights_.find(param);
    if (it == runner.host_weights_.end())
      throw Error::in_file((fs::path(runner.dir_) / compile::kManifestFile).string(),
                           "host step " + program.steps[step].name + " reads param " + param +
                               ", which host_weights does not hold");
    return it->second;
  }

  PackageRunner& runner;
  const compile::PackageProgram& program;  // in runner.manifest_
  SegmentRunner segments;
};

PackageRunner::PackageRunner(std::string dir, device::AneDevice& device, int threads, CompileBudget* budget,
                             bool background_compile)
    : dir_(std::move(dir)), device_(device), threads_(threads), budget_(budget), manifest_(compile::read_manifest(dir_)) {
  const std::string hw = (fs::path(dir_) / compile::kHostWeightsFile).string();
  const auto reader = std::make_shared<compile::WeightBlobReader>(compile::WeightBlobReader::open(hw));
  for (const compile::HostWeight& w : manifest_.host_weights) host_weights_[w.name] = reader->tensor(w.offset, DType::f32, w.shape);
  if (!manifest_.device_weights.empty()) {
    const std::string dw = (fs::path(dir_) / compile::kDeviceWeightsFile).string();
    const auto blobs = std::make_shared<compile::WeightBlobReader>(compile::WeightBlobReader::open(dw));
    for (const compile::HostWeight& w : manifest_.device_weights)
      kernel_weights_[w.name] = blobs->tensor(w.offset, DType::f16, w.shape);
  }
  if (background_compile) compiler_ = std::make_unique<SerialQueue>();
}

PackageRunner::~PackageRunner() {
  closing_ = true;
  compiler_.reset();  // the compile in progress finishes; the rest are skipped
  for (auto& [name, k] : kernels_) {
    if (!k->loaded) continue;
    try {
      device_.unload(k->id);
      if (budget_) budget_->note_unload();
    } catch (const Error&) {  // a device that failed is past caring; never throw from here
    }
  }
}

void PackageRunner::prepare(std::string_view name) {
  if (!compiler_) return;  // compiling on use: each kernel when its step comes
  for (const compile::PackageStep& s : manifest_.program(name).steps)
    if (s.placement == compile::Placement::ane && !kernels_.contains(compile::kernel_folder(s))) enqueue(s);
}

void PackageRunner::enqueue(const compile::PackageStep& step) {
  Kernel& k = *kernels_.emplace(compile::kernel_folder(step), std::make_unique<Kernel>()).first->second;
  // `step` lives in manifest_, `k` in kernels_: both outlive the compile thread.
  auto job = [this, &step, &k] { compile_kernel(step, k); };
  if (compiler_) {
    k.ready = compiler_->post(std::move(job));
    return;
  }
  std::packaged_task<void()> now(std::move(job));
  k.ready = now.get_future().share();
  now();
}

// On the compile thread. The budget is touched only here (and by the destructor, after the
// thread has gone), so it needs no lock.
void PackageRunner::compile_kernel(const compile::PackageStep& step, Kernel& k) {
  if (closing_) throw Error("package step " + step.name + ": not compiled, the runner was closing");
  if (budget_) {
    budget_->sync(device_.compiles());
    if (!budget_->allows_compile())
      throw Error("package step " + step.name + ": compiling it would take the process past its ANE compile budget (" +
                  std::to_string(budget_->compiles()) + " of " + std::to_string(budget_->limit()) +
                  " used, ANE030): restart the process from a checkpoint (runtime/supervisor.h)");
  }
  Stopwatch sw;
  const std::string folder = (fs::path(dir_) / compile::kernel_folder(step)).string();
  k.id = device_.compile(folder);
  device_.load(k.id);
  k.loaded = true;
  if (budget_) {
    budget_->sync(device_.compiles());
    budget_->note_load(step.name);
  }
  // The device must bind what the manifest says, in its order (ANE027): a package compiled by
  // another writer, or edited by hand, is caught here, not by wrong numbers.
  check_bindings(device_, k.id, step.io, (fs::path(folder) / "model.mil").string());
  k.compile_ms = sw.ms();
}

void PackageRunner::count_compile(const std::string& folder, Kernel& k) const {
  k.counted = true;
  stats_.compile_ms += k.compile_ms;
  stats_.steps[folder].compile_ms += k.compile_ms;
  ++stats_.compiles;
}

const RunnerStats& PackageRunner::stats() const {
  for (auto& [name, k] : kernels_)
    if (!k->counted && k->ready.wait_for(std::chrono::seconds(0)) == std::future_status::ready && k->loaded)
      count_compile(name, *k);
  return stats_;
}

PackageRunner::Kernel& PackageRunner::kernel(const compile::PackageStep& step) {
  Stopwatch sw;  // compiling on use, the run waits for all of it
  const std::string& folder = compile::kernel_folder(step);
  if (!kernels_.contains(folder)) enqueue(step);
  Kernel& k = *kernels_.at(folder);
  if (!k.counted) {
    k.ready.get();  // the compile's error, at the step that needs the kernel
    stats_.compile_wait_ms += sw.ms();
    stats_.steps[step.name].compile_wait_ms += sw.ms();
    count_compile(folder, k);
  }
  return k;
}

PackageRunner::StepState& PackageRunner::step_state(const compile::PackageStep& step) {
  auto it = step_states_.find(step.name);
  if (it == step_states_.end()) it = step_states_.emplace(step.name, std::make_unique<StepState>(device_, step)).first;
  StepState& st = *it->second;
  const auto unset = [&](const compile::KernelIoTensor& t) { return !t.weight.empty() && !kernel_weights_.contains(t.weight); };
  const bool takes_weights = std::any_of(st.io.inputs.begin(), st.io.inputs.end(),
                                         [](const compile::KernelIoTensor& t) { return !t.weight.empty(); });
  if (takes_weights && st.weights_version != weights_version_) {
    if (weights_version_ == 0 && std::any_of(st.io.inputs.begin(), st.io.inputs.end(), unset))
      throw Error("package step " + step.name + " takes runtime weights (" + dir_ +
                  " was compiled for a LoRA adapter's): none were given");
    stats_.weight_bytes += st.surfaces.write_weights(st.io, kernel_weights_);
    st.weights_version = weights_version_;
  }
  return st;
}

void PackageRunner::set_weights(const TensorMap& weights) {
  TensorMap taken;
  for (const compile::RuntimeWeight& w : manifest_.runtime_weights) {
    auto it = weights.find(w.name);
    if (it == weights.end()) throw Error::in_file(dir_, "takes the runtime weight " + w.name + ", which was not given");
    if (it->second.shape() != w.shape)
      throw Error::in_file(dir_, "takes the runtime weight " + w.name + " as " + shape_str(w.shape) + ", given " +
                                     shape_str(it->second.shape()));
    taken[w.name] = it->second.to(DType::f32).contiguous();
  }
  if (manifest_.runtime_weights.empty()) throw Error::in_file(dir_, "takes no runtime weights (compiled without an adapter)");
  for (const auto& [name, t] : taken) kernel_weights_[name] = t;
  runtime_weights_ = std::move(taken);
  ++weights_version_;
}

PackageRunner::Program& PackageRunner::program(const compile::PackageProgram& p) {
  auto it = programs_.find(p.name);
  if (it == programs_.end()) it = programs_.emplace(p.name, std::make_unique<Program>(*this, p)).first;
  return *it->second;
}

namespace {

const compile::PackageValue& boundary(const std::vector<compile::PackageValue>& list, std::string_view name,
                                      const compile::PackageProgram& p, const char* what) {
  for (const compile::PackageValue& v : list)
    if (v.name == name) return v;
  throw Error("program " + p.name + " has no " + what + " " + std::string(name));
}

}  // namespace

bool PackageRunner::kernels_only_read(std::string_view program, std::string_view input) const {
  const compile::PackageProgram& p = manifest_.program(program);
  const std::string& value = boundary(p.inputs, input, p, "input").value;
  for (const compile::PackageStep& s : p.steps)
    if (s.placement == compile::Placement::host && std::find(s.inputs.begin(), s.inputs.end(), value) != s.inputs.end())
      return false;
  return true;
}

std::vector<PackageRunner::SurfaceRef> PackageRunner::keep_resident(std::string_view program, std::string_view input) {
  if (!kernels_only_read(program, input))
    throw Error("program " + std::string(program) + ": input " + std::string(input) + " is read on the host: it cannot stay in kernel surfaces");
  const compile::PackageProgram& p = manifest_.program(program);
  const std::string& value = boundary(p.inputs, input, p, "input").value;
  std::vector<SurfaceRef> out;
  for (const compile::PackageStep& s : p.steps) {
    if (s.placement != compile::Placement::ane) continue;
    StepState* st = nullptr;
    for (const compile::KernelIoTensor& t : compile::bound_io(s).inputs)
      if (t.name == value) {
        kernel(s);
        st = &step_state(s);
        out.push_back({st->surfaces.keep_resident(st->io, value), {t.logical[1], t.padded[3]}});
      }
  }
  resident_[p.name].insert(value);
  return out;
}

PackageRunner::OutputRef PackageRunner::output_surface(std::string_view program, std::string_view output) const {
  const compile::PackageProgram& p = manifest_.program(program);
  const std::string& value = boundary(p.outputs, output, p, "output").value;
  for (const compile::PackageStep& s : p.steps) {
    if (s.placement != compile::Placement::ane) continue;
    for (const compile::KernelIoTensor& t : compile::bound_io(s).outputs) {
      if (t.name != value) continue;
      auto k = kernels_.find(compile::kernel_folder(s));
      auto st = step_states_.find(s.name);
      if (k == kernels_.end() || !k->second->counted || st == step_states_.end()) return {};  // not run yet
      return {st->second->surfaces.output(st->second->io, value), {t.logical[1], s.io.padded_seq}};
    }
  }
  return {};
}

TensorMap PackageRunner::run(std::string_view name, const TensorMap& inputs) {
  const compile::PackageProgram& p = manifest_.program(name);
  prepare(name);
  const auto resident = resident_.find(p.name);
  TensorMap table;
  for (const compile::PackageValue& v : p.inputs) {
    if (resident != resident_.end() && resident->second.contains(v.value)) continue;  // in its kernels' surfaces
    auto it = inputs.find(v.name);
    if (it == inputs.end()) throw Error("program " + p.name + ": input " + v.name + " is not given");
    if (it->second.shape() != v.shape)
      throw Error("program " + p.name + ": input " + v.name + " is " + shape_str(it->second.shape()) + ", the program takes " +
                  shape_str(v.shape));
    table[v.value] = it->second;
  }
  program(p).segments.run(table, 0, [&](std::size_t i, const StepTiming& t) {
    StepStats& ss = stats_.steps[p.steps[i].name];
    ++ss.runs;
    if (p.steps[i].placement == compile::Placement::ane) {
      stats_.packed_bytes += t.packed_bytes;
      ss.packed_bytes += t.packed_bytes;
      stats_.pack_ms += t.pack_ms;
      ss.pack_ms += t.pack_ms;
      stats_.device_ms += t.device_ms;
      ss.run_ms += t.device_ms;
      ++stats_.evaluations;
    } else {
      stats_.host_ms += t.host_ms;
      ss.run_ms += t.host_ms;
      ++stats_.host_runs;
    }
  });
  TensorMap out;
  for (const compile::PackageValue& v : p.outputs) out[v.name] = lookup_value(table, v.value, "(outputs)");
  return out;
}

}  // namespace orion::runtime
