#include "engine/graph_session.h"

#include <cstring>
#include <limits>

#include "core/error.h"

namespace orion::engine {

std::int64_t past_bucket(std::int64_t past, std::int64_t context) {
  std::int64_t b = 16;
  while (b < past) b *= 2;
  return std::min(b, context);
}

GraphSession::GraphSession(const model::CausalLm& model, exec::CpuOptions options)
    : model_(model), options_(options) {
  for (std::int64_t l = 0; l < model.layers(); ++l) {
    const std::optional<model::CausalLm::RecurrentState> rs = model.recurrent_state(l);
    recurrent_.push_back(rs.has_value());
    k_cache_.emplace_back(DType::f32, rs ? rs->conv : Shape{model.context(), model.kv_width()});
    v_cache_.emplace_back(DType::f32, rs ? rs->state : Shape{model.context(), model.kv_width()});
  }
}

GraphSession::~GraphSession() = default;

exec::CpuExecutor& GraphSession::executor(std::int64_t seq, std::int64_t past, bool last_only) {
  auto& slot = executors_[{seq, past, last_only}];
  if (!slot)
    slot = std::make_unique<exec::CpuExecutor>(model_.decoding_graph(seq, past, last_only), options_);
  return *slot;
}

TensorMap GraphSession::window_inputs(std::span<const std::int32_t> tokens, std::int64_t start) const {
  TensorMap in = model_.weights();
  std::vector<std::int32_t> pos(tokens.size());
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(start + static_cast<std::int64_t>(i));
  const auto T = static_cast<std::int64_t>(tokens.size());
  in["tokens"] = Tensor::from_ints({T}, tokens);
  in["positions"] = Tensor::from_ints({T}, pos);
  return in;
}

void GraphSession::check_tokens(std::span<const std::int32_t> tokens) const {
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= model_.vocab_size())
      throw Error("token " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                  " is outside the vocabulary of " + std::to_string(model_.vocab_size()));
}

std::vector<float> GraphSession::prefill(std::span<const std::int32_t> tokens) {
  const auto T = static_cast<std::int64_t>(tokens.size());
  if (T == 0) throw Error(std::string(model_.arch()) + ": nothing to run (no tokens)");
  if (position_ + T > model_.context())
    throw Error(std::string(model_.arch()) + ": the context of " + std::to_string(model_.context()) + " tokens is full (" +
                std::to_string(position_) + " cached, " + std::to_string(T) + " more)");
  check_tokens(tokens);

  TensorMap in = window_inputs(tokens, position_);

  std::int64_t past = 0;
  if (position_ > 0) {
    past = past_bucket(position_, model_.context() - T);
    // Query i (at position position_ + i) sees the cached positions and the window up to itself;
    // bucket rows past what is cached hold stale data and are masked out. A sliding layer's
    // mask also hides the keys `window` or more positions back.
    auto mask_of = [&](std::int64_t window) {
      Tensor mask(DType::f32, {T, past + T});
      float* m = mask.data<float>();
      const float ninf = -std::numeric_limits<float>::infinity();
      for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t j = 0; j < past + T; ++j) {
          const std::int64_t key = j < past ? j : position_ + j - past;
          const bool seen = j < position_ || (j >= past && j - past <= i);
          m[i * (past + T) + j] = seen && (window == 0 || position_ + i - key < window) ? 0.0f : ninf;
        }
      return mask;
    };
    in["mask"] = mask_of(0);
    if (model_.local_window() > 0) in["mask_local"] = mask_of(model_.local_window());
    for (std::int64_t l = 0; l < model_.layers(); ++l) {
      const auto u = static_cast<std::size_t>(l);
      const std::string ls = std::to_string(l);
      if (recurrent_[u]) {
        in["past_conv." + ls] = k_cache_[u];
        in["past_state." + ls] = v_cache_[u];
        continue;
      }
      in["past_k." + ls] = k_cache_[u].slice(0, 0, past);
      in["past_v." + ls] = v_cache_[u].slice(0, 0, past);
    }
  }
  const std::vector<Tensor> out = executor(T, past, true).run(in);
  // Outputs: logits, then k.L, v.L per layer [T, kv_width]: append them to the cache; or a
  // recurrent layer's conv.L and state.L, which replace its state.
  const std::size_t row_bytes = static_cast<std::size_t>(model_.kv_width()) * sizeof(float);
  for (std::int64_t l = 0; l < model_.layers(); ++l) {
    const auto u = static_cast<std::size_t>(l);
    if (recurrent_[u]) {
      k_cache_[u] = out[1 + 2 * u].clone();  // the executor may reuse its outputs' memory
      v_cache_[u] = out[2 + 2 * u].clone();
      continue;
    }
    std::memcpy(k_cache_[u].data<float>() + position_ * model_.kv_width(), out[1 + 2 * u].raw(), row_bytes * static_cast<std::size_t>(T));
    std::memcpy(v_cache_[u].data<float>() + position_ * model_.kv_width(), out[2 + 2 * u].raw(), row_bytes * static_cast<std::size_t>(T));
  }
  position_ += T;
  const auto logits = out[0].span<float>();
  return {logits.begin(), logits.end()};
}

Tensor GraphSession::window_logits(std::span<const std::int32_t> tokens) {
  const auto T = static_cast<std::int64_t>(tokens.size());
  if (T == 0 || T > model_.context())
    throw Error(std::string(model_.arch()) + ": a window of " + std::to_string(T) + " tokens does not fit the context of " +
                std::to_string(model_.context()));
  check_tokens(tokens);
  TensorMap in = window_inputs(tokens, 0);
  return executor(T, 0, false).run(in).at(0);
}

void GraphSession::load_cache(std::span<const Tensor> k, std::span<const Tensor> v) {
  for (std::int64_t l = 0; l < model_.layers(); ++l)
    if (recurrent_[static_cast<std::size_t>(l)])
      throw Error("load_cache: layer " + std::to_string(l) + " of " + std::string(model_.arch()) +
                  " keeps a recurrent state, not a KV cache another engine could hand over");
  if (k.size() != k_cache_.size() || v.size() != v_cache_.size())
    throw Error("load_cache: " + std::to_string(k.size()) + " layers of keys for a model of " + std::to_string(k_cache_.size()));
  const std::int64_t n = k.empty() ? 0 : k[0].dim(0);
  for (std::size_t l = 0; l < k.size(); ++l)
    for (const Tensor* t : {&k[l], &v[l]})
      if (t->shape() != Shape{n, model_.kv_width()} || t->dtype() != DType::f32 || n > model_.context())
        throw Error("load_cache: layer " + std::to_string(l) + " holds " + std::string(dtype_name(t->dtype())) + shape_str(t->shape()) +
                    ", expected f32[" + std::to_string(n) + ", " + std::to_string(model_.kv_width()) + "]");
  for (std::size_t l = 0; l < k.size(); ++l) {
    std::memcpy(k_cache_[l].raw(), k[l].contiguous().raw(), k[l].nbytes());
    std::memcpy(v_cache_[l].raw(), v[l].contiguous().raw(), v[l].nbytes());
  }
  position_ = n;
}

}  // namespace orion::engine
