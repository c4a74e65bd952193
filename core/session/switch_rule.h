// The rule of a live strategy switch, in one place for the session, the CLI's --switch and the
// workbench's Strategy panel: a switch changes only how the run is spread (parallel degrees,
// schedule, micro-batches, ZeRO, precision, buckets) and keeps the global batch, so the run goes
// on over the same samples. Unless the request sets a batch key itself, the accumulation is
// re-derived for the new data-parallel size, as DeepSpeed derives it from train_batch_size.
#pragma once

#include <nlohmann/json.hpp>

#include "core/config/config.h"

namespace parascope {

// The config a run now under `running` switches to when asked for `requested` (a whole config
// document). batchNamed: the request itself sets train_batch_size or gradient_accumulation_steps,
// which are then taken as given. worldSize as parseTrainConfig's. Throws UserError with the
// validator's or checkSwitchKeeps' words when the request cannot continue this run.
TrainConfig resolveSwitch(const TrainConfig& running, nlohmann::json requested, bool batchNamed,
                          int worldSize = 0);

// UserError naming what differs when `next` cannot continue a run now under
// `running`: what it trains on and how (model, data, optimizer, schedule, clipping, seed,
// steps), the global batch or the rank backend. The session adds its own checks (the MPI world,
// memory).
void checkSwitchKeeps(const TrainConfig& running, const TrainConfig& next);

}  // namespace parascope
