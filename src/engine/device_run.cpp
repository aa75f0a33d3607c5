#include "engine/device_run.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include "core/error.h"
#include "core/stopwatch.h"
#include "device/ane_sim.h"
#include "engine/device_decoders.h"
#include "runtime/package_cache.h"

namespace orion::engine {

DeviceRun::DeviceRun(const model::ModelFolder& md, const DeviceRunOptions& o, const std::function<void(const std::string&)>& say)
    : model_(md.lm()), source_(md.dir), o_(o), budget_(o.device_budget) {
  if (o.lora) o_.pkg.lora = o.lora->config;
  // The Neural Engine first: where there is none, say so before compiling anything.
  if (o.device == runtime::DeviceKind::ane) {
    runtime::DeviceOptions ane;
    ane.kind = runtime::DeviceKind::ane;
    device_ = runtime::open_device(ane);
  }
  const std::string who = std::string(runtime::device_kind_name(o.device)) + ": ";
  if (!o.package.empty()) {
    dir_ = o.package;
    say(who + "package " + dir_);
  } else if (o.no_cache) {
    temp_.emplace("orion-package");
    dir_ = temp_->path() + "/pkg";
    Stopwatch sw;
    compile_model_package(model_, source_, o_.pkg, dir_, false, false);
    say(who + "compiled the model into a temporary package in " + std::to_string(sw.seconds()).substr(0, 5) + " s");
  } else {
    runtime::PackageCache cache(runtime::PackageCache::default_root());
    const std::string key = package_key(model_, o_.pkg);
    const auto e = cache.get(key, [&](const std::string& dir) { compile_model_package(model_, source_, o_.pkg, dir, true, false); });
    dir_ = e.dir;
    say(e.hit ? who + "package cache hit, " + dir_
              : who + "package cache miss: compiled into " + dir_ + " in " + std::to_string(e.compile_s).substr(0, 5) + " s");
  }
  const int threads = o.threads > 0 ? o.threads : 2;
  if (!device_) {
    runtime::DeviceOptions sim = runtime::ane_sim_options(threads, compile::read_manifest(dir_).target);
    sim.program_cache_dir = runtime::default_program_cache_dir();
    device_ = runtime::open_device(sim);
  }
  runner_ = std::make_unique<runtime::PackageRunner>(dir_, *device_, threads, &budget_);
  // Every kernel folder of the programs this run uses is compiled once (steps may share one):
  // a package with more than a process may compile (ANE030) is refused here, before the first
  // compile, with what would fit, rather than at the kernel past the budget halfway through the
  // prompt.
  std::set<std::string> folders, prefill_folders;
  for (const compile::PackageProgram& p : runner_->manifest().programs)
    for (const compile::PackageStep& step : p.steps)
      if (step.placement == compile::Placement::ane) {
        if (p.name == "prefill" || !o.ane_prefill) folders.insert(compile::kernel_folder(step));
        if (p.name == "prefill") prefill_folders.insert(compile::kernel_folder(step));
      }
  const int kernels = static_cast<int>(folders.size()), prefill_kernels = static_cast<int>(prefill_folders.size());
  if (kernels > budget_.limit() - budget_.compiles())
    throw Error::in_file(dir_, "the package's programs hold " + std::to_string(kernels) + " kernels, more than the " +
                                   std::to_string(budget_.limit() - budget_.compiles()) +
                                   " compiles this process has left (ANE030)" +
                                   (!o.ane_prefill && prefill_kernels <= budget_.limit() - budget_.compiles()
                                        ? ": run the prompt on the device and decoding on the CPU (--ane-prefill, " +
                                              std::to_string(prefill_kernels) + " kernels)"
                                        : ": the model is too large to run whole on the device in one process"));
  if (o.lora) set_adapter(*o.lora);
  session_ = std::make_unique<runtime::PackageSession>(*runner_, !o.ane_prefill);
  // What the context costs: the decode program's KV-cache inputs, resident fp16 surfaces.
  if (const compile::PackageProgram* decode = runner_->manifest().find_program("decode"); decode && !o.ane_prefill) {
    std::int64_t bytes = 0;
    for (const compile::PackageValue& v : decode->inputs)
      if (v.name.starts_with("past_")) bytes += shape_numel(v.shape) * 2;
    if (bytes > 0 && decode->session.contains("capacity")) {
      char mb[32];
      std::snprintf(mb, sizeof mb, "%.1f", static_cast<double>(bytes) / 1e6);
      say(who + "KV cache of " + std::to_string(decode->session["capacity"].get<std::int64_t>()) + " positions, " + mb +
          " MB of fp16 surfaces");
    }
  }
}

DeviceRun::~DeviceRun() = default;

void DeviceRun::set_adapter(const model::LoraAdapter& adapter) {
  if (!o_.pkg.lora || adapter.config.rank != o_.pkg.lora->rank || adapter.config.targets != o_.pkg.lora->targets)
    throw Error::in_file(adapter.source, "is not an adapter of the rank and targets the device's kernels were compiled for");
  runner_->set_weights(model::lora_runtime_weights(adapter));
}

std::unique_ptr<Decoder> DeviceRun::decoder() { return device_mode_decoder(o_.ane_prefill, *session_, model_, o_.threads); }

std::unique_ptr<Decoder> DeviceRun::batch_decoder() {
  if (!batch_) {
    batch_ = std::make_unique<runtime::PackageBatch>(*runner_);
    slots_taken_ = std::make_shared<std::vector<bool>>(static_cast<std::size_t>(batch_->sequences()), false);
  }
  std::vector<bool>& taken = *slots_taken_;
  for (std::size_t s = 0; s < taken.size(); ++s)
    if (!taken[s]) {
      taken[s] = true;
      return batch_slot_decoder(*batch_, static_cast<int>(s), [t = slots_taken_](int slot) { (*t)[static_cast<std::size_t>(slot)] = false; },
                                model_.vocab_size());
    }
  throw Error("device batch: all " + std::to_string(taken.size()) + " slots are in use");
}

std::int64_t DeviceRun::batch_slots() const {
  const compile::PackageProgram* p = runner_->manifest().find_program("decode_batch");
  return p ? p->session.value("sequences", std::int64_t{0}) : 0;
}

std::int64_t DeviceRun::max_window() const {
  return std::min(model_.context(), session_->capacity() + 1);
}

WindowLogitsFn DeviceRun::window_logits() {
  std::shared_ptr<DeviceModeDecoder> dec = device_mode_decoder(o_.ane_prefill, *session_, model_, o_.threads);
  const std::int64_t vocab = model_.vocab_size();
  return [this, dec, vocab](std::span<const std::int32_t> tokens) {
    const auto n = static_cast<std::int64_t>(tokens.size());
    const std::int64_t split = std::clamp<std::int64_t>(n / 2, 1, session_->prefill_window());
    Tensor out(DType::f32, {n, vocab});
    const Tensor rows = session_->prefill(tokens.first(static_cast<std::size_t>(split)));
    std::memcpy(out.raw(), rows.raw(), rows.nbytes());
    dec->adopt_device_prefill();
    for (std::int64_t t = split; t < n; ++t) {
      const std::vector<float> l = dec->decode(tokens[static_cast<std::size_t>(t)]);
      std::memcpy(out.data<float>() + t * vocab, l.data(), l.size() * sizeof(float));
    }
    return out;
  };
}

std::string DeviceRun::profile() const {
  const runtime::RunnerStats& st = runner_->stats();
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s: %d compiles, %d program-cache hits (%.0f ms compiling and loading in the background, %.0f ms "
                "of it waited for); %d kernel runs %.0f ms, %d host steps %.0f ms, packing %.0f ms",
                std::string(runtime::device_kind_name(o_.device)).c_str(), device_->compiles(), emulator_cache_hits(), st.compile_ms, st.compile_wait_ms,
                st.evaluations,
                st.device_ms, st.host_runs, st.host_ms, st.pack_ms);
  return buf;
}

std::string DeviceRun::profile_table() const {
  std::string out = "step                  kind  compile+load ms   runs   ms/run  pack ms/run\n";
  for (const compile::PackageProgram& p : runner_->manifest().programs)
    for (const compile::PackageStep& s : p.steps) {
      const auto it = runner_->stats().steps.find(s.name);
      if (it == runner_->stats().steps.end()) continue;
      const runtime::StepStats& st = it->second;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%-21s %-5s %15.1f %6d %8.2f %12.2f\n", s.name.c_str(),
                    std::string(compile::placement_name(s.placement)).c_str(), st.compile_ms, st.runs,
                    st.runs ? st.run_ms / st.runs : 0.0, st.runs ? st.pack_ms / st.runs : 0.0);
      out += buf;
    }
  return out;
}

int DeviceRun::emulator_cache_hits() const {
  const auto* sim = dynamic_cast<const device::AneSim*>(device_.get());
  return sim ? sim->cache_hits() : 0;
}

}  // namespace orion::engine
