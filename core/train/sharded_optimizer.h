// ZeRO stage 1: AdamW whose moments exist only for this rank's 1/N shard of the flat parameter
// buffer (flat_layout.h). Each rank updates its shard from the fully reduced gradients, then an
// in-place all-gather gives every rank the whole updated model. Optimizer state per rank:
// 8 bytes x (padded parameters / N), against 8 per parameter unsharded.
#pragma once

#include "core/comm/communicator.h"
#include "core/kernels/adamw.h"
#include "core/train/flat_layout.h"

namespace parascope {

class ShardedAdamW {
 public:
  ShardedAdamW(Model& model, Tensor flatValues, const FlatLayout& layout, Communicator& comm,
               const kernels::AdamWHyper& hyper);

  void step(double lr, double gradScale);
  int steps() const { return steps_; }

 private:
  Model& model_;
  Tensor flat_;
  FlatLayout layout_;
  Communicator& comm_;
  kernels::AdamWHyper hyper_;
  Tensor m_, v_;  // shard-sized
  int steps_ = 0;
};

}  // namespace parascope
