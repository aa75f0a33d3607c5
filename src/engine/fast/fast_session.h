#pragma once
// The scaffold both fast CPU engines share (GPT-2: engine/fast/gpt2_fast.h; Llama:
// engine/fast/llama_fast.h). A fast model holds its packed weights: the head (the largest
// matrix, streamed once per token for the logits) and per layer four matrices. A fast session
// decodes one token at a time (step: every weight streamed once by the GEMV kernels) or a
// prompt at once (batched prefill: matrix products through the BLAS, engine/fast/fast_prefill.h),
// over a KV cache and activations allocated once. The scaffold owns all of that and the order
// of a step (the embedding, the layers, then the final norm and the head for the logits); an
// architecture supplies only its maths: its embedding, its layers for one token and for a
// prompt, and its final norm.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/huge_pages.h"
#include "core/tensor.h"
#include "core/tensor_map.h"
#include "core/thread_pool.h"
#include "exec/cpu/gemv.h"
#include "engine/fast/fast_prefill.h"
#include "engine/fast/packed_linear.h"
#include "engine/decoder.h"

namespace orion::engine {

// A tensor's values as floats (norm weights, embeddings looked up by row).
std::vector<float> float_values(const Tensor& t);
// The tensor `name` of `weights`; throws orion::Error naming `arch` when it is missing.
const Tensor& fast_weight(const TensorMap& weights, const std::string& name, const char* arch);

// `Layer::matrices()` lists a layer's four packed matrices in the order its step applies them.
template <class Config, class Layer>
class FastModel {
 public:
  const Config& config() const { return config_; }
  model::WeightDType dtype() const { return dtype_; }
  const PackedLinear& head() const { return head_; }
  // The layers this model holds (a pipeline stage's range, or all of them).
  std::int64_t layer_count() const { return static_cast<std::int64_t>(layers_.size()); }
  // Bytes of weights one decode step reads: every packed matrix once, the head included (an
  // embedding row looked up is not counted).
  std::size_t weight_bytes_per_token() const {
    std::size_t b = head_.weight_bytes();
    for (const PackedLinear* m : layer_matrices()) b += m->weight_bytes();
    return b;
  }
  // Every layer's matrices, layer after layer.
  std::vector<const PackedLinear*> layer_matrices() const {
    std::vector<const PackedLinear*> out;
    for (const Layer& L : layers_) {
      const std::array<const PackedLinear*, 4> m = L.matrices();
      out.insert(out.end(), m.begin(), m.end());
    }
    return out;
  }

 protected:
  FastModel(const Config& config, model::WeightDType dtype) : config_(config), dtype_(dtype) {}
  // Bytes of the matrices this model packed itself (0 for those borrowed from a file).
  std::size_t owned_matrix_bytes() const {
    std::size_t b = head_.owned_bytes();
    for (const PackedLinear* m : layer_matrices()) b += m->owned_bytes();
    return b;
  }

  Config config_;
  model::WeightDType dtype_;
  PackedLinear head_;
  std::vector<Layer> layers_;
};

// What a session allocates, by the architecture's config, and what its errors name.
struct FastSessionShape {
  const char* arch = "";         // "gpt2", "llama"
  const char* context_key = "";  // the config's name of the context ("n_positions")
  std::uint64_t reserved_bytes = 0;  // checked against the memory limit before anything is allocated
  std::int64_t layers = 0, positions = 0, vocab = 0, heads = 0;
  std::int64_t width = 0;      // the residual stream of one token
  std::int64_t kv_width = 0;   // one layer's keys (and values) of one position
  std::int64_t qkv_width = 0;  // q, k and v of one token
  std::int64_t att_width = 0;  // the attention's output of one token (heads * head_dim); 0: width
  std::int64_t mlp_width = 0;  // the feed-forward's activations of one token
  // Some layer keeps a recurrent state (Qwen3.5's Gated DeltaNet), which a rewind cannot take
  // back to a position other than 0 or the present.
  bool recurrent = false;
  model::WeightDType dtype = model::WeightDType::f32;
  const PackedLinear* head = nullptr;         // the model's: the session holds the model
  std::vector<const PackedLinear*> matrices;  // the layers' (the batched prefill's weight scratch)
};

class FastSession : public Decoder {
 public:
  std::vector<float> prefill(std::span<const std::int32_t> tokens) final;
  void extend(std::span<const std::int32_t> tokens) final;
  using Decoder::decode;
  std::int64_t position() const final { return position_; }
  std::int64_t context() const final { return shape_.positions; }
  void reset() final { position_ = 0; }
  // The rows past `position` are simply written again: attention reads none beyond position().
  // False for a model with a recurrent state (FastSessionShape::recurrent) but to 0 or the present.
  bool rewind(std::int64_t position) final;
  std::size_t cache_bytes_per_position() const final;

