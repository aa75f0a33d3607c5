#include "engine/device_decoders.h"

#include <algorithm>

#include "core/error.h"
#include "engine/graph_session.h"

namespace orion::engine {

namespace {

// The last position's logits of a prefill's rows [n, vocab].
Tensor last_row(const Tensor& rows) { return rows.slice(0, rows.dim(0) - 1, rows.dim(0)).contiguous(); }

// Everything on the device.
class DeviceDecoder final : public DeviceModeDecoder {
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
class PrefillOnDeviceDecoder final : public DeviceModeDecoder {
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
  GraphSession cpu_;
  std::int64_t layers_;
  bool fresh_ = true;
};

}  // namespace

std::unique_ptr<DeviceModeDecoder> device_mode_decoder(bool prefill_on_device, runtime::PackageSession& s,
                                                       const model::CausalLm& m, int threads) {
  if (prefill_on_device) return std::make_unique<PrefillOnDeviceDecoder>(s, m, threads);
  return std::make_unique<DeviceDecoder>(s);
}

}  // namespace orion::engine
