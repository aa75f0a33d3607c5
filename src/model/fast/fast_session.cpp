#include "model/fast/fast_session.h"

#include "core/error.h"
#include "core/memory_limit.h"
#include "exec/cpu/gemm.h"

namespace orion::model {

std::vector<float> float_values(const Tensor& t) {
  const auto v = t.contiguous().span<float>();
  return {v.begin(), v.end()};
}

const Tensor& fast_weight(const TensorMap& weights, const std::string& name, const char* arch) {
  auto it = weights.find(name);
  if (it == weights.end()) throw Error(std::string(arch) + " fast path: tensor " + name + " is missing");
  return it->second;
}

FastSession::FastSession(FastSessionShape shape, int threads, exec::cpu::Isa isa)
    : shape_(std::move(shape)), pool_(threads), isa_(isa) {
  const FastSessionShape& s = shape_;
  check_fits_in_memory(s.reserved_bytes, std::string("the key/value cache of the whole context (") + s.context_key + ")",
                       std::string(s.arch) + " session");
  const auto C = static_cast<std::size_t>(s.width), P = static_cast<std::size_t>(s.positions);
  for (std::int64_t l = 0; l < s.layers; ++l) {
    k_cache_.push_back(make_large_array<float>(P * static_cast<std::size_t>(s.kv_width)));
    v_cache_.push_back(make_large_array<float>(P * static_cast<std::size_t>(s.kv_width)));
  }
  x_.resize(C);
  h_.resize(C);
  qkv_.resize(static_cast<std::size_t>(s.qkv_width));
  att_.resize(s.att_width > 0 ? static_cast<std::size_t>(s.att_width) : C);
  tmp_.resize(C);
  mlp_.resize(static_cast<std::size_t>(s.mlp_width));
  scores_.resize(static_cast<std::size_t>(s.heads) * P);
  logits_.resize(static_cast<std::size_t>(s.vocab));
}

void FastSession::set_batched_prefill_min(std::int64_t n) { batched_min_ = prefill::checked_batched_min(n); }

std::vector<float> FastSession::prefill(std::span<const std::int32_t> tokens) {
  check_decoder_tokens(tokens, position_, shape_.positions, shape_.vocab, shape_.arch);
  const auto T = static_cast<std::int64_t>(tokens.size());
  if (T >= batched_min_) {
    prefill_scratch();
    exec::cpu::set_gemm_threads(pool_.size());
    exec::cpu::gemm_parallel_for(T, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) embed(tokens[static_cast<std::size_t>(t)], position_ + t, bx_.data() + t * shape_.width);
    });
    prefill_layers(T);
    position_ += T;
    // Only the last token's logits are wanted: the head runs once, as a GEMV, as in step().
    logits_of(bx_.data() + (T - 1) * shape_.width);
    return logits_;
  }
  // Prompt tokens but the last need no logits: the head (the largest matrix) is skipped.
  for (std::size_t i = 0; i < tokens.size(); ++i) step(tokens[i], i + 1 == tokens.size());
  return logits_;
}

void FastSession::step(std::int32_t token, bool want_logits) {
  embed(token, position_, x_.data());
  step_layers();
  ++position_;
  if (want_logits) logits_of(x_.data());
}

void FastSession::logits_of(const float* x) {
  final_norm(x, h_.data());
  shape_.head->apply(h_.data(), logits_.data(), pool_, isa_);
}

void FastSession::prefill_scratch() {
  if (!bx_.empty()) return;
  const FastSessionShape& s = shape_;
  const auto P = static_cast<std::size_t>(s.positions), C = static_cast<std::size_t>(s.width);
  bx_.resize(P * C);
  bh_.resize(P * C);
  bqkv_.resize(P * static_cast<std::size_t>(s.qkv_width));
  batt_.resize(P * (s.att_width > 0 ? static_cast<std::size_t>(s.att_width) : C));
  bmlp_.resize(P * static_cast<std::size_t>(s.mlp_width));
  bscores_.resize(prefill::attention_scratch_floats(s.heads, s.positions));
  bweights_.resize(prefill::weight_scratch_floats(s.dtype, s.matrices));
}

}  // namespace orion::model
