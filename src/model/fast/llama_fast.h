#pragma once
// Llama in the fast CPU engine (model/fast/gpt2_fast.h's approach and pieces): one token at a time,
// each weight streamed once per token by the GEMV kernels in f32, f16 or q8, the KV cache and
// activations allocated once. The maths is model/llama/llama.h's: RMSNorm, rotary embeddings (Hugging
// Face's half rotation, tables made once; the cache holds rotated keys), grouped-query attention,
// SwiGLU, no biases, tied or untied head. The graph executor (GraphSession) stays the reference:
// tests hold this decoder to it.
#include <memory>
#include <vector>

#include "core/huge_pages.h"
#include "core/thread_pool.h"
#include "model/session/decoder.h"
#include "model/fast/fast_prefill.h"
#include "model/llama/llama_model.h"
#include "model/fast/packed_linear.h"

namespace orion::model {

struct LlamaFastLayer {
  std::vector<float> attn_norm, mlp_norm;
  // q, k and v stacked as one matrix's rows (and gate over up): one parallel section each
  // instead of three (two). Rows are packed independently, so stacking changes no number.
  PackedLinear qkv, o, gate_up, down;
};

class LlamaFastModel {
 public:
  // The model's weights packed in `dtype` (q8 with kQ8Block); the model may be dropped afterwards.
  LlamaFastModel(const LlamaModel& model, WeightDType dtype);

  const LlamaConfig& config() const { return config_; }
  WeightDType dtype() const { return dtype_; }
  // Bytes of weights one decode step reads (every packed matrix once, the head included; the
  // one embedding row is not counted).
  std::size_t weight_bytes_per_token() const;
  // Bytes of matrices this model packed (the untied embedding's f32 copy included).
  std::size_t packed_bytes() const;
  // Bytes a session allocates: the KV cache of the whole context and the activations.
  std::uint64_t session_bytes() const;

 private:
  friend class LlamaFastSession;
  // Token `token`'s embedding row (hidden_size floats) into `out`: the tied head's row, or the
  // untied embedding's.
  void embed_row(std::int32_t token, float* out) const;

  LlamaConfig config_;
  WeightDType dtype_;
  PackedLinear head_;           // [vocab, C]: lm_head, or the embedding when tied
  std::vector<float> embed_;    // [vocab, C] f32 when untied (rows are looked up, never streamed)
  std::vector<LlamaFastLayer> layers_;
  std::vector<float> norm_;
  std::vector<float> cos_, sin_;  // [positions, head_dim]: model/llama/rope.h's tables
};

class LlamaFastSession final : public Decoder {
 public:
  // `isa` picks the GEMV kernels (the best this CPU has by default; tests run every one).
  LlamaFastSession(std::shared_ptr<const LlamaFastModel> model, int threads = 0,
                   exec::cpu::Isa isa = exec::cpu::best_isa());

  std::vector<float> prefill(std::span<const std::int32_t> tokens) override;
  using Decoder::decode;
  std::int64_t position() const override { return position_; }
  std::int64_t context() const override { return model_->config().max_position_embeddings; }
  void reset() override { position_ = 0; }

 private:
  void step(std::int32_t token, bool want_logits);

  std::shared_ptr<const LlamaFastModel> model_;
  ThreadPool pool_;
  exec::cpu::Isa isa_;
  std::int64_t position_ = 0;
  // Per layer [kv_heads, positions, head_dim], as GPT-2's fast cache: one key/value head's run
  // is one sequential stream, read by every query head of its group.
  std::vector<LargeArray<float>> k_cache_, v_cache_;
  std::vector<float> x_, h_, qkv_, att_, tmp_, gate_up_, scores_, logits_;

  // ---- Batched prefill (llama_fast_prefill.cpp, GPT-2's in gpt2_fast.h) ----
 public:
  // Prompts of at least `n` tokens run as matrix products through the BLAS; shorter ones a
  // token at a time. Both give the same logits and cache (to rounding); tests set 1 to reach
  // every length through the batched path. Throws orion::Error when n < 1.
  void set_batched_prefill_min(std::int64_t n);
  std::int64_t batched_prefill_min() const { return batched_min_; }
  // FLOPs (2 per multiply-add) of the matrix products a batched prefill of `tokens` after
  // `cached` positions performs: every linear layer over all tokens, the attention's scores and
  // weighted values over the key range each query block computes (the masked part included),
  // and the head for the last token.
  static double batched_prefill_flops(const LlamaConfig& c, std::int64_t cached, std::int64_t tokens);

 private:
  // Appends `tokens` (already checked) to the cache as step() would, in matrix products over
  // the whole prompt, and leaves the last token's logits in logits_.
  void prefill_batched(std::span<const std::int32_t> tokens);
  void prefill_scratch();
  std::int64_t batched_min_ = prefill::kDefaultBatchedMin;
  // [positions, width] activations and one f32 copy of the largest matrix (f16 and q8 weights
  // are expanded into it for the BLAS), allocated on the first batched prefill.
  std::vector<float> bx_, bh_, bqkv_, batt_, bmlp_, bscores_, bweights_;
};

}  // namespace orion::model
