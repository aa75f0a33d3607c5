#include "model/gpt2_session.h"

#include <cstring>
#include <limits>

#include "core/error.h"
#include "model/gpt2.h"

namespace orion::model {

std::int64_t gpt2_past_bucket(std::int64_t past, std::int64_t n_positions) {
  std::int64_t b = 16;
  while (b < past) b *= 2;
  return std::min(b, n_positions);
}

Gpt2Session::Gpt2Session(const Gpt2Model& model, exec::CpuOptions options)
    : model_(model), options_(options) {
  const auto& c = model.config();
  for (std::int64_t l = 0; l < c.n_layer; ++l) {
    k_cache_.emplace_back(DType::f32, Shape{c.n_positions, c.n_embd});
    v_cache_.emplace_back(DType::f32, Shape{c.n_positions, c.n_embd});
  }
}

Gpt2Session::~Gpt2Session() = default;

exec::CpuExecutor& Gpt2Session::executor(std::int64_t seq, std::int64_t past, bool last_only) {
  auto& slot = executors_[{seq, past, last_only}];
  if (!slot)
    slot = std::make_unique<exec::CpuExecutor>(gpt2_graph(model_.config(), {seq, past, last_only}), options_);
  return *slot;
}

exec::Bindings Gpt2Session::window_inputs(std::span<const std::int32_t> tokens, std::int64_t start) const {
  exec::Bindings in = model_.weights();
  std::vector<std::int32_t> pos(tokens.size());
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(start + static_cast<std::int64_t>(i));
  const auto T = static_cast<std::int64_t>(tokens.size());
  in["tokens"] = Tensor::from_ints({T}, tokens);
  in["positions"] = Tensor::from_ints({T}, pos);
  return in;
}

void Gpt2Session::check_tokens(std::span<const std::int32_t> tokens) const {
  const auto& c = model_.config();
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= c.vocab_size)
      throw Error("token " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                  " is outside the vocabulary of " + std::to_string(c.vocab_size));
}

std::vector<float> Gpt2Session::prefill(std::span<const std::int32_t> tokens) {
  const auto& c = model_.config();
  const auto T = static_cast<std::int64_t>(tokens.size());
  if (T == 0) throw Error("gpt2: nothing to run (no tokens)");
  if (position_ + T > c.n_positions)
    throw Error("gpt2: the context of " + std::to_string(c.n_positions) + " tokens is full (" +
                std::to_string(position_) + " cached, " + std::to_string(T) + " more)");
  check_tokens(tokens);

  exec::Bindings in = window_inputs(tokens, position_);

  std::int64_t past = 0;
  if (position_ > 0) {
    past = gpt2_past_bucket(position_, c.n_positions - T);
    // Query i (at position position_ + i) sees the cached positions and the window up to itself;
    // bucket rows past what is cached hold stale data and are masked out.
    Tensor mask(DType::f32, {T, past + T});
    float* m = mask.data<float>();
    const float ninf = -std::numeric_limits<float>::infinity();
    for (std::int64_t i = 0; i < T; ++i)
      for (std::int64_t j = 0; j < past + T; ++j)
        m[i * (past + T) + j] = j < position_ || (j >= past && j - past <= i) ? 0.0f : ninf;
    in["mask"] = mask;
    for (std::int64_t l = 0; l < c.n_layer; ++l) {
      const auto u = static_cast<std::size_t>(l);
      in["past_k." + std::to_string(l)] = k_cache_[u].slice(0, 0, past);
      in["past_v." + std::to_string(l)] = v_cache_[u].slice(0, 0, past);
    }
  }
  const std::vector<Tensor> out = executor(T, past, true).run(in);
  // Outputs: logits, then k.L, v.L per layer [T, n_embd]: append them to the cache.
  const std::size_t row_bytes = static_cast<std::size_t>(c.n_embd) * sizeof(float);
  for (std::int64_t l = 0; l < c.n_layer; ++l) {
    const auto u = static_cast<std::size_t>(l);
    std::memcpy(k_cache_[u].data<float>() + position_ * c.n_embd, out[1 + 2 * u].raw(), row_bytes * static_cast<std::size_t>(T));
    std::memcpy(v_cache_[u].data<float>() + position_ * c.n_embd, out[2 + 2 * u].raw(), row_bytes * static_cast<std::size_t>(T));
  }
  position_ += T;
  const auto logits = out[0].span<float>();
  return {logits.begin(), logits.end()};
}

Tensor Gpt2Session::window_logits(std::span<const std::int32_t> tokens) {
  const auto& c = model_.config();
  const auto T = static_cast<std::int64_t>(tokens.size());
  if (T == 0 || T > c.n_positions)
    throw Error("gpt2: a window of " + std::to_string(T) + " tokens does not fit the context of " +
                std::to_string(c.n_positions));
  check_tokens(tokens);
  exec::Bindings in = window_inputs(tokens, 0);
  return executor(T, 0, false).run(in).at(0);
}

void Gpt2Session::load_cache(std::span<const Tensor> k, std::span<const Tensor> v) {
  const Gpt2Config& c = model_.config();
  if (k.size() != k_cache_.size() || v.size() != v_cache_.size())
    throw Error("load_cache: " + std::to_string(k.size()) + " layers of keys for a model of " + std::to_string(k_cache_.size()));
  const std::int64_t n = k.empty() ? 0 : k[0].dim(0);
  for (std::size_t l = 0; l < k.size(); ++l)
    for (const Tensor* t : {&k[l], &v[l]})
      if (t->shape() != Shape{n, c.n_embd} || t->dtype() != DType::f32 || n > c.n_positions)
        throw Error("load_cache: layer " + std::to_string(l) + " holds " + std::string(dtype_name(t->dtype())) + shape_str(t->shape()) +
                    ", expected f32[" + std::to_string(n) + ", " + std::to_string(c.n_embd) + "]");
  for (std::size_t l = 0; l < k.size(); ++l) {
    std::memcpy(k_cache_[l].raw(), k[l].contiguous().raw(), k[l].nbytes());
    std::memcpy(v_cache_[l].raw(), v[l].contiguous().raw(), v[l].nbytes());
  }
  position_ = n;
}

}  // namespace orion::model
