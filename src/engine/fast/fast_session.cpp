#include "engine/fast/fast_session.h"

#include "core/error.h"
#include "core/memory_limit.h"
#include "exec/cpu/gemm.h"
#include "exec/cpu/gemv.h"

namespace orion::engine {

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

bool FastSession::rewind(std::int64_t position) {
  if (position < 0 || position > position_) return false;
  if (shape_.recurrent && position != 0 && position != position_) return false;
  position_ = position;
  return true;
}

std::size_t FastSession::cache_bytes_per_position() const {
  return static_cast<std::size_t>(shape_.layers * shape_.kv_width) * 2 * sizeof(float);
}

std::vector<float> FastSession::prefill(std::span<const std::int32_t> tokens) {
  check_decoder_tokens(tokens, position_, shape_.positions, shape_.vocab, shape_.arch);
  const auto T = static_cast<std::int64_t>(tokens.size());
  float* x = rows_buffer(T);
  embed_rows(tokens, x);
  advance(T);
  // Only the last token's logits are wanted: the head (the largest matrix) runs once.
  return stage_logits(x + (T - 1) * shape_.width);
}

void FastSession::extend(std::span<const std::int32_t> tokens) {
  check_decoder_tokens(tokens, position_, shape_.positions, shape_.vocab, shape_.arch);
  const auto T = static_cast<std::int64_t>(tokens.size());
  embed_rows(tokens, rows_buffer(T));
  advance(T);
}

void FastSession::embed_rows(std::span<const std::int32_t> tokens, float* x) {
  const auto T = static_cast<std::int64_t>(tokens.size());
  if (T < batched_min_) {
    for (std::int64_t t = 0; t < T; ++t) embed(tokens[static_cast<std::size_t>(t)], position_ + t, x + t * shape_.width);
    return;
  }
  exec::cpu::set_gemm_threads(pool_.size());
  exec::cpu::gemm_parallel_for(T, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) embed(tokens[static_cast<std::size_t>(t)], position_ + t, x + t * shape_.width);
  });
}

void FastSession::stage_layers(float* x, std::int64_t rows) {
  if (rows < 1 || rows > shape_.positions - position_)
    throw Error(std::string(shape_.arch) + " pipeline stage: " + std::to_string(rows) + " rows after " +
                std::to_string(position_) + " positions do not fit in the context of " + std::to_string(shape_.positions));
  float* buffer = rows_buffer(rows);
  const auto n = static_cast<std::size_t>(rows * shape_.width);
  if (x != buffer) std::copy_n(x, n, buffer);
  advance(rows);
  if (x != buffer) std::copy_n(buffer, n, x);
}

const std::vector<float>& FastSession::stage_logits(const float* x) {
  if (!shape_.head) throw Error(std::string(shape_.arch) + " pipeline stage: this stage does not hold the head");
  final_norm(x, h_.data());
  shape_.head->apply(h_.data(), logits_.data(), pool_, isa_);
  return logits_;
}

float* FastSession::rows_buffer(std::int64_t rows) {
  if (rows == 1 && rows < batched_min_) return x_.data();
  prefill_scratch(rows);
  return bx_.data();
}

void FastSession::advance(std::int64_t rows) {
  if (rows >= batched_min_) {
    // A long prompt as matrix products through the BLAS.
    exec::cpu::set_gemm_threads(pool_.size());
    prefill_layers(rows);
  } else if (rows > 1) {
    // A short prompt as one batched pass (the gemv_*_columns kernels read each matrix once for all
    // its tokens): the same bits as stepping token by token, which reads every matrix T times.
    std::vector<BatchRow> batch;
    for (std::int64_t t = 0; t < rows; ++t) batch.push_back({this, position_ + t});
    batch_layers(batch);
  } else {
    step_layers();  // on x_ (rows_buffer)
  }
  position_ += rows;
}

