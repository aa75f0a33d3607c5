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
    // The rest in chunks where the package has an extend program, else a token a run.
    while (done < tokens.size()) {
      const auto room = static_cast<std::size_t>(std::max<std::int64_t>(0, s_.capacity() - s_.position()));
      const std::size_t n =
          s_.chunk() > 1 ? std::max<std::size_t>(1, std::min({tokens.size() - done, static_cast<std::size_t>(s_.chunk()), room})) : 1;
      last = n > 1 ? last_row(s_.extend(tokens.subspan(done, n))) : s_.decode(tokens[done]);
      done += n;
    }
    return last.reshape({-1}).to_floats();
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

// One slot of a batch on the device.
class BatchSlotDecoder final : public Decoder {
 public:
  BatchSlotDecoder(runtime::PackageBatch& b, int slot, std::function<void(int)> release, std::int64_t vocab)
      : b_(b), slot_(slot), release_(std::move(release)), vocab_(vocab) {}
  ~BatchSlotDecoder() override {
    if (release_) release_(slot_);
  }
  std::vector<float> prefill(std::span<const std::int32_t> tokens) override {
    check_decoder_tokens(tokens, position(), context(), vocab_, "device batch");
    Tensor last;
    std::size_t done = 0;
    if (fresh_) {
      done = std::min<std::size_t>(tokens.size(), static_cast<std::size_t>(b_.prefill_window()));
      last = last_row(b_.prefill(slot_, tokens.first(done)));
      fresh_ = false;
    }
    for (; done < tokens.size(); ++done) last = b_.decode(std::span(&slot_, 1), tokens.subspan(done, 1));
    return last.reshape({-1}).to_floats();
  }
  std::int64_t position() const override { return fresh_ ? 0 : b_.position(slot_); }
  std::int64_t context() const override { return b_.capacity() + 1; }
  void reset() override { fresh_ = true; }
  const void* batch_key() const override { return &b_; }

 protected:
  void decode_batch_of(std::span<Decoder* const> sessions, std::span<const std::int32_t> tokens,
                       std::vector<std::vector<float>>& logits) override {
    std::vector<int> slots;
    for (std::size_t i = 0; i < sessions.size(); ++i) {
      auto* d = static_cast<BatchSlotDecoder*>(sessions[i]);  // batch_key: a slot of this batch
      if (d->fresh_) throw Error("decode_batch: a session of the batch has no prompt yet");
      check_decoder_tokens(tokens.subspan(i, 1), d->position(), d->context(), vocab_, "device batch");
      slots.push_back(d->slot_);
    }
    const Tensor rows = b_.decode(slots, tokens);
    logits.resize(sessions.size());
    for (std::size_t i = 0; i < sessions.size(); ++i) {
      const float* r = rows.data<float>() + static_cast<std::int64_t>(i) * rows.dim(1);
      logits[i].assign(r, r + rows.dim(1));
    }
  }

 private:
  runtime::PackageBatch& b_;
  int slot_;
  std::function<void(int)> release_;
  std::int64_t vocab_;
  bool fresh_ = true;
};

}  // namespace

std::unique_ptr<Decoder> batch_slot_decoder(runtime::PackageBatch& batch, int slot, std::function<void(int)> release,
                                            std::int64_t vocab) {
  return std::make_unique<BatchSlotDecoder>(batch, slot, std::move(release), vocab);
}

std::unique_ptr<DeviceModeDecoder> device_mode_decoder(bool prefill_on_device, runtime::PackageSession& s,
                                                       const model::CausalLm& m, int threads) {
  if (prefill_on_device) return std::make_unique<PrefillOnDeviceDecoder>(s, m, threads);
  return std::make_unique<DeviceDecoder>(s);
}

}  // namespace orion::engine
