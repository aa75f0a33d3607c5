#pragma once
// AdamW (Loshchilov & Hutter) over f32 master weights, with global gradient-norm clipping and
// decoupled weight decay on matrices only, as GPT-2 is trained (nanoGPT, llm.c).
//
// One step, for the t-th call (t counts from 1) and every element:
//   g = grad / grad_scale * clip,  clip = clip_norm / |grad / grad_scale| when that norm is
//       above clip_norm (> 0), else 1; the norm is over every element of every gradient
//   m = beta1 m + (1 - beta1) g,  v = beta2 v + (1 - beta2) g^2
//   p = p (1 - lr wd) - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// with wd = 0 for parameters of rank below 2 (biases, norms' gains).
//
// The step streams every parameter, gradient and moment once (28 bytes an element) plus the
// gradients once more for the norm, so it is bound by memory bandwidth: both passes run on a
// thread pool, in AVX-512 / AVX2 / NEON / portable loops chosen at run time (adamw_kernels.h).
// Deterministic: the work is cut into fixed chunks of each tensor, whatever the thread count;
// the norm is the f64 sum of the chunks' f64 sums of squares in a fixed order, and the update
// of an element does not depend on where it falls. So the same inputs give the same bits on
// any number of threads (and the update is the same on every ISA; only the norm's order of
// additions, and with it the clip coefficient's last bits, depends on the ISA).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/thread_pool.h"
#include "exec/cpu/executor.h"
#include "exec/cpu/gemv.h"

namespace orion::train {

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
  double clip_norm = 1.0;  // <= 0: no clipping
  int threads = 0;         // of the optimizer's own pool; 0: every core
  exec::cpu::Isa isa = exec::cpu::best_isa();
};

class AdamW {
 public:
  // One first and second moment per param (f32 zeros); weight decay only for matrices
  // (rank >= 2), never for biases, norms' gains or other 1-D params. Throws orion::Error
  // naming the parameter when one is not f32, and for bad hyper-parameters.
  AdamW(const AdamWConfig& config, const TensorMap& params);
  AdamW(const AdamW&) = delete;
  AdamW& operator=(const AdamW&) = delete;
  ~AdamW();

  struct StepResult {
    double grad_norm;  // of the true gradients (grad_scale divided out), before clipping
    bool clipped;
  };
  // params: f32 master weights (contiguous), updated in place. grads: f32, the same names and
  // shapes, holding grad_scale times the true gradient (loss scale x accumulated
  // micro-batches); divided out here. Throws orion::Error naming the tensor for a missing,
  // extra or mis-shaped one, and, before anything is written, when the gradients are not
  // finite (callers check all_finite first; this is the last guard that a NaN never reaches
  // the weights).
  StepResult step(TensorMap& params, const TensorMap& grads, double lr, double grad_scale = 1.0);

  // Steps taken (t of the last step).
  std::int64_t steps() const { return steps_; }
  // Whether weight decay applies to the parameter (false for unknown names).
  bool decays(std::string_view name) const;

  // The moments as tensors "m.<param>" and "v.<param>". They share storage with the
  // optimizer: the next step changes them (clone to keep a copy).
  TensorMap state() const;
  // Copies moments saved by state() back in and sets the step count. Throws orion::Error
  // naming the tensor for a missing, extra, mis-shaped or non-f32 one (nothing is changed
  // then), and for negative steps.
  void restore(const TensorMap& state, std::int64_t steps);

  ThreadPool& pool() { return *pool_; }

 private:
  struct Param {
    std::string name;
    Shape shape;
    bool decay;
    Tensor m, v;
  };
  // A fixed piece of one parameter: the unit of work of both passes.
  struct Chunk {
    std::size_t param;
    std::int64_t begin, end;
  };

  bool known(std::string_view name) const;

  AdamWConfig config_;
  std::unique_ptr<ThreadPool> pool_;
  std::vector<Param> params_;  // in the map's (name) order
  std::vector<Chunk> chunks_;
  std::vector<double> chunk_sums_;
  std::int64_t steps_ = 0;
};

// True when every element of every tensor is finite (the loss scaler's check): f32 through the
// vectorised loops, f16 and bf16 by their exponent bits; integer tensors are always finite.
// Runs on `pool` when given, else on the calling thread.
bool all_finite(const TensorMap& tensors, ThreadPool* pool = nullptr);

}  // namespace orion::train
