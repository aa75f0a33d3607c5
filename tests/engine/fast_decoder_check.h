#pragma once
// The check both fast decoders' tests make against the graph executor: a prompt, then one token
// at a time, on every GEMV instruction set this CPU has (the scalar path included) with one and
// two threads. Tolerances as stored_weights_as_f32.h explains: 1e-5 relative for f32 and f16
// weights, kQ8ActivationTol for q8, which must also give the scalar path's bits everywhere.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <memory>

#include "core/error.h"
#include "exec/cpu/gemv.h"
#include "engine/graph_session.h"
#include "model/rel_error.h"
#include "model/stored_weights_as_f32.h"

namespace orion::engine::testing {

using MakeFastDecoder = std::function<std::unique_ptr<Decoder>(int threads, exec::cpu::Isa isa)>;

// A prompt of `prompt` tokens, then decode steps up to `length` tokens (ids spread over the
// vocabulary); the fast path's weights in `dtype`, the reference's stored as they are. Returns
// the largest relative error of the decode steps' logits (also printed under `name`).
// `tol` > 0 replaces the format's tolerance.
inline double expect_fast_matches_reference(const model::CausalLm& reference, const MakeFastDecoder& make_fast, int length,
                                            std::size_t prompt, model::WeightDType dtype, const std::string& name,
                                            double tol_given = 0) {
  using exec::cpu::Isa;
  std::vector<std::int32_t> ids;
  for (int i = 0; i < length; ++i) ids.push_back(static_cast<std::int32_t>((i * 37 + 5) % reference.vocab_size()));
  const std::span<const std::int32_t> tokens(ids);
  const bool same_bits_on_every_isa = dtype == model::WeightDType::q8;
  const double tol = tol_given > 0                ? tol_given
                     : same_bits_on_every_isa ? model::testing::kQ8ActivationTol
                                              : model::testing::kAdditionOrderTol;
  std::vector<std::vector<float>> scalar_logits;
  double worst = 0;
  int isas = 0;
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon}) {
    if (!exec::cpu::isa_supported(isa)) continue;
    ++isas;
    for (int threads : {1, 2}) {
      GraphSession ref(reference);
      const std::unique_ptr<Decoder> s = make_fast(threads, isa);
      const std::string where = name + " " + std::string(exec::cpu::isa_name(isa)) + " threads " + std::to_string(threads);
      std::vector<std::vector<float>> logits;
      logits.push_back(s->prefill(tokens.first(prompt)));
      EXPECT_LT(model::testing::rel_error(logits.back(), ref.prefill(tokens.first(prompt))), tol) << where;
      for (std::size_t t = prompt; t < tokens.size(); ++t) {
        logits.push_back(s->decode(tokens[t]));
        const double e = model::testing::rel_error(logits.back(), ref.decode(tokens[t]));
        worst = std::max(worst, e);
        EXPECT_LT(e, tol) << where << " position " << t;
        if (e >= tol) return worst;
      }
      EXPECT_EQ(s->position(), static_cast<std::int64_t>(tokens.size())) << where;
      if (!same_bits_on_every_isa) continue;
      if (scalar_logits.empty()) scalar_logits = logits;
      EXPECT_TRUE(logits == scalar_logits) << where << ": not the scalar path's bits";
    }
  }
  EXPECT_GE(isas, 1);
  std::cout << name << ": largest relative error of the logits against the reference " << worst << "\n";
  return worst;
}

// Against the f32 model itself (not the dequantized one): the error the formats cost, on a
// prompt's logits. `make` gives a fast session with weights in the dtype asked.
inline void expect_quantization_keeps_logits_close(const model::CausalLm& f32_model,
                                                   const std::function<std::unique_ptr<Decoder>(model::WeightDType)>& make) {
  GraphSession ref(f32_model);
  const std::vector<std::int32_t> prompt{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<float> want = ref.prefill(prompt);
  for (auto [dtype, tol] : {std::pair{model::WeightDType::f16, 2e-3}, std::pair{model::WeightDType::q8, 3e-2}})
    EXPECT_LT(model::testing::rel_error(make(dtype)->prefill(prompt), want), tol) << model::weight_dtype_name(dtype);
}

// `s`: a fresh session of a model with a context of 4 and a vocabulary of 10.
inline void expect_refuses_overflow_and_foreign_tokens(Decoder& s) {
  EXPECT_THROW(s.decode(10), Error);
  EXPECT_THROW(s.decode(-1), Error);
  const std::vector<std::int32_t> four{1, 2, 3, 4};
  s.prefill(four);
  EXPECT_THROW(s.decode(1), Error);
  s.reset();
  EXPECT_NO_THROW(s.decode(1));
}

}  // namespace orion::engine::testing
