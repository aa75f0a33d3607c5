#include "train/optim/adamw.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "train/optim/adamw_kernels.h"

namespace orion::train {

namespace {

// Elements per unit of work: 256 KiB of each array, long enough for the hardware prefetchers
// and to amortise handing out work, short enough that 2 threads split even a 768 x 768 matrix.
constexpr std::int64_t kChunk = 64 * 1024;

void check_f32(const Tensor& t, std::string_view what, std::string_view name) {
  if (t.dtype() != DType::f32)
    throw Error(std::string(what) + " '" + std::string(name) + "' is " + std::string(dtype_name(t.dtype())) +
                ", not f32");
  if (!t.is_contiguous()) throw Error(std::string(what) + " '" + std::string(name) + "' is not contiguous");
}

void check_hyper(const AdamWConfig& c) {
  const auto bad = [](const std::string& what) { throw Error("AdamW: " + what); };
  if (!(c.beta1 >= 0.0 && c.beta1 < 1.0)) bad("beta1 " + std::to_string(c.beta1) + " is not in [0, 1)");
  if (!(c.beta2 >= 0.0 && c.beta2 < 1.0)) bad("beta2 " + std::to_string(c.beta2) + " is not in [0, 1)");
  if (!(c.eps > 0.0)) bad("eps " + std::to_string(c.eps) + " is not positive");
  if (!(c.weight_decay >= 0.0)) bad("weight_decay " + std::to_string(c.weight_decay) + " is negative");
  if (!std::isfinite(c.clip_norm)) bad("clip_norm is not finite");
  if (c.threads < 0) bad("threads " + std::to_string(c.threads) + " is negative");
}

}  // namespace

AdamW::AdamW(const AdamWConfig& config, const TensorMap& params) : config_(config) {
  check_hyper(config_);
  detail::adamw_kernels(config_.isa);  // refuses an ISA this CPU cannot run, now rather than at the first step
  pool_ = std::make_unique<ThreadPool>(config_.threads);
  for (const auto& [name, t] : params) {
    check_f32(t, "AdamW: parameter", name);
    const std::size_t index = params_.size();
    params_.push_back({name, t.shape(), t.rank() >= 2, Tensor(DType::f32, t.shape()), Tensor(DType::f32, t.shape())});
    for (std::int64_t b = 0; b < t.numel(); b += kChunk) chunks_.push_back({index, b, std::min(b + kChunk, t.numel())});
  }
  chunk_sums_.resize(chunks_.size());
}

AdamW::~AdamW() = default;

bool AdamW::known(std::string_view name) const {
  return std::any_of(params_.begin(), params_.end(), [&](const Param& p) { return p.name == name; });
}

bool AdamW::decays(std::string_view name) const {
  for (const Param& p : params_)
    if (p.name == name) return p.decay;
  return false;
}

AdamW::StepResult AdamW::step(TensorMap& params, const TensorMap& grads, double lr, double grad_scale) {
  if (!(grad_scale > 0.0) || !std::isfinite(grad_scale))
    throw Error("AdamW::step: grad_scale " + std::to_string(grad_scale) + " is not a positive number");
  if (!std::isfinite(lr)) throw Error("AdamW::step: the learning rate is not finite");
  if (params.size() != params_.size() || grads.size() != params_.size())
    for (const TensorMap* map : std::initializer_list<const TensorMap*>{&params, &grads})
      for (const auto& [name, t] : *map)
        if (!known(name)) throw Error("AdamW::step: '" + name + "' is not a parameter the optimizer was made for");
  std::vector<float*> p_data(params_.size());
  std::vector<const float*> g_data(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Param& prm = params_[i];
    const auto p = params.find(prm.name);
    if (p == params.end()) throw Error("AdamW::step: parameter '" + prm.name + "' is missing");
    const auto g = grads.find(prm.name);
    if (g == grads.end()) throw Error("AdamW::step: the gradient of '" + prm.name + "' is missing");
    check_f32(p->second, "AdamW::step: parameter", prm.name);
    check_f32(g->second, "AdamW::step: gradient", prm.name);
    if (p->second.shape() != prm.shape)
      throw Error("AdamW::step: parameter '" + prm.name + "' has shape " + shape_str(p->second.shape()) +
                  ", the optimizer was made for " + shape_str(prm.shape));
    if (g->second.shape() != prm.shape)
      throw Error("AdamW::step: the gradient of '" + prm.name + "' has shape " + shape_str(g->second.shape()) +
                  ", the parameter " + shape_str(prm.shape));
    p_data[i] = p->second.data<float>();
    g_data[i] = g->second.data<const float>();
  }

  const detail::AdamWKernels& k = detail::adamw_kernels(config_.isa);
  const auto n_chunks = static_cast<std::int64_t>(chunks_.size());
  pool_->parallel_for(0, n_chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t c = lo; c < hi; ++c) {
      const Chunk& ch = chunks_[static_cast<std::size_t>(c)];
      chunk_sums_[static_cast<std::size_t>(c)] = k.sum_squares(g_data[ch.param] + ch.begin, ch.end - ch.begin);
    }
  });
  double sum = 0.0;
  for (const double s : chunk_sums_) sum += s;
  const double norm = std::sqrt(sum) / grad_scale;
  if (!std::isfinite(norm))
    throw Error("AdamW::step: the gradients are not finite (norm " + std::to_string(norm) +
                "); nothing was updated (check all_finite before stepping)");
  const bool clipped = config_.clip_norm > 0.0 && norm > config_.clip_norm;

  const std::int64_t t = steps_ + 1;
  const double bc1 = 1.0 - std::pow(config_.beta1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(config_.beta2, static_cast<double>(t));
  detail::AdamWCoeffs with_decay;
  with_decay.grad_mul = static_cast<float>((clipped ? config_.clip_norm / norm : 1.0) / grad_scale);
  with_decay.beta1 = static_cast<float>(config_.beta1);
  with_decay.one_minus_beta1 = static_cast<float>(1.0 - config_.beta1);
  with_decay.beta2 = static_cast<float>(config_.beta2);
  with_decay.one_minus_beta2 = static_cast<float>(1.0 - config_.beta2);
  with_decay.step_size = static_cast<float>(lr / bc1);
  with_decay.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  with_decay.eps = static_cast<float>(config_.eps);
  with_decay.decay = static_cast<float>(1.0 - lr * config_.weight_decay);
  detail::AdamWCoeffs no_decay = with_decay;
  no_decay.decay = 1.0f;

  pool_->parallel_for(0, n_chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t c = lo; c < hi; ++c) {
      const Chunk& ch = chunks_[static_cast<std::size_t>(c)];
      Param& prm = params_[ch.param];
      k.update(p_data[ch.param] + ch.begin, g_data[ch.param] + ch.begin, prm.m.data<float>() + ch.begin,
               prm.v.data<float>() + ch.begin, ch.end - ch.begin, prm.decay ? with_decay : no_decay);
    }
  });
  steps_ = t;
  return {norm, clipped};
}

