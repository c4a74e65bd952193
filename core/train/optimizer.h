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
  void setSteps(int steps) { steps_ = steps; }  // a restored run's updates so far (bias correction)
  // Parameter i's state (Model::parameters() order), for resharding and checkpoints: the moments,
  // and under mixed precision the f32 master (undefined in full precision, where the parameter's
  // value is its own master).
  const Tensor& expAvg(std::size_t i) const { return m_[i]; }
  const Tensor& expAvgSq(std::size_t i) const { return v_[i]; }
  Tensor master(std::size_t i) const { return master_.empty() ? Tensor() : master_[i]; }

 private:
  Model& model_;
  kernels::AdamWHyper hyper_;
  std::vector<Tensor> m_, v_, master_;
  int steps_ = 0;
};

}  // namespace parascope
