#pragma once
// Llama in the fast CPU engine (engine/fast/gpt2_fast.h's approach, on the scaffold both share,
// engine/fast/fast_session.h): one token at a time, each weight streamed once per token by the
// GEMV kernels in f32, f16 or q8, the KV cache and activations allocated once. The maths is
// model/llama/llama.h's: RMSNorm, Qwen3's per-head q/k norms, rotary embeddings (Hugging
// Face's half rotation, tables made once, scaled as the config says; the cache holds rotated
// keys), grouped-query attention, SwiGLU, the q/k/v and o biases a family has, tied or untied
// head; Qwen3.5's gated queries, partial rotation and Gated DeltaNet layers
// (engine/fast/gated_delta_fast.h). The graph executor (GraphSession) stays the reference: tests
// hold this decoder to it.
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "engine/fast/fast_session.h"
#include "engine/fast/gated_delta_fast.h"
#include "model/llama/llama_model.h"

namespace orion::engine {

struct LlamaFastLayer {
  // Norm gains as the rows are multiplied by them: Gemma's 1 + w folded in at load.
  std::vector<float> attn_norm, mlp_norm;
  std::vector<float> q_norm, k_norm;  // Qwen3's and Gemma's per-head gains; empty without qk_norm
  // Gemma 3's sandwich norms of the attention's and the MLP's outputs; empty without them.
  std::vector<float> attn_out_norm, mlp_out_norm;
  bool sliding = false;  // attends over the config's sliding_window positions only
  // q, k and v stacked as one matrix's rows (and gate over up): one parallel section each
  // instead of three (two). Rows are packed independently, so stacking changes no number.
  // Qwen3.5's gated queries: the gates' rows after v's, q_proj's per-head halves taken apart.
  // A Gated DeltaNet layer: qkv is in_proj_qkv, _z, _b and _a stacked, o is out_proj.
  PackedLinear qkv, o, gate_up, down;
  std::optional<FastDeltaLayer> delta;
  std::array<const PackedLinear*, 4> matrices() const { return {&qkv, &o, &gate_up, &down}; }
};

// A contiguous range of a model's layers, [first, last): a pipeline stage's (engine/pipeline.h).
struct LayerRange {
  std::int64_t first = 0, last = 0;
  std::int64_t size() const { return last - first; }
};

class LlamaFastModel : public FastModel<model::LlamaConfig, LlamaFastLayer> {
 public:
  // The model's weights packed in `dtype` (q8 with kQ8Block); the model may be dropped afterwards.
  LlamaFastModel(const model::LlamaModel& model, model::WeightDType dtype);
  // Only the layers of `range` (a pipeline stage), with the embedding when the range starts at
  // layer 0 and the final norm and head when it ends at the last: what `model` must hold (a part,
  // LlamaModel::load's `keep`). Throws orion::Error for a range outside the model.
  LlamaFastModel(const model::LlamaModel& model, model::WeightDType dtype, LayerRange range);

  LayerRange range() const { return range_; }
  bool embeds() const { return range_.first == 0; }
  bool has_head() const { return range_.last == config_.num_hidden_layers; }

  // Bytes of matrices this model packed (the untied embedding's f32 copy included).
  std::size_t packed_bytes() const { return owned_matrix_bytes() + embed_.size() * sizeof(float); }
  // Bytes a session allocates: the KV cache of the whole context and the activations.
  std::uint64_t session_bytes() const;

 private:
  friend class LlamaFastSession;
  // Token `token`'s embedding row (hidden_size floats) into `out`: the tied head's row, or the
  // untied embedding's.
  void embed_row(std::int32_t token, float* out) const;

  LayerRange range_;
  // head_ is lm_head [vocab, C], or the embedding when tied (packed for a tied first stage, which
  // looks its rows up, without being the head).
  std::vector<float> embed_;    // [vocab, C] f32 when untied (rows are looked up, never streamed)
  std::vector<float> norm_;
  std::vector<float> cos_, sin_;  // [positions, head_dim]: model/llama/rope.h's tables
  std::vector<float> cos_local_, sin_local_;  // the sliding layers' own (Gemma 3), else empty

 public:
  // Per-head RMSNorm of q's and k's heads (qk_norm) and the rotation, in place, of one token's
  // q and k (contiguous, q's heads first) at `position`: what step_layers() and the prefill share.
  void norm_and_rotate(const LlamaFastLayer& L, float* qk, std::int64_t position) const;
  // The first cached position layer L's query at `position` attends to (its sliding window's).
  std::int64_t first_key(const LlamaFastLayer& L, std::int64_t position) const {
    return L.sliding ? std::max<std::int64_t>(0, position + 1 - *config_.sliding_window) : 0;
  }
  // The attention's scale: 1/sqrt(head_dim), or Gemma's query_pre_attn_scalar^-1/2.
  float attention_scale() const;
  // y += f(x) for a layer's output x: f the sandwich norm `out_norm` when there is one; x is
  // overwritten by it.
  void add_output(const std::vector<float>& out_norm, float* x, float* y) const;
  // The gated feed-forward's activation of one row in place: g[0, F) = act(g) * g[F, 2F).
  void glu_row(float* g) const;
  // Columns of a full layer's stacked projection: q, k, v and Qwen3.5's gates.
  std::int64_t qkv_width() const {
    return (config_.attn_output_gate ? 2 : 1) * config_.q_width() + 2 * config_.kv_width();
  }
  // The attention's output times sigmoid of its gates (Qwen3.5; `gates` one token's, q_width
  // floats), in place; nothing without gated queries.
  void gate_attention(float* att, const float* gates) const;
  // A Gated DeltaNet layer's state of one sequence per layer (empty for attention layers).
  std::vector<std::optional<FastDeltaState>> new_delta_states() const;
};

class LlamaFastSession final : public FastSession {
 public:
  // `isa` picks the GEMV kernels (the best this CPU has by default; tests run every one).
  LlamaFastSession(std::shared_ptr<const LlamaFastModel> model, int threads = 0,
                   exec::cpu::Isa isa = exec::cpu::best_isa());

  // FLOPs (2 per multiply-add) of the matrix products a batched prefill of `tokens` after
  // `cached` positions performs: every linear layer over all tokens, the attention's scores and
  // weighted values over the key range each query block computes (the masked part included),
  // and the head for the last token.
  static double batched_prefill_flops(const model::LlamaConfig& c, std::int64_t cached, std::int64_t tokens);

 private:
  // The cache is [kv_heads, positions, head_dim]: one key/value head's run is one sequential
  // stream, read by every query head of its group.
  void embed(std::int32_t token, std::int64_t position, float* x) const override;
  void batch_layers(std::span<const BatchRow> rows) override;
  void step_layers() override;
  void attend_step(const LlamaFastLayer& L, std::size_t l);
  void prefill_layers(std::int64_t tokens) override;  // llama_fast_prefill.cpp
  void final_norm(const float* x, float* y) const override;
  // Layer l's recurrent state at `position`: zeroed when the sequence starts there.
  FastDeltaState& delta_state(std::size_t l, std::int64_t position);
  // A parallel loop over a Gated DeltaNet layer's heads on the session's pool.
  ParallelRange pool_heads();

  std::shared_ptr<const LlamaFastModel> model_;
  std::vector<std::optional<FastDeltaState>> delta_;
};

}  // namespace orion::engine
