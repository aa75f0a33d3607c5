#include "ane_sim_run.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/content_hash.h"
#include "device/ane_bridge_apple.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "executable_identity.h"
#include "runtime/package_cache.h"

namespace orion::cli {

namespace {

// Everything a package depends on: the package format, the compiler (this executable), the
// model's architecture, shape and weights, and the options that shape the package.
std::string package_key(const model::CausalLm& m, const AnePackageOptions& o) {
  ContentHasher h;
  h.update(std::string(compile::kPackageFormat) + " " + std::to_string(compile::kPackageVersion));
  h.update(executable_identity());
  h.update(std::string(m.arch()) + " " + m.config_json());
  for (const auto& [name, t] : m.weights()) {
    h.update(name + " " + std::string(dtype_name(t.dtype())) + shape_str(t.shape()));
    const Tensor c = t.contiguous();
    h.update(std::span(c.raw(), c.nbytes()));
  }
  h.update("seq " + std::to_string(o.seq) + " context " + std::to_string(o.context) + (o.host_attention ? " host-attention " : " ") + o.dialect +
           (o.m1_m2 ? " m1" : "") + (o.allow_concat ? " concat" : "") + " chip " + std::to_string(o.on_chip_mb));
  return h.hex();
}

// The last position's logits of a prefill's rows [n, vocab].
Tensor last_row(const Tensor& rows) { return rows.slice(0, rows.dim(0) - 1, rows.dim(0)).contiguous(); }

// A decoder of one of the two device modes. Both start with the prefill program; after it,
// adopt_device_prefill() hands the session's state to whatever decodes.
class ModeDecoder : public model::Decoder {
 public:
  virtual void adopt_device_prefill() = 0;
};

// Everything on the device.
class DeviceDecoder final : public ModeDecoder {
 public:
  explicit DeviceDecoder(runtime::PackageSession& s) : s_(s) {}
  std::vector<float> prefill(std::span<const std::int32_t> tokens) override {
    if (tokens.empty()) throw Error("prefill: no tokens");
    Tensor last;
    std::size_t done = 0;
    if (fresh_) {
      done = std::min<std::size_t>(tokens.size(), static_cast<std::size_t>(s_.prefill_window()));
      const Tensor rows = s_.prefill(tokens.first(done));
      last = last_row(rows);
      adopt_device_prefill();
    }
    for (; done < tokens.size(); ++done) last = s_.decode(tokens[done]);
    return last.to_floats();
  }
  std::int64_t position() const override { return fresh_ ? 0 : s_.position(); }
  std::int64_t context() const override { return s_.capacity() + 1; }
  void reset() override { fresh_ = true; }
  void adopt_device_prefill() override { fresh_ = false; }

 private:
  runtime::PackageSession& s_;
  bool fresh_ = true;
};

// The prompt on the device, decoding on the CPU.
class PrefillOnDeviceDecoder final : public ModeDecoder {
 public:
  PrefillOnDeviceDecoder(runtime::PackageSession& s, const model::CausalLm& m, int threads)
      : s_(s), cpu_(m, {exec::Numerics::f32, threads}), layers_(m.layers()) {}
  std::vector<float> prefill(std::span<const std::int32_t> tokens) override {
    if (tokens.empty()) throw Error("prefill: no tokens");
    if (!fresh_) return cpu_.prefill(tokens);
    const std::size_t n = std::min<std::size_t>(tokens.size(), static_cast<std::size_t>(s_.prefill_window()));
    const Tensor rows = s_.prefill(tokens.first(n));
    adopt_device_prefill();
    if (n < tokens.size()) return cpu_.prefill(tokens.subspan(n));
    return last_row(rows).to_floats();
  }
  std::int64_t position() const override { return fresh_ ? 0 : cpu_.position(); }
  std::int64_t context() const override { return cpu_.context(); }
  void reset() override {
    fresh_ = true;
    cpu_.reset();
  }
  void adopt_device_prefill() override {
    std::vector<Tensor> k, v;
    for (std::int64_t l = 0; l < layers_; ++l) {
      k.push_back(s_.cache_rows("k." + std::to_string(l)));
      v.push_back(s_.cache_rows("v." + std::to_string(l)));
    }
    cpu_.load_cache(k, v);
    fresh_ = false;
  }

