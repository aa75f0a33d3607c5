#pragma once
// The checks both fast engines' batched-prefill tests make against their token-by-token path
// (gpt2_fast_prefill_test.cpp, llama_fast_prefill_test.cpp): a Session (Gpt2FastSession or
// LlamaFastSession) whose every prompt runs batched against one whose every prompt runs a token
// at a time, on the prompt's last logits and on the decode steps that read the cache it left.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/rel_error.h"

namespace orion::engine::testing {

// `n` token ids spread over the vocabulary.
inline std::vector<std::int32_t> spread_tokens(std::size_t n, std::int64_t vocab) {
  std::vector<std::int32_t> t;
  for (std::size_t i = 0; i < n; ++i) t.push_back(static_cast<std::int32_t>((i * 37 + 5) % static_cast<std::size_t>(vocab)));
  return t;
}

// For one and two threads and prompt lengths reaching every tail of the attention's query
// blocks (128): the batched prefill of `fast` against the token-by-token prefill of `ref`
// (the same model, or for q8 an f32 model of its dequantised weights), then 6 decode steps.
template <class Session, class FastModel>
void expect_batched_prefill_matches(const std::shared_ptr<const FastModel>& fast, const std::shared_ptr<const FastModel>& ref,
                                    std::int64_t vocab, double tol, const std::string& name) {
  const auto tokens = spread_tokens(290, vocab);
  constexpr std::size_t kDecode = 6;
  for (int threads : {1, 2}) {
    for (std::size_t T : {1, 2, 5, 33, 127, 128, 129, 257}) {
      const std::string what = name + " prompt " + std::to_string(T) + " threads " + std::to_string(threads);
      Session r(ref, threads), s(fast, threads);
      r.set_batched_prefill_min(1'000'000);  // token by token
      s.set_batched_prefill_min(1);
      const auto prompt = std::span(tokens).first(T);
      EXPECT_LT(model::testing::rel_error(s.prefill(prompt), r.prefill(prompt)), tol) << what;
      EXPECT_EQ(s.position(), static_cast<std::int64_t>(T));
      for (std::size_t i = T; i < T + kDecode; ++i)
        ASSERT_LT(model::testing::rel_error(s.decode(tokens[i]), r.decode(tokens[i])), tol) << what << " decode at " << i;
    }
  }
}

// A prompt of 200 tokens in pieces (cache before each batched piece: 0, 3, 40, 170 positions;
// the piece of 1 takes step()) against the same tokens one at a time, then one decode step:
// the batched attention reads the cached keys as well.
template <class Session, class FastModel>
void expect_batched_pieces_match(const std::shared_ptr<const FastModel>& fast, std::int64_t vocab, double tol) {
  const auto tokens = spread_tokens(200, vocab);
  Session ref(fast, 2), s(fast, 2);
  ref.set_batched_prefill_min(1'000'000);
  s.set_batched_prefill_min(2);
  std::size_t at = 0;
  for (std::size_t piece : {3, 37, 130, 1, 29}) {
    const auto part = std::span(tokens).subspan(at, piece);
    EXPECT_LT(model::testing::rel_error(s.prefill(part), ref.prefill(part)), tol) << "piece from " << at;
    at += piece;
  }
  EXPECT_EQ(s.position(), 200);
  EXPECT_LT(model::testing::rel_error(s.decode(9), ref.decode(9)), tol);
}

}  // namespace orion::engine::testing
