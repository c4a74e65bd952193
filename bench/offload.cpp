// parascope-cli bench offload: ZeRO-Infinity's optimizer offload against the disk it swaps to.
// In one run: the disk's sequential direct-I/O bandwidth (the swap's own AioFile, block size and
// queue depth, writing, reading, then reading and writing back as many bytes as the swap holds),
// then a GPT of about 100M parameters under ZeRO-1 on one rank, its AdamW state in memory and
// then swapped to the same directory (`sub_group_size` 4M elements, 4 buffers). The offloaded
// update's time is set beside the I/O bound (the bytes it read and wrote over the disk's
// read-and-write-back bandwidth, less the first sub-groups the step read during its passes), and
// the optimizer state the rank holds in memory beside the state's size; each step as the planner
// predicts it (this machine's calibration, the disk measured here) beside the measured one. Then
// a whole rank under a memory budget (runBudget).
#include "bench/offload.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/plan.h"
#include "core/common/error.h"
#include "core/common/scratch_directory.h"
#include "core/config/config.h"
#include "core/offload/aio_file.h"
#include "core/offload/disk_probe.h"
#include "core/offload/optimizer_swap.h"
#include "core/plan/memory_estimate.h"
#include "core/plan/simulator.h"
#include "core/plan/strategy_plan.h"
#include "core/session/session.h"

namespace parascope::bench {

namespace {

// The block device under `dir` as the kernel names it (vda, nvme0n1), with its model where the
// driver gives one.
std::string diskOf(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return "unknown";
  const std::string sys =
      "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  std::string name =
      "device " + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  std::ifstream uevent(sys + "/uevent");
  for (std::string line; std::getline(uevent, line);)
    if (line.rfind("DEVNAME=", 0) == 0) name = line.substr(8);
  for (const char* model : {"/device/model", "/../device/model"}) {
    std::ifstream f(sys + model);
    std::string m;
    if (std::getline(f, m) && !m.empty()) {
      m.erase(m.find_last_not_of(' ') + 1);
      return name + " (" + m + ")";
    }
  }
  return name;
}

struct Run {
  double stepSeconds = 0, optimizerSeconds = 0;  // medians over the measured steps
  std::int64_t swapBytes = 0;                    // per measured step
  std::int64_t optimizerStateBytes = 0;          // the rank's peak in memory
  std::int64_t peakBytes = 0;  // the largest step's category peaks together: at least its peak
};

class Steps final : public SessionObserver {
 public:
  void onStep(const StepReport& r) override {
    std::lock_guard lock(mutex_);
    reports.push_back(r);
  }
  void onError(const ErrorReport& e) override {
    std::lock_guard lock(mutex_);
    error = e.reason;
  }
  std::vector<StepReport> reports;
  std::string error;

