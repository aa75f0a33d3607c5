#pragma once
// GPT-2's fast decoder: one token at a time with hand-scheduled kernels instead of the graph
// executor. Decoding reads every weight once per token, so its speed is set by memory
// bandwidth: the weights are packed once as [out, in] rows in f32, f16 or per-block int8 and
// streamed by the GEMV kernels (AVX-512, AVX2 or scalar, chosen at run time), one parallel
// section per matrix. The KV cache and all activations are allocated once; a step allocates
// nothing but the logits it returns. The graph executor (GraphSession) stays the reference:
// tests hold this decoder to it. The model and session scaffold is Llama's too
// (engine/fast/fast_session.h); this holds GPT-2's weights and maths.
#include <array>
#include <memory>
#include <vector>

#include "engine/fast/fast_session.h"
#include "model/gpt2/gpt2_model.h"

namespace orion::engine {

struct Gpt2FastLayer {
  std::vector<float> ln1_g, ln1_b, ln2_g, ln2_b;
  PackedLinear attn, proj, fc, mlp_proj;
  std::array<const PackedLinear*, 4> matrices() const { return {&attn, &proj, &fc, &mlp_proj}; }
};

class Gpt2FastModel : public FastModel<model::Gpt2Config, Gpt2FastLayer> {
 public:
  // The model's weights in `dtype`. From a folder `orion convert` wrote in that dtype (q8 of
  // any block) the matrices are borrowed from the file's mapping: no packing, no copy. Otherwise
  // they are packed (q8 with kQ8Block): a copy of each matrix, made from model.weights() (which,
  // for a converted folder of another dtype, first dequantises it). Either way the model may be
  // dropped afterwards.
  Gpt2FastModel(const model::Gpt2Model& model, model::WeightDType dtype);
  // In the dtype the folder is stored in (f32 for a Hugging Face folder).
  explicit Gpt2FastModel(const model::Gpt2Model& model);

  // Bytes of matrices this model copied (packed); 0 when it borrows them all from the file.
  std::size_t packed_bytes() const { return owned_matrix_bytes(); }
  // Bytes a session allocates: the KV cache of the whole context and the activations.
  std::uint64_t session_bytes() const;

 private:
  friend class Gpt2FastSession;
  std::vector<float> wpe_;  // [n_positions, C]; head_ is wte [vocab, C]: the tied head, and the embedding rows
  std::vector<float> lnf_g_, lnf_b_;
};

class Gpt2FastSession final : public FastSession {
 public:
  // `isa` picks the GEMV kernels (the best this CPU has by default; tests run every one).
  Gpt2FastSession(std::shared_ptr<const Gpt2FastModel> model, int threads = 0,
                  exec::cpu::Isa isa = exec::cpu::best_isa());

  // FLOPs (2 per multiply-add) of the matrix products a batched prefill of `tokens` after
  // `cached` positions performs: every linear layer over all tokens, the attention's scores and
  // weighted values over the key range each query block computes (the masked part included),
  // and the head for the last token.
  static double batched_prefill_flops(const model::Gpt2Config& c, std::int64_t cached, std::int64_t tokens);

 private:
  void embed(std::int32_t token, std::int64_t position, float* x) const override;
  void batch_layers(std::span<const BatchRow> rows) override;
  void step_layers() override;
  void prefill_layers(std::int64_t tokens) override;  // gpt2_fast_prefill.cpp
  void final_norm(const float* x, float* y) const override;

  std::shared_ptr<const Gpt2FastModel> model_;
};

}  // namespace orion::engine
