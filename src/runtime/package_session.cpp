#include "runtime/package_session.h"

#include <cstring>
#include <limits>

#include "core/error.h"
#include "device/ane_packing.h"
#include "runtime/session_block.h"

namespace orion::runtime {

using nlohmann::json;

PackageSession::PackageSession(PackageRunner& runner, bool decodes) : runner_(runner), decodes_(decodes) {
  const compile::PackageProgram& pre = runner.manifest().program("prefill");
  const compile::PackageProgram& dec = runner.manifest().program("decode");
  prefill_seq_ = pre.seq;
  capacity_ = session_int(dec, "capacity");
  const json& pc = pre.session.value("cache", json::array());
  const json& dc = dec.session.value("cache", json::array());
  if (!pc.is_array() || !dc.is_array() || pc.size() != dc.size())
    throw Error("package: the prefill and decode programs list different KV caches");
  on_device_ = !pc.empty();
  const compile::PackageProgram* ext = runner.manifest().find_program("extend");
  const json& ec = ext ? ext->session.value("cache", json::array()) : json::array();
  if (ext) {
    chunk_ = session_int(*ext, "chunk");
    if (!ec.is_array() || ec.size() != dc.size() || session_int(*ext, "capacity") != capacity_)
      throw Error("package: the extend and decode programs list different KV caches");
  }
  for (std::size_t i = 0; i < pc.size(); ++i) {
    CacheEntry e{pc[i].value("new", ""), dc[i].value("new", ""), dc[i].value("past", ""), 0, {}, "", {}};
    if (ext) {
      e.extend_new = ec[i].value("new", "");
      if (ec[i].value("past", "") != e.past || !runner.kernels_only_read("extend", e.past))
        throw Error("package program extend: its cache input \"" + e.past + "\" is not decode's, read by kernels only");
    }
    const compile::PackageValue* past = nullptr;
    for (const compile::PackageValue& v : dec.inputs)
      if (v.name == e.past) past = &v;
    if (!past || past->shape.size() != 2 || past->shape[0] != capacity_)
      throw Error("package program decode: cache input \"" + e.past + "\" is not an input of [capacity, width]");
    e.width = past->shape[1];
    e.slots = Tensor(DType::f32, past->shape);
    std::memset(e.slots.raw(), 0, e.slots.nbytes());
    on_device_ = on_device_ && runner.kernels_only_read("decode", e.past);
    cache_.push_back(std::move(e));
  }
  pending_ = on_device_;  // zeros, until the first decode puts them in the surfaces
  const json& ps = pre.session.value("state", json::array());
  const json& ds = dec.session.value("state", json::array());
  if (!ps.is_array() || !ds.is_array() || ps.size() != ds.size())
    throw Error("package: the prefill and decode programs list different recurrent states");
  if (!ps.empty() && ext) throw Error("package: a program with recurrent states has an extend program, which it cannot run");
  for (std::size_t i = 0; i < ps.size(); ++i) {
    StateEntry e{ps[i].value("new", ""), ds[i].value("new", ""), ds[i].value("past", ""), {}};
    for (const compile::PackageValue& v : dec.inputs)
      if (v.name == e.past) e.value = Tensor(DType::f32, v.shape);
    if (e.value.dtype() != DType::f32 || e.value.rank() == 0)
      throw Error("package program decode: recurrent state \"" + e.past + "\" is not one of its inputs");
    state_.push_back(std::move(e));
  }
  zero_state();
}

void PackageSession::zero_state() {
  for (StateEntry& e : state_) std::memset(e.value.raw(), 0, e.value.nbytes());
}

void PackageSession::fill_resident() {
  for (CacheEntry& e : cache_) {
    if (e.resident.empty()) {
      e.resident = runner_.keep_resident("decode", e.past);
      if (chunk_ > 0)
        for (const PackageRunner::SurfaceRef& r : runner_.keep_resident("extend", e.past)) e.resident.push_back(r);
    }
    for (const PackageRunner::SurfaceRef& r : e.resident) device::pack_token_major(e.slots, r.shape.columns, *r.surface);
    e.slots = Tensor(DType::f32, {0, e.width});
  }
  pending_ = false;
}

Tensor PackageSession::prefill(std::span<const std::int32_t> tokens) {
  const std::int64_t n = static_cast<std::int64_t>(tokens.size());
  if (!state_.empty() && n != prefill_seq_ && n >= 1 && n <= prefill_seq_) {
    // Token by token from position 0 and a zero state: the prefill program's padding would
    // advance the state past the prompt.
    position_ = 0;
    zero_state();
    std::vector<Tensor> rows;
    for (const std::int32_t t : tokens) rows.push_back(decode(t));
    Tensor out(DType::f32, {n, rows.front().dim(0)});
    for (std::int64_t i = 0; i < n; ++i)
      std::memcpy(out.data<float>() + i * out.dim(1), rows[static_cast<std::size_t>(i)].raw(), rows[static_cast<std::size_t>(i)].nbytes());
    return out;
  }
  // Decode's kernels queued behind prefill's: they compile while prefill evaluates.
  TensorMap out = run_prefill(runner_, tokens, decodes_ ? "decode" : "");
  const compile::PackageProgram& p = runner_.manifest().program("prefill");
  const std::int64_t keep = std::min(n, capacity_);
  for (CacheEntry& e : cache_) {
    const Tensor& fresh = out.at(e.prefill_new);
    if (on_device_) {  // the rows only; packed into the surfaces (zeros after them) at the next decode
      e.slots = fresh.slice(0, 0, keep).contiguous();
      continue;
    }
    std::memset(e.slots.raw(), 0, e.slots.nbytes());
    std::memcpy(e.slots.raw(), fresh.contiguous().raw(), static_cast<std::size_t>(keep * e.slots.dim(1)) * sizeof(float));
  }
  for (StateEntry& e : state_) e.value = out.at(e.prefill_new).contiguous().clone();
  pending_ = on_device_;
  position_ = n;
  return out.at(session_name(p, "logits")).slice(0, 0, n).contiguous();
}

Tensor PackageSession::cache_rows(std::string_view name) const {
  const std::int64_t rows = std::min(position_, capacity_);
  for (const CacheEntry& e : cache_) {
    if (e.prefill_new != name) continue;
    if (!on_device_ || pending_) return e.slots.slice(0, 0, std::min(rows, e.slots.dim(0))).contiguous();
    const PackageRunner::SurfaceRef& r = e.resident.front();
    return device::unpack_token_major(*r.surface, r.shape.channels, rows, r.shape.columns);
  }
  throw Error("package session: no KV-cache entry \"" + std::string(name) + "\"");
}

Tensor PackageSession::decode(std::int32_t token) {
  if (position_ > capacity_)
    throw Error("decode: position " + std::to_string(position_) + " is past the package's cache of " +
                std::to_string(capacity_) + " positions (recompile with a larger --context)");
  const compile::PackageProgram& p = runner_.manifest().program("decode");
  Tensor tok(DType::i32, {1});
  tok.data<std::int32_t>()[0] = token;
  Tensor mask(DType::f32, {1, capacity_ + 1});
  float* m = mask.data<float>();
  for (std::int64_t j = 0; j <= capacity_; ++j)
    m[j] = (j < position_ || j == capacity_) ? 0.0f : -std::numeric_limits<float>::infinity();
  TensorMap in{{session_name(p, "tokens"), tok},
            {session_name(p, "positions"), positions_from(position_, 1)},
            {session_name(p, "mask"), mask}};
  if (const std::int64_t window = session_window(p); window > 0) {
    Tensor local = mask.clone();
    hide_before_window(local.data<float>(), capacity_, position_, window);
    in[session_name(p, "mask_local")] = local;
  }
  if (pending_) fill_resident();
  if (!on_device_)
    for (const CacheEntry& e : cache_) in[e.past] = e.slots;
  for (const StateEntry& e : state_) in[e.past] = e.value;
  TensorMap out = runner_.run("decode", in);
  for (StateEntry& e : state_) e.value = out.at(e.decode_new).contiguous().clone();
  if (position_ < capacity_)
    for (CacheEntry& e : cache_) {
      if (on_device_) {
        const PackageRunner::OutputRef from = runner_.output_surface("decode", e.decode_new);
        if (!from.surface) throw Error("package program decode: no kernel computes \"" + e.decode_new + "\"");
        for (const PackageRunner::SurfaceRef& to : e.resident)
          device::copy_column(*from.surface, from.shape, 0, *to.surface, to.shape, position_);
        continue;
      }
      const Tensor fresh = out.at(e.decode_new).contiguous();
      std::memcpy(e.slots.data<float>() + position_ * e.slots.dim(1), fresh.raw(),
                  static_cast<std::size_t>(e.slots.dim(1)) * sizeof(float));
    }
  ++position_;
  return out.at(session_name(p, "logits")).reshape({-1}).contiguous();
}

Tensor PackageSession::extend(std::span<const std::int32_t> tokens) {
  const auto n = static_cast<std::int64_t>(tokens.size());
  if (chunk_ == 0) throw Error("extend: the package has no extend program (compile it with --ane-chunk N)");
  if (!on_device_) throw Error("extend: the package's cache is not on the device");
  if (n < 1 || n > chunk_)
    throw Error("extend: " + std::to_string(n) + " tokens in a chunk of " + std::to_string(chunk_));
  if (position_ + n > capacity_)
    throw Error("extend: positions " + std::to_string(position_) + " to " + std::to_string(position_ + n) +
                " are past the package's cache of " + std::to_string(capacity_) + " positions (recompile with a larger --context)");
  const compile::PackageProgram& p = runner_.manifest().program("extend");
  // The rows after the real ones are padding: causal, they are seen by none of them; their
  // positions repeat the last real one so that every position is one the tables hold.
  Tensor tok(DType::i32, {chunk_}), pos(DType::i32, {chunk_});
  std::memset(tok.raw(), 0, tok.nbytes());
  std::memcpy(tok.raw(), tokens.data(), tokens.size_bytes());
  for (std::int64_t i = 0; i < chunk_; ++i) pos.data<std::int32_t>()[i] = static_cast<std::int32_t>(position_ + std::min(i, n - 1));
  Tensor mask(DType::f32, {chunk_, capacity_});
  float* m = mask.data<float>();
  for (std::int64_t r = 0; r < chunk_; ++r)
    for (std::int64_t j = 0; j < capacity_; ++j) m[r * capacity_ + j] = j < position_ ? 0.0f : -std::numeric_limits<float>::infinity();
  if (pending_) fill_resident();
  TensorMap in{{session_name(p, "tokens"), tok}, {session_name(p, "positions"), pos}, {session_name(p, "mask"), mask}};
  if (const std::int64_t window = session_window(p); window > 0) {
    Tensor local = mask.clone();
    for (std::int64_t r = 0; r < chunk_; ++r)
      hide_before_window(local.data<float>() + r * capacity_, capacity_, position_ + std::min(r, n - 1), window);
    in[session_name(p, "mask_local")] = local;
  }
  TensorMap out = runner_.run("extend", in);
  for (CacheEntry& e : cache_) {
    const PackageRunner::OutputRef from = runner_.output_surface("extend", e.extend_new);
    if (!from.surface) throw Error("package program extend: no kernel computes \"" + e.extend_new + "\"");
    for (std::int64_t i = 0; i < n; ++i)
      for (const PackageRunner::SurfaceRef& to : e.resident) device::copy_column(*from.surface, from.shape, i, *to.surface, to.shape, position_ + i);
  }
  position_ += n;
  return out.at(session_name(p, "logits")).slice(0, 0, n).contiguous();
}

}  // namespace orion::runtime