  // Prompts of at least `n` tokens run as matrix products through the BLAS; shorter ones a
  // token at a time. Both give the same logits and cache (to rounding); tests set 1 to reach
  // every length through the batched path. Throws orion::Error when n < 1.
  void set_batched_prefill_min(std::int64_t n);
  std::int64_t batched_prefill_min() const { return batched_min_; }

  // prefill() in three parts, for pipeline stages (engine/pipeline.h), each of which holds some
  // of the layers; prefill() is embed_rows, stage_layers and stage_logits of the last row, and a
  // pipeline gives its bits. embed_rows: the tokens' embeddings at position() onwards into `x`
  // ([tokens, width]; the model must hold the embedding).
  void embed_rows(std::span<const std::int32_t> tokens, float* x);
  // `rows` rows of the residual stream `x` ([rows, width]) through this session's layers, in
  // place, by the path prefill() takes for that many tokens; the position advances by `rows`.
  // Throws orion::Error when they do not fit in the context.
  void stage_layers(float* x, std::int64_t rows);
  // The final norm and the head of one row of the residual stream: the logits (the model must
  // hold the head).
  const std::vector<float>& stage_logits(const float* x);

  // One token for each of `sessions` (sessions of one fast model, each at its own position) in
  // one pass over the weights: the linear layers and the head as matrix products over the
  // rows, each row's attention over its own session's cache: each session's logits, the
  // very bits decode() gives; every position advances by one. What a server's concurrent
  // requests decode with, through engine::decode_batch (engine/decoder.h). Every weight format
  // batches: each has kernels that stream the matrix once for several vectors. Throws
  // orion::Error for sessions of different models, a full context or a bad token.
  // logits[b] gets session b's (the vectors' storage is reused from call to call).
  static void decode_batch(std::span<FastSession* const> sessions, std::span<const std::int32_t> tokens,
                           std::vector<std::vector<float>>& logits);
  // The model's head: sessions of one model batch together (Decoder::batch_key).
  const void* batch_key() const final { return shape_.head; }

 protected:
  // engine::decode_batch's sessions, all of this model (they share its batch_key): decode_batch.
  void decode_batch_of(std::span<Decoder* const> sessions, std::span<const std::int32_t> tokens,
                       std::vector<std::vector<float>>& logits) final;
  // Throws orion::Error when shape.reserved_bytes would pass the memory limit.
  FastSession(FastSessionShape shape, int threads, exec::cpu::Isa isa);

