#pragma once
// GPT-2's fast decoder: one token at a time with hand-scheduled kernels instead of the graph
// executor. Decoding reads every weight once per token, so its speed is set by memory
// bandwidth: the weights are packed once as [out, in] rows in f32, f16 or per-block int8 and
// streamed by the GEMV kernels (AVX-512, AVX2 or scalar, chosen at run time), one parallel
// section per matrix. The KV cache and all activations are allocated once; a step allocates
// nothing but the logits it returns. The graph executor (GraphSession) stays the reference:
// tests hold this decoder to it.
#include <memory>
#include <vector>

#include "core/huge_pages.h"
#include "core/thread_pool.h"
#include "model/session/decoder.h"
#include "model/fast/fast_prefill.h"
#include "model/gpt2/gpt2_model.h"
#include "model/fast/packed_linear.h"

namespace orion::model {

struct Gpt2FastLayer {
  std::vector<float> ln1_g, ln1_b, ln2_g, ln2_b;
  PackedLinear attn, proj, fc, mlp_proj;
};

class Gpt2FastModel {
 public:
  // The model's weights in `dtype`. From a folder `orion convert` wrote in that dtype (q8 of
  // any block) the matrices are borrowed from the file's mapping: no packing, no copy. Otherwise
  // they are packed (q8 with kQ8Block): a copy of each matrix, made from model.weights() (which,
  // for a converted folder of another dtype, first dequantises it). Either way the model may be
  // dropped afterwards.
  Gpt2FastModel(const Gpt2Model& model, WeightDType dtype);
  // In the dtype the folder is stored in (f32 for a Hugging Face folder).
  explicit Gpt2FastModel(const Gpt2Model& model);

  const Gpt2Config& config() const { return config_; }
  WeightDType dtype() const { return dtype_; }
  // Bytes of weights one decode step reads (every packed matrix once, the head included).
  std::size_t weight_bytes_per_token() const;
  // Bytes of matrices this model copied (packed); 0 when it borrows them all from the file.
  std::size_t packed_bytes() const;
  // Bytes a session allocates: the KV cache of the whole context and the activations.
  std::uint64_t session_bytes() const;

 private:
  friend class Gpt2FastSession;
  Gpt2Config config_;
  WeightDType dtype_;
  std::vector<float> wpe_;            // [n_positions, C]
  PackedLinear head_;                 // wte [vocab, C]: the tied head, and the embedding rows
  std::vector<Gpt2FastLayer> layers_;
  std::vector<float> lnf_g_, lnf_b_;
};

class Gpt2FastSession final : public Decoder {
 public:
  // `isa` picks the GEMV kernels (the best this CPU has by default; tests run every one).
  Gpt2FastSession(std::shared_ptr<const Gpt2FastModel> model, int threads = 0,
                  exec::cpu::Isa isa = exec::cpu::best_isa());

  std::vector<float> prefill(std::span<const std::int32_t> tokens) override;
  using Decoder::decode;
  std::int64_t position() const override { return position_; }
  std::int64_t context() const override { return model_->config().n_positions; }
  void reset() override { position_ = 0; }

 private:
  void step(std::int32_t token, bool want_logits);

  std::shared_ptr<const Gpt2FastModel> model_;
  ThreadPool pool_;
  exec::cpu::Isa isa_;
  std::int64_t position_ = 0;
  // Per layer [n_head, n_positions, head_dim]: a head's keys (values) for all positions are one
  // contiguous run, which attention reads as a single sequential stream. Positions at and
  // beyond position_ are never read, so the cache is not zero-filled.
  std::vector<LargeArray<float>> k_cache_, v_cache_;
  std::vector<float> x_, h_, qkv_, att_, tmp_, mlp_, scores_, logits_;

  // ---- Batched prefill (gpt2_fast_prefill.cpp) ----
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
  static double batched_prefill_flops(const Gpt2Config& c, std::int64_t cached, std::int64_t tokens);

 private:
  // Appends `tokens` (already checked) to the cache as step() would, in matrix products over
  // the whole prompt, and leaves the last token's logits in logits_.
  void prefill_batched(std::span<const std::int32_t> tokens);
  void prefill_scratch();
  std::int64_t batched_min_ = prefill::kDefaultBatchedMin;
  // [n_positions, width] activations and one f32 copy of the largest matrix (f16 and q8
  // weights are expanded into it for the BLAS), allocated on the first batched prefill.
  std::vector<float> bx_, bh_, bqkv_, batt_, bmlp_, bscores_, bweights_;
};

}  // namespace orion::model