TensorMap AdamW::state() const {
  TensorMap out;
  for (const Param& p : params_) {
    out.emplace("m." + p.name, p.m);
    out.emplace("v." + p.name, p.v);
  }
  return out;
}

void AdamW::restore(const TensorMap& state, std::int64_t steps) {
  if (steps < 0) throw Error("AdamW::restore: negative step count " + std::to_string(steps));
  if (state.size() != 2 * params_.size())
    for (const auto& [name, t] : state) {
      if (!(name.starts_with("m.") || name.starts_with("v.")) || !known(std::string_view(name).substr(2))) throw Error("AdamW::restore: optimizer state '" + name + "' belongs to no parameter");
    }
  // Check everything before changing anything.
  std::vector<std::pair<const Tensor*, const Tensor*>> found;
  for (const Param& p : params_) {
    const Tensor* mv[2];
    for (int which = 0; which < 2; ++which) {
      const std::string name = (which == 0 ? "m." : "v.") + p.name;
      const auto it = state.find(name);
      if (it == state.end()) throw Error("AdamW::restore: optimizer state '" + name + "' is missing");
      if (it->second.dtype() != DType::f32)
        throw Error("AdamW::restore: optimizer state '" + name + "' is " + std::string(dtype_name(it->second.dtype())) +
                    ", not f32");
      if (it->second.shape() != p.shape)
        throw Error("AdamW::restore: optimizer state '" + name + "' has shape " + shape_str(it->second.shape()) +
                    ", the parameter " + shape_str(p.shape));
      mv[which] = &it->second;
    }
    found.emplace_back(mv[0], mv[1]);
  }
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor m = found[i].first->contiguous(), v = found[i].second->contiguous();
    std::memcpy(params_[i].m.raw(), m.raw(), m.nbytes());
    std::memcpy(params_[i].v.raw(), v.raw(), v.nbytes());
  }
  steps_ = steps;
}

bool all_finite(const TensorMap& tensors, ThreadPool* pool) {
  const detail::AdamWKernels& k = detail::adamw_kernels(exec::cpu::best_isa());
  struct Piece {
    const float* data;
    std::int64_t n;
  };
  std::vector<Piece> pieces;
  std::vector<Tensor> keep;  // the pieces' tensors (contiguous copies of strided views) stay alive
  for (const auto& [name, tensor] : tensors) {
    const Tensor t = tensor.contiguous();
    if (t.dtype() == DType::f16 || t.dtype() == DType::bf16) {
      const std::uint16_t exp = t.dtype() == DType::f16 ? 0x7c00 : 0x7f80;
      for (const std::uint16_t bits : t.span<const std::uint16_t>())
        if ((bits & exp) == exp) return false;
      continue;
    }
    if (t.dtype() != DType::f32) continue;
    keep.push_back(t);
    for (std::int64_t b = 0; b < t.numel(); b += kChunk)
      pieces.push_back({t.data<const float>() + b, std::min(kChunk, t.numel() - b)});
  }
  std::atomic<bool> finite{true};
  const auto check = [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi && finite.load(std::memory_order_relaxed); ++i)
      if (!k.all_finite(pieces[static_cast<std::size_t>(i)].data, pieces[static_cast<std::size_t>(i)].n))
        finite.store(false, std::memory_order_relaxed);
  };
  if (pool) pool->parallel_for(0, static_cast<std::int64_t>(pieces.size()), 1, check);
  else check(0, static_cast<std::int64_t>(pieces.size()));
  return finite.load();
}

}  // namespace orion::train
