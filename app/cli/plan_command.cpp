// parascope-cli simulate, plan, plan calibrate and bench plan: the simulator's front ends
// (core/plan). `simulate` reads a config and overrides as `train` does and predicts one step on
// a described system (this machine's by default, calibrated on first use); `plan` searches the
// strategies for a GPU count on one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "bench/plan.h"
#include "core/common/error.h"
#include "core/common/output_file.h"
#include "core/config/config.h"
#include "core/config/config_keys.h"
#include "core/plan/memory_estimate.h"
#include "core/plan/prediction_error.h"
#include "core/plan/search.h"
#include "core/plan/simulator.h"
#include "core/session/run_summary.h"
#include "profiler/io/chrome_export.h"
#include "profiler/io/chrome_import.h"
#include "profiler/trace_data.h"

namespace parascope::cli {

namespace {

constexpr const char* kThisMachine = "this-machine";

struct SimulateOptions {
  std::string config = "resources/configs/default.json";
  std::vector<std::string> overrides;
  std::string system;
  std::string trace;
  std::string compare;  // a measured trace of the same strategy
  int steps = 2;
  bool json = false;
};

// Predicted against measured per op and for the instructions the model misses most.
void printComparison(const PredictionError& e, bool json) {
  std::vector<const InstructionError*> worst;
  for (const InstructionError& i : e.instructions)
    if (i.measuredSpans > 0 && i.measuredSeconds > 0) worst.push_back(&i);
  std::sort(worst.begin(), worst.end(), [](const InstructionError* a, const InstructionError* b) {
    return std::abs(a->predictedSeconds - a->measuredSeconds) >
           std::abs(b->predictedSeconds - b->measuredSeconds);
  });
  worst.resize(std::min<std::size_t>(worst.size(), 10));
  if (json) {
    std::printf("%s\n", nlohmann::json{{"event", "comparison"},
                                       {"measured_step_s", e.measuredStepSeconds},
                                       {"predicted_step_s", e.predictedStepSeconds}}
                            .dump()
                            .c_str());
    for (const OpError& op : e.ops) {
      std::printf("%s\n", nlohmann::json{{"event", "op_error"},
                                         {"op", op.op},
                                         {"instructions", op.instructions},
                                         {"measured_s", op.measuredSeconds},
                                         {"predicted_s", op.predictedSeconds},
                                         {"error", op.error()}}
                              .dump()
                              .c_str());
    }
    for (const InstructionError* i : worst) {
      std::printf("%s\n", nlohmann::json{{"event", "instruction_error"},
                                         {"pipeline_rank", i->pipelineRank},
                                         {"index", i->index},
                                         {"instruction", i->instruction.toString()},
                                         {"measured_s", i->measuredSeconds},
                                         {"predicted_s", i->predictedSeconds},
                                         {"error", i->error()}}
                              .dump()
                              .c_str());
    }
    return;
  }
  std::printf("measured step %.3f s (median), predicted %.3f s (%+.1f%%)\n", e.measuredStepSeconds,
              e.predictedStepSeconds, 100 * e.stepError());
  std::printf("%-13s %6s %12s %12s %8s\n", "op", "count", "measured", "predicted", "error");
  for (const OpError& op : e.ops) {
    std::printf("%-13s %6d %10.2fms %10.2fms %+7.1f%%\n", op.op.c_str(), op.instructions,
                1e3 * op.measuredSeconds, 1e3 * op.predictedSeconds, 100 * op.error());
  }
  std::printf("largest differences:\n");
  for (const InstructionError* i : worst) {
    std::printf("  pipeline rank %d #%d %-24s measured %.2f ms, predicted %.2f ms (%+.1f%%)\n",
                i->pipelineRank, i->index, i->instruction.toString().c_str(),
                1e3 * i->measuredSeconds, 1e3 * i->predictedSeconds, 100 * i->error());
  }
}

void runSimulate(const SimulateOptions& o) {
  if (!o.trace.empty()) checkOutputPath(o.trace, "--trace", {{"--config", o.config}});
  nlohmann::json doc = readJsonFile(o.config);
  for (const std::string& a : o.overrides) applyOverride(doc, a);
  // This machine's description is a CPU's, and calibrating it is work: the config is read
  // first. A GPU system runs one process per device, so the world is what the degrees make of
  // it, not bounded by what threads in this process can run.
  const bool thisMachine = o.system.empty() || o.system == kThisMachine;
  std::optional<SystemDescription> named;
  if (!thisMachine) named = systemNamed(o.system);
  int world = 0;
  if (named && !named->device.sharesCores()) {
    long ranks = 1;
    for (const char* key : {"tensor_model_parallel_size", "context_parallel_size",
                            "pipeline_model_parallel_size", "data_parallel_size"}) {
      const nlohmann::json v = configValue(doc, key);
      if (v.is_number_integer() && v.get<long>() >= 1) ranks *= v.get<long>();
    }
    world = static_cast<int>(std::min<long>(ranks, 1 << 20));
  }
  const TrainConfig config = parseTrainConfig(doc, world);
  const SystemDescription system = named ? *named : systemNamed(o.system);
  const StrategyPlan plan = planStrategy(config);
  const CostModel costs(system, plan);
  const Simulation sim = simulateStep(plan, costs);
  const MemoryEstimate memory =
      estimateMemory(config, dataBytesInMemory(config.data), config.parallel.worldSize(),
                     activationElementBytes(system.device, config.parallel.compute));
  if (o.json) {
    nlohmann::json idle = nlohmann::json::array();
    for (std::size_t q = 0; q < sim.ranks.size(); ++q)
      idle.push_back(sim.idleFraction(static_cast<int>(q)));
    nlohmann::json bytes = nlohmann::json::object();
    for (const MemoryItem& item : memory.items) bytes[item.name] = item.bytes;
    std::printf("%s\n", nlohmann::json{{"event", "prediction"},
                                       {"system", system.name},
                                       {"world_size", config.parallel.worldSize()},
                                       {"step_s", sim.stepSeconds},
                                       {"pipeline_span_s", sim.pipelineSeconds},
                                       {"tokens_per_s", plan.targetsPerStep / sim.stepSeconds},
                                       {"idle_fraction_by_pipeline_rank", idle},
                                       {"memory_per_rank_bytes", bytes},
                                       {"host_memory_per_rank_bytes", memory.hostBytes}}
                            .dump()
                            .c_str());
  } else {
    std::printf("predicted on '%s': step %.3f s, %.0f tokens/s, %d ranks\n", system.name.c_str(),
                sim.stepSeconds, plan.targetsPerStep / sim.stepSeconds,
                config.parallel.worldSize());
    for (std::size_t q = 0; q < sim.ranks.size(); ++q) {
      std::printf("  pipeline rank %zu: busy %.3f s, idle %.1f%% of the %.3f s pipeline span\n", q,
                  sim.ranks[q].busy, 100 * sim.idleFraction(static_cast<int>(q)),
                  sim.pipelineSeconds);
    }
    std::printf("memory per rank:");
    for (const MemoryItem& item : memory.items)
      std::printf(" %s %s;", item.name.c_str(), formatBytes(item.bytes).c_str());
    std::printf("\n");
    if (memory.hostBytes > 0) {
      std::printf(
          "host memory per rank (offload_optimizer cpu): %s of optimizer state and its "
          "copies\n",
          formatBytes(memory.hostBytes).c_str());
    }
  }
  if (!o.compare.empty()) {
    const profiler::TraceData measured = profiler::importChromeTrace(o.compare);
    if (measured.worldSize != config.parallel.worldSize())
      throw UserError("simulate --compare: '" + o.compare + "' holds " +
                      std::to_string(measured.worldSize) + " ranks, the strategy " +
                      std::to_string(config.parallel.worldSize()) +
                      "; compare a trace of the same strategy");
    printComparison(comparePrediction(plan, sim, measured.events), o.json);
  }
  if (!o.trace.empty()) {
    profiler::TraceData trace;
    trace.worldSize = config.parallel.worldSize();
    trace.events = predictedEvents(plan, sim, o.steps);
    trace.adoptNames();
    exportChromeTrace(trace, o.trace);
    if (o.json) {
      std::printf("%s\n", nlohmann::json{{"event", "trace"}, {"path", o.trace}}.dump().c_str());
    } else {
      std::printf("predicted timeline (%d steps) written to %s\n", o.steps, o.trace.c_str());
    }
  }
}

struct PlanOptions {
  std::string config = "resources/configs/default.json";
  std::vector<std::string> overrides;
  std::string system;
  int gpus = 0;
  int top = 10;
  bool json = false;
};

// Memory categories under JSON names, with their total.
nlohmann::ordered_json memoryJson(const MemoryEstimate& m) {
  nlohmann::ordered_json j;
  double total = 0;
  for (const MemoryItem& item : m.items) {
    if (item.name == "data") continue;
    std::string key = item.name;
    std::replace(key.begin(), key.end(), ' ', '_');
    j[key] = item.bytes;
    total += item.bytes;
  }
  j["total"] = total;
  return j;
}

void runPlan(const PlanOptions& o) {
  if (o.gpus < 1) throw UserError("plan: --gpus is required: the GPUs to plan for, 1 or more");
  PlanSearchRequest request;
  request.document = readJsonFile(o.config);
  for (const std::string& a : o.overrides) applyPlanSetting(request, a);
  request.gpus = o.gpus;
  request.top = o.top;
  checkPlanRequest(request);  // before calibrating this machine
  request.system = systemNamed(o.system);
  const PlanSearch search = searchPlans(request);
  const SystemDescription& system = request.system;
  if (o.json) {
    for (std::size_t i = 0; i < search.best.size(); ++i) {
      const PlanEstimate& p = search.best[i];
      nlohmann::ordered_json j;
      j["event"] = "candidate";
      j["rank"] = i + 1;
      j["strategy"] = planStrategyKeys(p.config);
      j["step_time_s"] = p.stepSeconds;
      j["tokens_per_s"] = p.tokensPerSecond;
      j["model_tflops_per_gpu"] = p.modelFlopsPerGpu / 1e12;
      j["hardware_tflops_per_gpu"] = p.hardwareFlopsPerGpu / 1e12;
      j["mfu"] = p.mfu;
      j["bubble_fraction"] = p.bubbleFraction;
      j["memory_bytes_per_gpu"] = memoryJson(p.memory);
      j["limit"] = planLimit(p, system);
      std::printf("%s\n", j.dump().c_str());
    }
    std::printf("%s\n", nlohmann::ordered_json{{"event", "search"},
                                               {"system", system.name},
                                               {"gpus", o.gpus},
                                               {"global_batch", search.globalBatch},
                                               {"candidates", search.candidates},
                                               {"invalid", search.invalid},
                                               {"out_of_memory", search.outOfMemory},
                                               {"simulated", search.simulated},
                                               {"bounded", search.bounded},
                                               {"seconds", search.seconds}}
                            .dump()
                            .c_str());
    return;
  }
  std::printf(
      "%d GPUs of '%s', global batch %lld: %lld candidates, %lld refused by the config's rules, "
      "%lld out of memory, %lld simulated, %lld shown slower than the best without simulating "
      "(%.2f s)\n",
      o.gpus, system.name.c_str(), static_cast<long long>(search.globalBatch),
      static_cast<long long>(search.candidates), static_cast<long long>(search.invalid),
      static_cast<long long>(search.outOfMemory), static_cast<long long>(search.simulated),
      static_cast<long long>(search.bounded), search.seconds);
  if (search.best.empty()) {
    std::printf("no strategy fits in %s per GPU\n", formatBytes(system.device.memoryBytes).c_str());
    return;
  }
  std::printf("%3s %-66s %3s %9s %10s %7s %7s %5s %6s  %s\n", "#", "strategy", "mb", "step",
              "tokens/s", "model", "hw", "MFU", "bubble",
              "memory per GPU: parameters, gradients, optimizer, activations, comm, workspace = "
              "total");
  std::printf("%3s %-66s %3s %9s %10s %7s %7s\n", "", "", "", "", "", "TFLOP/s", "TFLOP/s");
  for (std::size_t i = 0; i < search.best.size(); ++i) {
    const PlanEstimate& p = search.best[i];
    std::string memory;
    for (const MemoryItem& item : p.memory.items)
      if (item.name != "data") memory += (memory.empty() ? "" : ", ") + formatBytes(item.bytes);
    std::printf("%3zu %-66s %3d %8.3fs %10.0f %7.1f %7.1f %4.1f%% %5.1f%%  %s = %s\n", i + 1,
                describeStrategy(p.config).c_str(), p.config.microBatch, p.stepSeconds,
                p.tokensPerSecond, p.modelFlopsPerGpu / 1e12, p.hardwareFlopsPerGpu / 1e12,
                100 * p.mfu, 100 * p.bubbleFraction, memory.c_str(),
                formatBytes(p.memory.perRankBytes()).c_str());
  }
  std::printf("best is limited by %s\n", planLimit(search.best.front(), system).c_str());
}

struct CalibrateOptions {
  std::vector<std::string> runs;  // traced runs; none: short runs of its own
  std::string out;
  bool json = false;
};

void runCalibrate(const CalibrateOptions& o) {
  std::vector<InputPath> inputs;
  for (const std::string& run : o.runs) inputs.push_back({"the traced run", run});
  if (!o.out.empty()) checkOutputPath(o.out, "--out", inputs);
  const CalibrationFit fit =
      o.runs.empty() ? bench::calibrateThisMachine() : bench::calibrateFromTraces(o.runs);
  const std::string text = systemToJson(fit.system).dump(2) + "\n";
  const std::string path = o.out.empty() ? bench::systemCachePath() : o.out;
  if (o.out.empty()) {
    // The cache is what `simulate` and `bench plan` read by default.
    if (!bench::cacheSystem(fit.system))
      throw UserError("plan calibrate: cannot write the cache '" + path +
                      "'; give --out FILE to keep the description");
  } else {
    OutputFile file(path, "--out");
    file.write(text.data(), text.size());
    file.commit();
  }
  if (o.json) {
    std::printf("%s\n", nlohmann::json{{"event", "calibration"},
                                       {"path", path},
                                       {"compute_samples", fit.computeSamples},
                                       {"compute_mean_error", fit.computeError},
                                       {"collective_samples", fit.collectiveSamples},
                                       {"collective_mean_error", fit.collectiveError},
                                       {"system", systemToJson(fit.system)}}
                            .dump()
                            .c_str());
  } else {
    std::printf("%s", text.c_str());
    std::printf(
        "fitted from %d compute instructions (mean error %.1f%%) and %d collective "
        "timings (mean error %.1f%%); written to %s\n",
        fit.computeSamples, 100 * fit.computeError, fit.collectiveSamples,
        100 * fit.collectiveError, path.c_str());
  }
}

}  // namespace

SystemDescription systemNamed(const std::string& name) {
  if (name.empty() || name == kThisMachine) return bench::thisMachine();
  const auto& presets = systemPresets();
  std::error_code ec;
  if (std::find(presets.begin(), presets.end(), name) == presets.end() &&
      !std::filesystem::is_regular_file(name, ec)) {
    std::string list;
    for (const std::string& p : presets) list += p + ", ";
    throw UserError("--system '" + name + "' is neither a preset nor a description file; valid: " +
                    list + kThisMachine + ", or a JSON file in the schema of docs/planner.md");
  }
  return readSystemNamed(name);
}

void registerPlanCommands(CLI::App& app, CLI::App& bench) {
  auto simulate = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Predict a strategy's step time, idle time, memory and timeline without running it");
  cmd->add_option("--config", simulate->config, "Training config (JSON)");
  cmd->add_option("overrides", simulate->overrides, "Config overrides as key.path=value");
  cmd->add_option("--system", simulate->system,
                  "Hardware description (JSON; default: this machine's, calibrated once)");
  cmd->add_option("--trace", simulate->trace, "Write the predicted timeline (Chrome trace JSON)");
  cmd->add_option("--compare", simulate->compare,
                  "A traced run of the same strategy (train --trace): predicted vs measured per "
                  "op and instruction")
      ->check(CLI::ExistingFile);
  cmd->add_option("--steps", simulate->steps, "Steps in the predicted timeline")
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--json", simulate->json, "One JSON object per line");
  cmd->callback([simulate] { runSimulate(*simulate); });

  auto planOptions = std::make_shared<PlanOptions>();
  CLI::App* plan = app.add_subcommand(
      "plan",
      "Search the strategies for a GPU count: every strategy key not given as key=value, ranked "
      "by predicted step time");
  plan->require_subcommand(0, 1);
  plan->add_option("--config", planOptions->config,
                   "Training config (JSON): the model, the "
                   "global batch and the precision");
  plan->add_option("overrides", planOptions->overrides,
                   "Config settings as key.path=value; a strategy key given here is kept");
  plan->add_option("--system", planOptions->system,
                   "a100-80gb, h100-80gb, this-machine (calibrated once) or a description file");
  plan->add_option("--gpus", planOptions->gpus, "GPUs (ranks) to plan for");
  plan->add_option("--top", planOptions->top, "Candidates to list")->check(CLI::Range(1, 1000));
  plan->add_flag("--json", planOptions->json, "One JSON object per candidate, best first");
  plan->callback([plan, planOptions] {
    if (plan->get_subcommands().empty()) runPlan(*planOptions);
  });
  auto calibrate = std::make_shared<CalibrateOptions>();
  CLI::App* cal = plan->add_subcommand(
      "calibrate", "Measure this machine by short traced runs and fit its hardware description");
  cal->add_option("runs", calibrate->runs,
                  "Traced runs to fit from (train --trace files; default: short runs of its own)")
      ->check(CLI::ExistingFile);
  cal->add_option("--out", calibrate->out,
                  "Write the description here (default: the cache simulate reads)");
  cal->add_flag("--json", calibrate->json, "One JSON object per line");
  cal->callback([calibrate] { runCalibrate(*calibrate); });

  auto bp = std::make_shared<bench::BenchPlanOptions>();
  CLI::App* b = bench.add_subcommand(
      "plan",
      "Predicted vs measured step time, idle and model-state memory: 25 strategies of each GPT");
  b->add_option("--model", bp->model, "mini, large or all");
  b->add_option("--steps", bp->steps, "Measured steps per strategy")->check(CLI::Range(1, 1000));
  b->add_option("--system", bp->system, "Hardware description (default: this machine's)");
  b->add_flag("--json", bp->json, "One JSON object per line");
  b->callback([bp] { bench::runBenchPlan(*bp); });
}

}  // namespace parascope::cli
