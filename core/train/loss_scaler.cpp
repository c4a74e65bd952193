#include "core/train/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace parascope {

LossScaler::LossScaler(const LossScaleSpec& spec, bool enabled) : spec_(spec), enabled_(enabled) {
  if (!enabled) return;
  scale_ = spec.staticScale > 0 ? spec.staticScale : std::ldexp(1.0, spec.initialScalePower);
  hysteresis_ = spec.hysteresis;
}

void LossScaler::update(bool overflow) {
  if (!enabled_ || spec_.staticScale > 0) return;
  if (overflow) {
    if (spec_.hysteresis == 1 || hysteresis_ == 1) {
      if (scale_ == spec_.minLossScale) {
        throw std::runtime_error(
            "fp16: gradients overflow at the minimum loss scale (fp16.min_loss_scale = " +
            std::to_string(spec_.minLossScale) + "); cannot lower the scale any further");
      }
      scale_ = std::max(scale_ / 2.0, spec_.minLossScale);
    } else {
      hysteresis_ -= 1;
    }
    lastOverflow_ = iteration_;
  } else {
    if (spec_.consecutiveHysteresis) hysteresis_ = spec_.hysteresis;
    if ((iteration_ - lastOverflow_) % spec_.lossScaleWindow == 0) {
      if (!spec_.consecutiveHysteresis) hysteresis_ = spec_.hysteresis;
      scale_ *= 2.0;
    }
  }
  ++iteration_;
}

}  // namespace parascope
