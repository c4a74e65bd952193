// The switch rule: derive the accumulation, then check what must stay.
#include "core/session/switch_rule.h"

#include <string>

#include "core/common/error.h"

namespace parascope {

TrainConfig resolveSwitch(const TrainConfig& running, nlohmann::json requested, bool batchNamed,
                          int worldSize) {
  if (!batchNamed) {
    requested["train_batch_size"] = running.globalBatch;
    requested.erase("gradient_accumulation_steps");
  }
  TrainConfig next = parseTrainConfig(requested, worldSize);
  checkSwitchKeeps(running, next);
  return next;
}

void checkSwitchKeeps(const TrainConfig& running, const TrainConfig& next) {
  const char* kept[] = {"model", "data",        "optimizer",    "scheduler", "gradient_clipping",
                        "seed",  "train_iters", "save_weights", "device"};
  for (const char* key : kept) {
    const nlohmann::json a = running.document.value(key, nlohmann::json());
    const nlohmann::json b = next.document.value(key, nlohmann::json());
    if (a != b) {
      throw UserError(std::string(key) +
                      " differs from the running session's; a switch changes only how the run "
                      "is spread (parallel degrees, schedule, micro-batches, ZeRO, precision, "
                      "buckets)");
    }
  }
  if (next.globalBatch != running.globalBatch) {
    throw UserError("the global batch would change from " + std::to_string(running.globalBatch) +
                    " to " + std::to_string(next.globalBatch) +
                    " (micro-batch x accumulation x data-parallel size); keep it so the run "
                    "continues on the same samples");
  }
  if (next.parallel.backend != running.parallel.backend) {
    throw UserError("rank_backend cannot change in a running session");
  }
}

}  // namespace parascope