  // Token `token`'s embedding at `position` into `x` (width floats). Called from several
  // threads at once.
  virtual void embed(std::int32_t token, std::int64_t position, float* x) const = 0;
  // The token embedded in x_ at position_ through every layer: the residual stream left in x_,
  // its keys and values written to the cache.
  virtual void step_layers() = 0;
  // The same for `tokens` tokens embedded in bx_ ([tokens, width]) at position_ onwards, in
  // matrix products over the whole prompt: the residual stream left in bx_.
  virtual void prefill_layers(std::int64_t tokens) = 0;
  // The final norm of one row `x` of the residual stream into `y`.
  virtual void final_norm(const float* x, float* y) const = 0;
  // One row of a batched pass: a token of `session` at `position` (several rows may be one
  // session's consecutive positions: a short prompt).
  struct BatchRow {
    FastSession* session;
    std::int64_t position;
  };
  // The batched pass's layers: row b of bx_ (rows[b]'s token, embedded at its position) through
  // every layer, its keys and values written to its session's cache at its position before any
  // row attends (so a prompt's rows see each other causally): the residual stream left in bx_.
  virtual void batch_layers(std::span<const BatchRow> rows) = 0;

  // A row's cache of layer `layer` (for batch_layers, which reads other sessions than its own).
  struct RowCache {
    float* k;
    float* v;
    std::int64_t position;
  };
  static RowCache row_cache(const BatchRow& r, std::size_t layer) {
    return {r.session->k_cache_[layer].get(), r.session->v_cache_[layer].get(), r.position};
  }
  // Y[B, out] = X[B, in] W^T + b (Y += ... when `accumulate`) for batch_layers: any weights
  // through PackedLinear::apply_columns, which reads W once for all rows and gives each row the
  // bits apply() gives it alone, so that a batched session decodes exactly as a lone one. X's rows
  // are `ldx` floats apart (0: in); `act` as apply()'s, after the bias.
  void batch_linear(const PackedLinear& lin, const float* X, std::int64_t B, float* Y, bool accumulate, std::int64_t ldx = 0,
                    exec::cpu::Activation act = exec::cpu::Activation::none);
  // The batched passes' activations, [rows, width] each: the residual stream, the normed rows,
  // q/k/v, attention's output and the feed-forward's hidden rows.
  struct RowBuffers {
    float *x, *normed, *qkv, *attention, *mlp;
  };
  RowBuffers row_buffers() { return {bx_.data(), bh_.data(), bqkv_.data(), batt_.data(), bmlp_.data()}; }
  // attend_rows' scratch for a batched step: at least `floats`, kept between steps.
  float* batch_scores(std::int64_t floats) {
    if (bscores_.size() < static_cast<std::size_t>(floats)) bscores_.resize(static_cast<std::size_t>(floats));
    return bscores_.data();
  }

  FastSessionShape shape_;
  ThreadPool pool_;
  exec::cpu::Isa isa_;
  std::int64_t position_ = 0;
  // Per layer [kv heads, positions, head_dim]: a head's keys (values) for all positions are
  // one contiguous run, which attention reads as a single sequential stream. Positions at and
  // beyond position_ are never read, so the cache is not zero-filled.
  std::vector<LargeArray<float>> k_cache_, v_cache_;
  std::vector<float> x_, h_, qkv_, att_, tmp_, mlp_, scores_, logits_;
  // [positions, width] activations and one f32 copy of the largest matrix (f16 and q8 weights
  // are expanded into it for the BLAS), allocated on the first batched prefill.
  std::vector<float> bx_, bh_, bqkv_, batt_, bmlp_, bscores_, bweights_;
  std::vector<float> bin_, bout_;  // batch_linear's packed inputs and products
  std::vector<float> blogits_;     // decode_batch's head, [sessions, vocab]

 private:
  // The activations `rows` rows run in (x_ for one token stepped, else bx_), and the layers
  // over them by the path for that many: the position advances by `rows`.
  float* rows_buffer(std::int64_t rows);
  void advance(std::int64_t rows);
  // Embeds rows' tokens and runs batch_layers on the lead session's scratch; the residual
  // stream of row b is left in bx_ + b * width.
  void run_rows(std::span<const BatchRow> rows, std::span<const std::int32_t> tokens);
  void prefill_scratch(std::int64_t rows);
  std::int64_t scratch_rows_ = 0;  // the rows the b* buffers hold

  std::int64_t batched_min_ = prefill::kDefaultBatchedMin;
};

}  // namespace orion::engine