 private:
  std::mutex mutex_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Run train(const TrainConfig& config, int steps) {
  SessionOptions options;
  options.evaluate = false;
  Session session(config, options);
  Steps observer;
  session.addObserver(observer);
  session.run();
  if (!observer.error.empty()) throw std::runtime_error(observer.error);
  Run r;
  std::vector<double> step, optimizer;
  for (const StepReport& s : observer.reports) {
    r.optimizerStateBytes =
        std::max(r.optimizerStateBytes,
                 s.peakBytes[static_cast<std::size_t>(MemoryCategory::OptimizerState)]);
    std::int64_t peaks = 0;
    for (const std::int64_t p : s.peakBytes) peaks += p;
    r.peakBytes = std::max(r.peakBytes, peaks);
    if (s.step == 1) continue;  // the first step pays for first touches
    step.push_back(s.seconds);
    optimizer.push_back(s.optimizerSeconds);
    r.swapBytes = s.swapBytes;
  }
  if (static_cast<int>(step.size()) != steps) throw std::runtime_error("a step was not reported");
  r.stepSeconds = median(step);
  r.optimizerSeconds = median(optimizer);
  return r;
}

void printRow(bool json, const nlohmann::json& row, const std::string& text) {
  std::printf("%s\n", json ? row.dump().c_str() : text.c_str());
  std::fflush(stdout);
}

// Each step as the planner predicts it beside the measured one: this machine's calibrated
// description (docs/planner.md), with the disk measured here.
void printPredictions(
    bool json, const DiskBandwidth& d,
    std::initializer_list<std::tuple<const char*, const TrainConfig*, double>> runs) {
  SystemDescription system = thisMachine();
  system.disk = {d.readBytesPerSecond, d.writeBytesPerSecond, d.swapBytesPerSecond};
  for (const auto& [name, config, measured] : runs) {
    const StrategyPlan plan = planStrategy(*config);
    const double predicted = simulateStep(plan, CostModel(system, plan)).stepSeconds;
    char text[256];
    std::snprintf(text, sizeof text,
                  "%-16s step predicted %7.3f s, measured %7.3f s: predicted / measured %.2f", name,
                  predicted, measured, predicted / measured);
    printRow(json,
             {{"event", "prediction"},
              {"run", name},
              {"predicted_step_s", predicted},
              {"measured_step_s", measured},
              {"predicted_to_measured", predicted / measured}},
             text);
  }
}

// A whole rank under a memory budget a quarter of its f32 optimizer state or less: a GPT of 24
// layers of width 768 (170M parameters) under ZeRO-3 on one rank in bf16, its 12 bytes per
// parameter of AdamW state and its parameter shard swapped to the disk, full recompute and no
// prefetch, memory_limit_bytes set to the estimate of what that rank holds (the allocator refuses
// anything past it), beside the same run in memory without a budget and beside the I/O bound of
// everything it swaps per step.
void runBudget(const BenchOffloadOptions& o, nlohmann::json doc, const std::string& dir,
               const DiskBandwidth& d) {
  for (const std::string& a : std::vector<std::string>{
           "model.num_layers=24", "zero_optimization.stage=3", "bf16.enabled=true",
           "recompute_granularity=full", "zero_optimization.stage3_prefetch_bucket_size=0",
           "zero_optimization.sub_group_size=1000000"}) {
    applyOverride(doc, a);
  }
  for (const std::string& a : o.overrides) applyOverride(doc, a);
  const TrainConfig memory = parseTrainConfig(doc);
  for (const std::string& a :
       std::vector<std::string>{"zero_optimization.offload_optimizer.device=nvme",
                                "zero_optimization.offload_optimizer.nvme_path=" + dir,
                                "zero_optimization.offload_optimizer.buffer_count=2",
                                "zero_optimization.offload_param.device=nvme",
                                "zero_optimization.offload_param.nvme_path=" + dir,
                                "zero_optimization.offload_param.buffer_count=2"}) {
    applyOverride(doc, a);
  }
  for (const std::string& a : o.overrides) applyOverride(doc, a);
  TrainConfig budgeted = parseTrainConfig(doc);
  budgeted.memoryLimitBytes =
      static_cast<std::int64_t>(std::ceil(estimateMemory(budgeted, 0, 1).trackedBytes()));
  const auto budget = static_cast<double>(budgeted.memoryLimitBytes);

  const Run inMemory = train(memory, o.steps);
  const Run held = train(budgeted, o.steps);
  const auto state = static_cast<double>(inMemory.optimizerStateBytes);
  const double bound = static_cast<double>(held.swapBytes) / d.swapBytesPerSecond;
  char text[512];
  std::snprintf(text, sizeof text,
                "budget %s for a rank whose f32 optimizer state is %s (%.1f x the budget); peaks "
                "together %s; step %.3f s in memory without a budget, %.3f s under it (%.2f x); "
                "swap %s/step, its I/O bound %.3f s (the step at %.0f%% of the disk's bandwidth)",
                formatBytes(budget).c_str(), formatBytes(state).c_str(), state / budget,
                formatBytes(static_cast<double>(held.peakBytes)).c_str(), inMemory.stepSeconds,
                held.stepSeconds, held.stepSeconds / inMemory.stepSeconds,
                formatBytes(static_cast<double>(held.swapBytes)).c_str(), bound,
                100 * bound / held.stepSeconds);
  printRow(o.json,
           {{"event", "budget"},
            {"memory_limit_bytes", budgeted.memoryLimitBytes},
            {"optimizer_state_bytes", state},
            {"state_to_budget_ratio", state / budget},
            {"peak_bytes_upper_bound", held.peakBytes},
            {"step_in_memory_s", inMemory.stepSeconds},
            {"step_under_budget_s", held.stepSeconds},
            {"step_ratio", held.stepSeconds / inMemory.stepSeconds},
            {"swap_bytes_per_step", held.swapBytes},
            {"io_bound_s", bound},
            {"disk_bandwidth_fraction", bound / held.stepSeconds}},
           text);
  printPredictions(o.json, d,
                   {{"budget: in memory", &memory, inMemory.stepSeconds},
                    {"budget: swapped", &budgeted, held.stepSeconds}});
}

}  // namespace

void runBenchOffload(const BenchOffloadOptions& o) {
  // Made before any work, so a bad --dir is refused at once; removed with what is in it.
  const ScratchDirectory scratch(o.dir, "parascope-bench-offload", "bench offload --dir");
  nlohmann::json base = readJsonFile(o.config);
  // About 100M parameters (12 layers of width 768), one rank, ZeRO-1: its optimizer shard is
  // the whole model's state, 8 bytes per parameter. One 64-token sample per step keeps the
  // forward and backward short beside the update.
  for (const std::string& a : std::vector<std::string>{
           "model.num_layers=12", "model.hidden_size=768", "model.num_attention_heads=12",
           "model.context_length=64", "train_batch_size=1", "train_micro_batch_size_per_gpu=1",
           "eval_interval=0", "zero_optimization.stage=1",
           "zero_optimization.sub_group_size=4000000",
           "train_iters=" + std::to_string(o.steps + 1)}) {
    applyOverride(base, a);
  }
  base.erase("gradient_accumulation_steps");
  for (const std::string& a : o.overrides) applyOverride(base, a);
  const TrainConfig memory = parseTrainConfig(base);
  nlohmann::json swappedDoc = base;
  applyOverride(swappedDoc, "zero_optimization.offload_optimizer.device=nvme");
  applyOverride(swappedDoc, "zero_optimization.offload_optimizer.nvme_path=" + scratch.path());
  const TrainConfig swapped = parseTrainConfig(swappedDoc);
  const MemoryEstimate estimate = estimateMemory(swapped, 0, 1);

  const std::string disk = diskOf(scratch.path());
  const DiskBandwidth d =
      measureDiskBandwidth(scratch.path(), static_cast<std::int64_t>(estimate.swapBytes),
                           swapped.parallel.aio, "bench offload --dir");
  const AioSpec& aio = swapped.parallel.aio;
  char text[512];
  std::snprintf(text, sizeof text,
                "disk %s under %s: direct I/O, %s blocks, queue depth %d: write %.2f GB/s, read "
                "%.2f GB/s, read and write back %.2f GB/s",
                disk.c_str(), scratch.path().c_str(),
                formatBytes(static_cast<double>(aio.blockSize)).c_str(), aio.queueDepth,
                d.writeBytesPerSecond / 1e9, d.readBytesPerSecond / 1e9,
                d.swapBytesPerSecond / 1e9);
  printRow(o.json,
           {{"event", "disk"},
            {"device", disk},
            {"directory", scratch.path()},
            {"block_bytes", aio.blockSize},
            {"queue_depth", aio.queueDepth},
            {"write_gb_per_s", d.writeBytesPerSecond / 1e9},
            {"read_gb_per_s", d.readBytesPerSecond / 1e9},
            {"read_write_gb_per_s", d.swapBytesPerSecond / 1e9}},
           text);

  const Run inMemory = train(memory, o.steps);
  const Run offloaded = train(swapped, o.steps);
  for (const auto& [name, r] : {std::pair{"in memory", inMemory}, {"swapped to disk", offloaded}}) {
    std::snprintf(text, sizeof text,
                  "%-16s step %7.3f s  optimizer %7.3f s  swap %9s/step  optimizer state in "
                  "memory %s",
                  name, r.stepSeconds, r.optimizerSeconds,
                  formatBytes(static_cast<double>(r.swapBytes)).c_str(),
                  formatBytes(static_cast<double>(r.optimizerStateBytes)).c_str());
    printRow(o.json,
             {{"event", "run"},
              {"optimizer_state", name},
              {"step_s", r.stepSeconds},
              {"optimizer_s", r.optimizerSeconds},
              {"swap_bytes_per_step", r.swapBytes},
              {"optimizer_state_bytes_in_memory", r.optimizerStateBytes}},
             text);
  }
  // The update reads every sub-group once and writes it once, as the disk's third pass did,
  // less the first sub-groups, which the step read during its passes (OptimizerSwap::prefetch).
  const double prefetched = static_cast<double>(
      optimizerSwapLayout(planStrategy(swapped).ranks.front().layout.shardSize(), false,
                          swapped.parallel)
          .prefetchBytes());
  const double bound =
      (static_cast<double>(offloaded.swapBytes) - prefetched) / d.swapBytesPerSecond;
  const double stateBytes = static_cast<double>(inMemory.optimizerStateBytes);
  std::snprintf(
      text, sizeof text,
      "I/O bound of the swapped update %.3f s: it ran at %.0f%% of the disk's bandwidth; state "
      "%s = %.1f x what the rank holds of it in memory; step %.2f x the step in memory",
      bound, 100 * bound / offloaded.optimizerSeconds, formatBytes(stateBytes).c_str(),
      stateBytes / static_cast<double>(offloaded.optimizerStateBytes),
      offloaded.stepSeconds / inMemory.stepSeconds);
  printRow(
      o.json,
      {{"event", "summary"},
       {"io_bound_s", bound},
       {"disk_bandwidth_fraction", bound / offloaded.optimizerSeconds},
       {"optimizer_state_bytes", stateBytes},
       {"state_to_memory_ratio", stateBytes / static_cast<double>(offloaded.optimizerStateBytes)},
       {"step_ratio", offloaded.stepSeconds / inMemory.stepSeconds}},
      text);
  printPredictions(o.json, d,
                   {{"in memory", &memory, inMemory.stepSeconds},
                    {"swapped to disk", &swapped, offloaded.stepSeconds}});
  runBudget(o, base, scratch.path(), d);
}

}  // namespace parascope::bench
