#pragma once
// Dynamic loss scaling for fp16 training: the loss is multiplied by scale() before the
// backward pass so that small gradients survive fp16's range, and the optimizer divides it
// out again (AdamW::step's grad_scale). A step whose gradients hold an inf or a NaN is skipped
// and the scale halved; after growth_interval clean steps in a row the scale doubles.
#include <cstdint>

#include <nlohmann/json_fwd.hpp>

namespace orion::train {

struct LossScalerConfig {
  double initial = 65536.0;
  std::int64_t growth_interval = 1000;
  double factor = 2.0;
  double min_scale = 1.0;
  double max_scale = 16777216.0;  // 2^24
  bool enabled = true;            // false: the scale stays 1 (non-finite steps are still skipped)
};

class LossScaler {
 public:
  // Throws orion::Error for a config that cannot work (factor <= 1, min_scale <= 0,
  // max_scale < min_scale, initial outside [min_scale, max_scale], growth_interval < 1).
  explicit LossScaler(const LossScalerConfig& config = {});

  double scale() const { return scale_; }
  // After the backward pass: whether the step may be applied. Non-finite gradients: false,
  // the scale divided by factor (not below min_scale), the skipped count up, the clean run
  // reset. Finite: true, and after growth_interval finite steps in a row the scale is
  // multiplied by factor (not above max_scale).
  bool update(bool grads_finite);

  std::int64_t skipped_steps() const { return skipped_; }
  std::int64_t clean_steps() const { return clean_; }  // finite steps since the last change

  // {"scale", "clean_steps", "skipped_steps"}: the state a checkpoint keeps (the config is the
  // trainer's options). from_json checks every field and throws orion::Error naming its JSON
  // path (e.g. "loss scaler state: /scale: ...").
  nlohmann::json to_json() const;
  void from_json(const nlohmann::json& state);

 private:
  LossScalerConfig config_;
  double scale_;
  std::int64_t clean_ = 0;
  std::int64_t skipped_ = 0;
};

}  // namespace orion::train