void FastSession::decode_batch(std::span<FastSession* const> sessions, std::span<const std::int32_t> tokens,
                               std::vector<std::vector<float>>& logits) {
  if (sessions.empty()) return;
  FastSession& lead = *sessions[0];
  const FastSessionShape& s = lead.shape_;
  const auto B = static_cast<std::int64_t>(sessions.size());
  if (tokens.size() != sessions.size())
    throw Error("decode_batch: " + std::to_string(tokens.size()) + " tokens for " + std::to_string(B) + " sessions");
  if (B > s.positions) throw Error("decode_batch: more sessions than the context's positions");
  for (std::size_t b = 0; b < sessions.size(); ++b) {
    FastSession& x = *sessions[b];
    if (x.shape_.head != s.head) throw Error("decode_batch: the sessions are of different models");
    check_decoder_tokens(tokens.subspan(b, 1), x.position_, s.positions, s.vocab, s.arch);
  }
  std::vector<BatchRow> rows;
  for (FastSession* x : sessions) rows.push_back({x, x->position_});
  lead.run_rows(rows, tokens);
  const std::int64_t C = s.width;
  for (std::int64_t b = 0; b < B; ++b) lead.final_norm(lead.bx_.data() + b * C, lead.bh_.data() + b * C);
  lead.blogits_.resize(static_cast<std::size_t>(B * s.vocab));
  lead.batch_linear(*s.head, lead.bh_.data(), B, lead.blogits_.data(), false);
  logits.resize(sessions.size());
  for (std::int64_t b = 0; b < B; ++b) {
    ++sessions[static_cast<std::size_t>(b)]->position_;
    const auto row = lead.blogits_.begin() + b * s.vocab;
    logits[static_cast<std::size_t>(b)].assign(row, row + s.vocab);
  }
}

void FastSession::decode_batch_of(std::span<Decoder* const> sessions, std::span<const std::int32_t> tokens,
                                  std::vector<std::vector<float>>& logits) {
  // A session with this one's batch key holds this model's head: a FastSession of this model.
  std::vector<FastSession*> fast;
  for (Decoder* d : sessions) fast.push_back(static_cast<FastSession*>(d));
  decode_batch(fast, tokens, logits);
}

void FastSession::run_rows(std::span<const BatchRow> rows, std::span<const std::int32_t> tokens) {
  prefill_scratch(static_cast<std::int64_t>(rows.size()));
  for (std::size_t b = 0; b < rows.size(); ++b)
    rows[b].session->embed(tokens[b], rows[b].position, bx_.data() + static_cast<std::int64_t>(b) * shape_.width);
  batch_layers(rows);
}

void FastSession::batch_linear(const PackedLinear& lin, const float* X, std::int64_t B, float* Y, bool accumulate,
                               std::int64_t ldx, exec::cpu::Activation act) {
  const std::int64_t N = lin.rows(), K = lin.cols();
  if (ldx != 0 && ldx != K) {
    bin_.resize(static_cast<std::size_t>(B * K));
    for (std::int64_t b = 0; b < B; ++b) std::copy_n(X + b * ldx, K, bin_.data() + b * K);
    X = bin_.data();
  }
  // The products go straight to Y unless they are added to it (the residual stream).
  float* P = Y;
  if (accumulate) {
    bout_.resize(static_cast<std::size_t>(B * N));
    P = bout_.data();
  }
  // The bias and the activation in apply()'s order (on the product, not on the residual sum).
  lin.apply_columns(X, B, P, pool_, isa_, act);
  if (accumulate)
    for (std::int64_t i = 0; i < B * N; ++i) Y[i] += P[i];
}

void FastSession::prefill_scratch(std::int64_t rows) {
  // Sized for the rows asked and grown when more come (to a power of two, at most the context):
  // a session that decodes, or takes its prompt in chunks between other requests' steps, never
  // zero-fills a whole context's rows, whose first touch would stall the server's streams.
  if (scratch_rows_ >= rows) return;
  const FastSessionShape& s = shape_;
  std::int64_t n = 64;
  while (n < rows) n *= 2;
  n = std::min(n, s.positions);
  const auto R = static_cast<std::size_t>(n), C = static_cast<std::size_t>(s.width);
  bx_.resize(R * C);
  bh_.resize(R * C);
  bqkv_.resize(R * static_cast<std::size_t>(s.qkv_width));
  batt_.resize(R * (s.att_width > 0 ? static_cast<std::size_t>(s.att_width) : C));
  bmlp_.resize(R * static_cast<std::size_t>(s.mlp_width));
  if (bweights_.empty()) bweights_.resize(prefill::weight_scratch_floats(s.dtype, s.matrices));
  scratch_rows_ = n;
}

}  // namespace orion::engine
