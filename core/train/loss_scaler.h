// fp16 loss scaling with DeepSpeed's semantics (deepspeed/runtime/fp16/loss_scaler.py). The
// loss (through the backward loss weight) is multiplied by the scale so small gradients survive
// fp16; a step whose gradients overflow (inf or NaN anywhere, agreed by every data-parallel rank)
// is skipped. Dynamic scaling starts at 2^initial_scale_power; an overflow uses up one unit of
// hysteresis, and with none left halves the scale (not below min_loss_scale; an overflow at the
// minimum ends the run); loss_scale_window clean steps since the last overflow double it and
// restore the hysteresis (restored after every clean step with consecutive_hysteresis). A static
// loss_scale > 0 never changes.
#pragma once

#include "core/parallel/strategy.h"

namespace parascope {

class LossScaler {
 public:
  // enabled false: scale 1 and never an update (fp32 and bf16 training).
  LossScaler(const LossScaleSpec& spec, bool enabled);

  double scale() const { return scale_; }
  int hysteresis() const { return hysteresis_; }
  bool enabled() const { return enabled_; }
  // Whether the scale moves with overflows (fp16 without a static loss_scale): only such a
  // scaler's state is carried into a run, or a layout, whose scaler is dynamic too.
  bool dynamic() const { return enabled_ && spec_.staticScale <= 0; }
  // After each step, with whether its gradients overflowed. Throws std::runtime_error on an
  // overflow at min_loss_scale with no hysteresis left (DeepSpeed ends the run there too).
  void update(bool overflow);

  // For checkpoints and switches: the whole dynamic state, and putting it back.
  long iteration() const { return iteration_; }
  long lastOverflow() const { return lastOverflow_; }
  void restore(double scale, int hysteresis, long iteration, long lastOverflow) {
    scale_ = scale;
    hysteresis_ = hysteresis;
    iteration_ = iteration;
    lastOverflow_ = lastOverflow;
  }

 private:
  LossScaleSpec spec_;
  bool enabled_;
  double scale_ = 1.0;
  int hysteresis_ = 1;
  long iteration_ = 0, lastOverflow_ = -1;
};

}  // namespace parascope
