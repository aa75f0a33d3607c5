#include "engine/fast/fast_engine.h"

#include "engine/fast/gpt2_fast.h"
#include "engine/fast/llama_fast.h"

namespace orion::engine {

namespace {

template <class Session, class Model>
FastEngine engine_of(std::shared_ptr<const Model> fast) {
  FastEngine e;
  e.dtype = fast->dtype();
  e.weight_bytes_per_token = fast->weight_bytes_per_token();
  e.packed_bytes = fast->packed_bytes();
  e.session_bytes = fast->session_bytes();
  e.session = [fast](int threads, exec::cpu::Isa isa) { return std::make_unique<Session>(fast, threads, isa); };
  e.prefill_session = [fast](int threads, std::int64_t batched_min) {
    auto s = std::make_unique<Session>(fast, threads);
    s->set_batched_prefill_min(batched_min);
    return std::unique_ptr<Decoder>(std::move(s));
  };
  e.batched_prefill_flops = [c = fast->config()](std::int64_t cached, std::int64_t tokens) {
    return Session::batched_prefill_flops(c, cached, tokens);
  };
  return e;
}

}  // namespace

FastEngine make_fast_engine(const model::AnyModel& model, model::WeightDType dtype) {
  if (const auto* g = std::get_if<model::Gpt2Model>(&model))
    return engine_of<Gpt2FastSession>(std::make_shared<const Gpt2FastModel>(*g, dtype));
  return engine_of<LlamaFastSession>(std::make_shared<const LlamaFastModel>(std::get<model::LlamaModel>(model), dtype));
}

}  // namespace orion::engine
