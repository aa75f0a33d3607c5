#include "runtime/package_batch.h"

#include <cstring>
#include <limits>

#include "core/error.h"
#include "device/ane_packing.h"
#include "runtime/session_block.h"

namespace orion::runtime {

namespace {
constexpr const char* kBatch = "decode_batch";
}  // namespace

PackageBatch::PackageBatch(PackageRunner& runner) : runner_(runner) {
  const compile::PackageProgram& pre = runner.manifest().program("prefill");
  const compile::PackageProgram* batch = runner.manifest().find_program(kBatch);
  if (!batch)
    throw Error("package: no decode_batch program (compile it with --ane-batch N)");
  prefill_seq_ = pre.seq;
  capacity_ = session_int(*batch, "capacity");
  sequences_ = session_int(*batch, "sequences");
  const nlohmann::json& pc = pre.session.value("cache", nlohmann::json::array());
  const nlohmann::json& bc = batch->session.value("cache", nlohmann::json::array());
  if (!pc.is_array() || !bc.is_array() || pc.size() != bc.size() || pc.empty())
    throw Error("package: the prefill and decode_batch programs list different KV caches");
  for (std::size_t i = 0; i < pc.size(); ++i) {
    CacheEntry e{pc[i].value("new", ""), bc[i].value("new", ""), bc[i].value("past", ""), {}};
    if (!runner.kernels_only_read(kBatch, e.past))
      throw Error("package program decode_batch: its cache input \"" + e.past + "\" is read on the host (a batched "
                  "package keeps its caches on the device)");
    cache_.push_back(std::move(e));
  }
  positions_.assign(static_cast<std::size_t>(sequences_), 0);
}

void PackageBatch::check_slot(int slot) const {
  if (slot < 0 || slot >= sequences_)
    throw Error("package batch: no slot " + std::to_string(slot) + " (the package batches " + std::to_string(sequences_) + ")");
}

std::vector<PackageBatch::CacheEntry>& PackageBatch::resident() {
  if (!kept_) {
    for (CacheEntry& e : cache_) e.resident = runner_.keep_resident(kBatch, e.past);
    kept_ = true;
  }
  return cache_;
}

Tensor PackageBatch::prefill(int slot, std::span<const std::int32_t> tokens) {
  check_slot(slot);
  const auto n = static_cast<std::int64_t>(tokens.size());
  TensorMap out = run_prefill(runner_, tokens, kBatch);
  const compile::PackageProgram& p = runner_.manifest().program("prefill");
  const std::int64_t keep = std::min(n, capacity_);
  for (CacheEntry& e : resident()) {
    const Tensor rows = out.at(e.prefill_new).slice(0, 0, keep);
    for (const PackageRunner::SurfaceRef& r : e.resident) device::pack_columns(rows, *r.surface, r.shape, slot * capacity_, capacity_);
  }
  positions_[static_cast<std::size_t>(slot)] = n;
  return out.at(session_name(p, "logits")).slice(0, 0, n).contiguous();
}

Tensor PackageBatch::decode(std::span<const int> slots, std::span<const std::int32_t> tokens) {
  if (slots.empty() || slots.size() != tokens.size())
    throw Error("package batch: " + std::to_string(slots.size()) + " slots for " + std::to_string(tokens.size()) + " tokens");
  const std::int64_t B = sequences_, width = B * capacity_ + 1;
  std::vector<bool> asked(static_cast<std::size_t>(B), false);
  Tensor tok(DType::i32, {B}), pos(DType::i32, {B}), mask(DType::f32, {B, width});
  std::memset(tok.raw(), 0, tok.nbytes());
  std::memset(pos.raw(), 0, pos.nbytes());
  float* m = mask.data<float>();
  std::fill(m, m + B * width, -std::numeric_limits<float>::infinity());
  for (std::int64_t r = 0; r < B; ++r) m[r * width + width - 1] = 0.0f;  // every row sees its own key
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const int s = slots[i];
    check_slot(s);
    if (asked[static_cast<std::size_t>(s)]) throw Error("package batch: slot " + std::to_string(s) + " asked twice in one step");
    asked[static_cast<std::size_t>(s)] = true;
    const std::int64_t at = positions_[static_cast<std::size_t>(s)];
    if (at > capacity_)
      throw Error("decode: position " + std::to_string(at) + " is past the package's cache of " + std::to_string(capacity_) +
                  " positions (recompile with a larger --context)");
    tok.data<std::int32_t>()[s] = tokens[i];
    pos.data<std::int32_t>()[s] = static_cast<std::int32_t>(at);
    std::fill(m + s * width + s * capacity_, m + s * width + s * capacity_ + at, 0.0f);
  }
  const compile::PackageProgram& p = runner_.manifest().program(kBatch);
  resident();
  TensorMap in{{session_name(p, "tokens"), tok}, {session_name(p, "positions"), pos}, {session_name(p, "mask"), mask}};
  if (const std::int64_t window = session_window(p); window > 0) {
    Tensor local = mask.clone();
    for (const int s : slots) {
      const std::int64_t at = positions_[static_cast<std::size_t>(s)];
      hide_before_window(local.data<float>() + s * width + s * capacity_, capacity_, at, window);
    }
    in[session_name(p, "mask_local")] = local;
  }
  TensorMap out = runner_.run(kBatch, in);
  for (CacheEntry& e : cache_) {
    const PackageRunner::OutputRef from = runner_.output_surface(kBatch, e.batch_new);
    if (!from.surface) throw Error("package program decode_batch: no kernel computes \"" + e.batch_new + "\"");
    for (const int s : slots) {
      const std::int64_t at = positions_[static_cast<std::size_t>(s)];
      if (at >= capacity_) continue;  // a full slot attends to what it holds and keeps it
      for (const PackageRunner::SurfaceRef& to : e.resident)
        device::copy_column(*from.surface, from.shape, s, *to.surface, to.shape, s * capacity_ + at);
    }
  }
  for (const int s : slots) ++positions_[static_cast<std::size_t>(s)];
  const Tensor logits = out.at(session_name(p, "logits"));
  Tensor picked(DType::f32, {static_cast<std::int64_t>(slots.size()), logits.dim(1)});
  for (std::size_t i = 0; i < slots.size(); ++i)
    std::memcpy(picked.data<float>() + static_cast<std::int64_t>(i) * logits.dim(1),
                logits.slice(0, slots[i], slots[i] + 1).contiguous().to(DType::f32).raw(),
                static_cast<std::size_t>(logits.dim(1)) * sizeof(float));
  return picked;
}

}  // namespace orion::runtime
