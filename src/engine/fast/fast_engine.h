#pragma once
// The fast CPU engine of any architecture it runs (GPT-2: engine/fast/gpt2_fast.h; Llama:
// engine/fast/llama_fast.h), for the tools that take any model folder: the packed model behind a
// session factory and the figures they report.
#include <cstdint>
#include <functional>
#include <memory>

#include "exec/cpu/gemv.h"
#include "model/any_model.h"
#include "engine/decoder.h"
#include "engine/fast/packed_linear.h"

namespace orion::engine {

struct FastEngine {
  model::WeightDType dtype = model::WeightDType::f32;
  // Sessions over the one packed model (each with its own cache and threads).
  std::function<std::unique_ptr<Decoder>(int threads, exec::cpu::Isa isa)> session;
  std::size_t weight_bytes_per_token = 0;  // what one decode step streams
  std::size_t packed_bytes = 0;            // what packing copied (0: all mapped from the file)
  std::uint64_t session_bytes = 0;         // one session's KV cache and activations
  // Batched prefill (orion bench prefill): a session whose prompts of at least `batched_min`
  // tokens (>= 1; the sessions' default is prefill::kDefaultBatchedMin) run as matrix
  // products, and the FLOPs of those products for `tokens` after `cached` positions (the
  // sessions' batched_prefill_flops).
  std::function<std::unique_ptr<Decoder>(int threads, std::int64_t batched_min)> prefill_session;
  std::function<double(std::int64_t cached, std::int64_t tokens)> batched_prefill_flops;
};

// The model's weights in `dtype` (a GPT-2 folder `orion convert` wrote in `dtype` is used from
// the file). The model may be dropped afterwards.
FastEngine make_fast_engine(const model::AnyModel& model, model::WeightDType dtype);

}  // namespace orion::engine
