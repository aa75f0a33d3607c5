#include "train/optim/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace orion::train {

namespace {

[[noreturn]] void bad_state(const std::string& path, const std::string& what) {
  throw Error("loss scaler state: " + path + ": " + what);
}

}  // namespace

LossScaler::LossScaler(const LossScalerConfig& config) : config_(config) {
  const LossScalerConfig& c = config_;
  if (!c.enabled) {
    scale_ = 1.0;
    return;
  }
  if (!(c.factor > 1.0) || !std::isfinite(c.factor)) throw Error("loss scaler: factor must be above 1");
  if (!(c.min_scale > 0.0)) throw Error("loss scaler: min_scale must be positive");
  if (!(c.max_scale >= c.min_scale) || !std::isfinite(c.max_scale))
    throw Error("loss scaler: max_scale must be finite and at least min_scale");
  if (!(c.initial >= c.min_scale && c.initial <= c.max_scale))
    throw Error("loss scaler: initial scale " + std::to_string(c.initial) + " is outside [min_scale, max_scale]");
  if (c.growth_interval < 1) throw Error("loss scaler: growth_interval must be at least 1");
  scale_ = c.initial;
}

bool LossScaler::update(bool grads_finite) {
  if (!grads_finite) {
    ++skipped_;
    clean_ = 0;
    if (config_.enabled) scale_ = std::max(scale_ / config_.factor, config_.min_scale);
    return false;
  }
  if (config_.enabled && ++clean_ >= config_.growth_interval) {
    scale_ = std::min(scale_ * config_.factor, config_.max_scale);
    clean_ = 0;
  }
  return true;
}

nlohmann::json LossScaler::to_json() const {
  return {{"scale", scale_}, {"clean_steps", clean_}, {"skipped_steps", skipped_}};
}

void LossScaler::from_json(const nlohmann::json& state) {
  if (!state.is_object()) bad_state("/", "expected an object");
  const auto field = [&](const char* name) -> const nlohmann::json& {
    const auto it = state.find(name);
    if (it == state.end()) bad_state(std::string("/") + name, "missing");
    return *it;
  };
  const nlohmann::json& scale = field("scale");
  if (!scale.is_number()) bad_state("/scale", "expected a number");
  const double s = scale.get<double>();
  const double lo = config_.enabled ? config_.min_scale : 1.0, hi = config_.enabled ? config_.max_scale : 1.0;
  if (!(s >= lo && s <= hi))
    bad_state("/scale", std::to_string(s) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  std::int64_t counts[2];
  const char* names[2] = {"clean_steps", "skipped_steps"};
  for (int i = 0; i < 2; ++i) {
    const nlohmann::json& v = field(names[i]);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
      bad_state(std::string("/") + names[i], "expected a non-negative integer");
    counts[i] = v.get<std::int64_t>();
  }
  scale_ = s;
  clean_ = counts[0];
  skipped_ = counts[1];
}

}  // namespace orion::train