 private:
  runtime::PackageSession& s_;
  model::GraphSession cpu_;
  std::int64_t layers_;
  bool fresh_ = true;
};

}  // namespace

void add_ane_sim_run_options(CLI::App* cmd, AneSimRunOptions& o) {
  cmd->add_option("--package", o.package, "ane-sim, ane: run this package from `orion compile --target ane` (else the package cache's)");
  cmd->add_flag("--ane-prefill", o.ane_prefill, "ane-sim, ane: the prompt on the device, decoding on the CPU");
  cmd->add_flag("--no-cache", o.no_cache, "ane-sim, ane: compile into a temporary folder, not the package cache");
  add_ane_package_options(cmd, o.pkg);
}

AneSimRun::AneSimRun(const model::ModelFolder& md, const AneSimRunOptions& o, const std::function<void(const std::string&)>& say)
    : model_(md.lm()), source_(md.dir), o_(o) {
  // The Neural Engine first: where there is none, say so before compiling anything.
  if (o.device == "ane") device_ = device::open_ane_device();
  const std::string who = o.device + ": ";
  if (!o.package.empty()) {
    dir_ = o.package;
    say(who + "package " + dir_);
  } else if (o.no_cache) {
    temp_.emplace("orion-package");
    dir_ = temp_->path() + "/pkg";
    Stopwatch sw;
    compile_package(model_, source_, o.pkg, dir_, false, false);
    say(who + "compiled the model into a temporary package in " + std::to_string(sw.seconds()).substr(0, 5) + " s");
  } else {
    runtime::PackageCache cache(runtime::PackageCache::default_root());
    const std::string key = package_key(model_, o.pkg);
    const auto e = cache.get(key, [&](const std::string& dir) { compile_package(model_, source_, o.pkg, dir, true, false); });
    dir_ = e.dir;
    say(e.hit ? who + "package cache hit, " + dir_
              : who + "package cache miss: compiled into " + dir_ + " in " + std::to_string(e.compile_s).substr(0, 5) + " s");
  }
  const int threads = o.threads > 0 ? o.threads : 2;
  if (!device_) {
    device::AneSimOptions so;
    so.threads = threads;
    so.program_cache_dir = (std::filesystem::path(runtime::PackageCache::default_root()).parent_path() / "programs").string();
    so.target = compile::read_manifest(dir_).target;
    auto sim = std::make_unique<device::AneSim>(so);
    sim_ = sim.get();
    device_ = std::move(sim);
  }
  runner_ = std::make_unique<runtime::PackageRunner>(dir_, *device_, threads, &budget_);
  session_ = std::make_unique<runtime::PackageSession>(*runner_, !o.ane_prefill);
}

AneSimRun::~AneSimRun() = default;

namespace {

std::unique_ptr<ModeDecoder> mode_decoder(bool ane_prefill, runtime::PackageSession& s, const model::CausalLm& m, int threads) {
  if (ane_prefill) return std::make_unique<PrefillOnDeviceDecoder>(s, m, threads);
  return std::make_unique<DeviceDecoder>(s);
}

}  // namespace

std::unique_ptr<model::Decoder> AneSimRun::decoder() { return mode_decoder(o_.ane_prefill, *session_, model_, o_.threads); }

std::int64_t AneSimRun::max_window() const {
  return std::min(model_.context(), session_->capacity() + 1);
}

model::WindowLogitsFn AneSimRun::window_logits() {
  std::shared_ptr<ModeDecoder> dec = mode_decoder(o_.ane_prefill, *session_, model_, o_.threads);
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

std::string AneSimRun::profile() const {
  const runtime::RunnerStats& st = runner_->stats();
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s: %d compiles, %d program-cache hits (%.0f ms compiling and loading in the background, %.0f ms "
                "of it waited for); %d kernel runs %.0f ms, %d host steps %.0f ms, packing %.0f ms",
                o_.device.c_str(), device_->compiles(), sim_ ? sim_->cache_hits() : 0, st.compile_ms, st.compile_wait_ms,
                st.evaluations,
                st.device_ms, st.host_runs, st.host_ms, st.pack_ms);
  return buf;
}

std::string AneSimRun::profile_table() const {
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

}  // namespace orion::cli
