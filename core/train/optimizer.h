// AdamW over a model's parameters, with first and second moments held as optimizer state
// (MemoryCategory::OptimizerState) in f32. Under mixed precision it also holds each parameter's
// f32 master copy (12 bytes of state per parameter): updates read the bf16 / fp16 gradients,
// update the master and store it rounded into the 16-bit parameter.
#pragma once

#include <vector>

#include "core/kernels/adamw.h"
#include "core/model/model.h"

namespace parascope {

class AdamW {
 public:
  AdamW(Model& model, const kernels::AdamWHyper& hyper);

  // One update of every parameter with the given learning rate; gradients are read scaled by
  // gradScale (the clipping factor, divided by the loss scale). Parameters without decay get
  // weight decay 0.
  void step(double lr, double gradScale);
  int steps() const { return steps_; }

 private:
  Model& model_;
  kernels::AdamWHyper hyper_;
  std::vector<Tensor> m_, v_, master_;
  int steps_ = 0;
};

// sqrt(sum of squares) over every parameter's stored gradient; inf or NaN if one holds one.
double gradientNorm(const Model& model);

}  // namespace parascope
