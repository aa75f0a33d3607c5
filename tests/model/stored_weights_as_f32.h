#pragma once
// A model's weights as the fast path stores them, back in f32 (rounded to fp16, or quantised
// to q8 and dequantised), so that a reference computes the same function as the fast path
// up to the order of additions (and, for q8, the activation's quantisation).
#include <vector>

#include "core/half.h"
#include "exec/cpu/quantize.h"
#include "model/gpt2/gpt2_model.h"
#include "model/llama/llama_model.h"
#include "engine/fast/packed_linear.h"

namespace orion::model::testing {

// The q8 decoder against a reference on the dequantised weights differs by the activations'
// quantisation to int8 in every q8 product (gemv.h), which the reference does not do: in the
// logits of the small test models with large weights (activations of order 1) the largest
// relative error measured is 4.5e-2 for GPT-2 and 8.7e-2 for
// Llama (gpt2_fast_test and llama_fast_test print it).
inline constexpr double kQ8ActivationTol = 1e-1;
// f32 and f16 weights: the fast path and the reference compute the same function up to the
// order of additions (the 1e-5 relative).
inline constexpr double kAdditionOrderTol = 1e-5;

// One matrix, in the model's own layout (`in_out`: GPT-2's Conv1D [in, out]).
inline Tensor stored_as_f32(const Tensor& w, bool in_out, WeightDType dtype) {
  Tensor rows = in_out ? w.permute(std::vector<int>{1, 0}).contiguous() : w.clone();
  auto v = rows.span<float>();
  if (dtype == WeightDType::f16) round_to_half(v);
  if (dtype == WeightDType::q8) {
    std::vector<std::int8_t> q(v.size());
    std::vector<float> s(v.size() / kQ8Block);
    exec::cpu::quantize_q8(v.data(), rows.dim(0), rows.dim(1), kQ8Block, q.data(), s.data());
    exec::cpu::dequantize_q8(q.data(), s.data(), rows.dim(0), rows.dim(1), kQ8Block, v.data());
  }
  return in_out ? rows.permute(std::vector<int>{1, 0}).contiguous() : rows;
}

// The whole model with every packed matrix (wte and the blocks' linears) so stored.
inline Gpt2Model model_stored_as_f32(const Gpt2Config& c, const TensorMap& w, WeightDType dtype) {
  TensorMap eff;
  for (const auto& [name, t] : w) {
    const bool matrix = t.rank() == 2 && name != "wpe.weight";
    eff.emplace(name, matrix ? stored_as_f32(t, name != "wte.weight", dtype) : t);
  }
  return Gpt2Model::from_weights(c, std::move(eff), "reference");
}

// A Llama model with every matrix the fast path packs so stored: all [out, in] matrices, the
// embedding only when it is the (tied) head; an untied embedding stays f32 as the fast path
// keeps it.
inline LlamaModel llama_stored_as_f32(const LlamaConfig& c, const TensorMap& w, WeightDType dtype) {
  TensorMap eff;
  for (const auto& [name, t] : w) {
    const bool packed = t.rank() == 2 && (name != "model.embed_tokens.weight" || c.tie_word_embeddings);
    eff.emplace(name, packed ? stored_as_f32(t, false, dtype) : t);
  }
  return LlamaModel::from_weights(c, std::move(eff), "reference");
}

}  // namespace orion::model::testing
