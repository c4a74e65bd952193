// AdamW over a model's parameters, with first and second moments held as optimizer state
// (MemoryCategory::OptimizerState) in f32.
#pragma once

#include <vector>

#include "core/kernels/adamw.h"
#include "core/model/model.h"

namespace parascope {

class AdamW {
 public:
  AdamW(Model& model, const kernels::AdamWHyper& hyper);

  // One update of every parameter with the given learning rate; gradients are read scaled by
  // gradScale (the clipping factor). Parameters without decay get weight decay 0.
  void step(double lr, double gradScale);
  int steps() const { return steps_; }

 private:
  Model& model_;
  kernels::AdamWHyper hyper_;
  std::vector<Tensor> m_, v_;
  int steps_ = 0;
};

// sqrt(sum of squares) over every parameter gradient.
double gradientNorm(const Model& model);

}  // namespace parascope
