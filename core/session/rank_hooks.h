// Per-rank access to a session's trainers, for tests that compare layouts gradient by gradient
// (SessionOptions::rankHooks). Each runs on the rank's thread. All but `built` are collective:
// every rank calls them at the same point, so they may communicate over the trainer's mesh.
// Front ends never need this header, nor the engine it brings in.
#pragma once

#include <functional>

#include "core/train/trainer.h"

namespace parascope {

struct RankHooks {
  std::function<void(Trainer&)> built;     // each time a layout builds the rank's trainer
  Trainer::GradientObserver gradients;     // every step, once the gradients are reduced
  std::function<void(Trainer&)> stepped;   // every step, after its update
  std::function<void(Trainer&)> finished;  // after the rank's last step of the run
};

}  // namespace parascope
