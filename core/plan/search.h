// Choosing a strategy: every combination of the strategy keys a user left open (semi-auto: the
// ones given are kept), each checked by the config's own rules, dropped when its busiest rank
// does not fit the device's memory (memory_estimate.h) and ranked by the simulated step
// (simulator.h) on a described system. The ranking is exact: a candidate is simulated unless a
// lower bound on its step (its busiest rank's compute alone) already exceeds the slowest of the
// best kept, so the best `top` equal those of simulating every one.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/plan/memory_estimate.h"
#include "core/plan/system.h"

namespace parascope {

// A strategy's prediction on a system: what the planner ranks and reports. Per GPU means per
// rank (one rank per device); the busiest rank is the pipeline rank with the most compute.
struct PlanEstimate {
  TrainConfig config;
  double stepSeconds = 0;
  double tokensPerSecond = 0;
  double modelFlopsPerGpu = 0;     // per second: the model's FLOPs, recompute not counted
  double hardwareFlopsPerGpu = 0;  // per second: what the devices compute, recompute counted
  double mfu = 0;                  // model FLOPs over the devices' matmul peak
  double bubbleFraction = 0;       // mean over pipeline ranks of their idle fraction
  MemoryEstimate memory;           // the rank needing the most
  // The busiest rank's step split: its kernels, the collectives inside them (the tensor
  // group's, and what outlasts the attention core of the context group's key-value exchange),
  // its idle time in the pipeline span, and the rest (optimizer step, data-parallel
  // communication not hidden behind compute, the step's fixed overhead). They sum to the step.
  double kernelSeconds = 0;
  double layerCommSeconds = 0;
  double bubbleSeconds = 0;
  double otherSeconds = 0;
};

// `config` validated for `system`'s world (parseTrainConfig with the GPU count).
PlanEstimate estimatePlan(const TrainConfig& config, const SystemDescription& system);

// What layerCommSeconds is called: "tensor-parallel communication", or with context parallelism
// "tensor- and context-parallel communication".
std::string layerCommunicationName(const ParallelStrategy& strategy);

// What limits a plan, in one line: "compute: kernels 71% of the step; then bubble 12%, ...;
// memory 61.2 GiB of 80 GiB".
std::string planLimit(const PlanEstimate& plan, const SystemDescription& system);

// The strategy keys a search may choose, in the order it reports them.
const std::vector<std::string>& searchedKeys();

struct PlanSearchRequest {
  nlohmann::json document;      // the training config, key=value settings applied
  std::set<std::string> fixed;  // strategy keys given as key=value: kept as the document has them
  SystemDescription system;
  int gpus = 1;
  int top = 10;
  // Skip candidates whose bound shows them slower than the best kept; false simulates every one
  // that fits (the same ranking, to check the bound against).
  bool prune = true;
  // Each candidate as it is simulated, in no set order, one call at a time (from the search's
  // threads): what a view fills its table with while the search runs. Unset: nothing is called.
  std::function<void(const PlanEstimate&)> onSimulated;
  // Read between candidates: once true, the search stops and throws PlanSearchCancelled.
  const std::atomic<bool>* cancel = nullptr;
};

// What searchPlans throws when its request's `cancel` was set.
struct PlanSearchCancelled : std::runtime_error {
  PlanSearchCancelled() : std::runtime_error("plan: the search was cancelled") {}
};

struct PlanSearch {
  std::vector<PlanEstimate> best;  // fastest first, at most `top`
  std::int64_t globalBatch = 0;    // sequences per step, as every candidate keeps it
  std::int64_t candidates = 0;     // combinations of the searched keys' values
  std::int64_t invalid = 0;        // refused by the config's rules (degrees, schedules, ...)
  std::int64_t outOfMemory = 0;    // valid, but the busiest rank needs more than the device has
  std::int64_t simulated = 0;      // fit, and simulated
  std::int64_t bounded = 0;        // fit, and shown slower than the best kept without simulating
  double seconds = 0;              // the search's wall time
};

// UserError, before any work, for a GPU count out of 1..1048576, a fixed key that is not a
// strategy key, `top` out of 1..1000, a bad global batch or a model the config refuses; then for
// degrees that cannot divide the GPUs; after the search, when no strategy fits a device.
PlanSearch searchPlans(const PlanSearchRequest& request);
// Applies a "key=value" setting to the request's document (applyOverride); a strategy key so set
// is fixed for the search (semi-auto). UserError as applyOverride's.
void applyPlanSetting(PlanSearchRequest& request, const std::string& assignment);

// The checks searchPlans makes before any work, without the system (a front end makes them
// before calibrating this machine's).
void checkPlanRequest(const PlanSearchRequest& request);

// parallel.auto: whether `document` asks the planner for its strategy.
bool wantsAutoParallel(const nlohmann::json& document);

// parallel.auto's search: `document`'s strategies for its world (parallel.world_size, else
// `mpiWorld` under mpirun (> 0; world_size must then equal it), else `hardwareThreads`), keeping
// the strategy keys the document sets but for the micro-batch size and accumulation steps, which
// it chooses for the document's global batch. The system is the caller's to set. UserError
// naming the key for a world out of range.
PlanSearchRequest autoParallelRequest(const nlohmann::json& document, int mpiWorld,
                                      int hardwareThreads);
// The request's document with `best`'s strategy keys set: what the run reads.
nlohmann::json documentWithPlan(const PlanSearchRequest& request, const PlanEstimate& best);

// The strategy keys of a plan with their values, in searchedKeys' order (config key names).
nlohmann::ordered_json planStrategyKeys(const TrainConfig& config);

}  // namespace parascope
