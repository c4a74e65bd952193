// Calibration runs and the prediction benchmark. Both train real GPTs through the bench session
// runner; the benchmark measures each strategy untraced and predicts it with the simulator from
// the same config, so the two columns differ only by the model's error.
#include "bench/plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench/session.h"
#include "core/comm/launch.h"
#include "core/common/bounded_json.h"
#include "core/common/error.h"
#include "core/common/output_file.h"
#include "core/common/shipped_file.h"
#include "core/config/config_keys.h"
#include "core/kernels/sgemm_peak.h"
#include "core/offload/disk_probe.h"
#include "core/plan/memory_estimate.h"
#include "core/plan/simulator.h"
#include "core/tensor/allocator.h"
#include "profiler/io/chrome_import.h"
#include "profiler/tracer.h"

namespace parascope::bench {

namespace {

constexpr const char* kCacheFormat = "parascope-system";
// 2: the description measures the disk; a cache without one is calibrated again.
// 3: the machine is named by its sgemm library's kernels (sgemm_library.h), not OpenBLAS's alone.
constexpr int kCacheVersion = 3;

nlohmann::json baseConfig() {
  nlohmann::json doc = readJsonFile(shippedFile("resources/configs/default.json"));
  doc["train_iters"] = 1000;
  doc["eval_interval"] = 0;
  return doc;
}

TrainConfig configWith(const std::vector<std::string>& overrides) {
  nlohmann::json doc = baseConfig();
  for (const std::string& o : overrides) applyOverride(doc, o);
  return parseTrainConfig(doc);
}

// What calibration does not measure: this machine's cores and memory, and for links other
// processes or machines would use, figures typical of a node's shared memory and of 100 Gb/s
// Ethernet. A description file states them explicitly.
SystemDescription startingPoint() {
  SystemDescription s;
  s.name = "this machine";
  s.device.kind = "cpu";
  s.device.cores = std::max(1u, std::thread::hardware_concurrency());
  const double available = availableMemoryBytes();
  s.device.memoryBytes = available > 0 ? available : 1e9;
  s.devicesPerNode = static_cast<int>(s.device.cores);
  s.links[static_cast<std::size_t>(LinkClass::Node)] = {{5e-6, 5e9}, {5e-6, 5e9}};
  s.links[static_cast<std::size_t>(LinkClass::Network)] = {{20e-6, 10e9}, {20e-6, 10e9}};
  return s;
}

// The disk swap files go to unless a config names another: the temporary directory's, 256 MiB
// each way through the swap's own I/O. Undescribed (a swapping strategy is then refused, naming
// the block) where no file there takes direct I/O, as on a tmpfs.
DiskDescription measureThisDisk() {
  try {
    const DiskBandwidth b =
        measureDiskBandwidth(std::filesystem::temp_directory_path().string(),
                             std::int64_t{256} << 20, AioSpec{}, "the temporary directory");
    return {b.readBytesPerSecond, b.writeBytesPerSecond, b.swapBytesPerSecond};
  } catch (const UserError& e) {
    std::fprintf(stderr, "calibration: the disk is not described (%s)\n", e.what());
    return {};
  }
}

TracedRun tracedRun(const std::vector<std::string>& overrides) {
  const TrainConfig config = configWith(overrides);
  profiler::Tracer tracer;
  const BenchRun run = runBenchSession(config, 1, 2, 3, &tracer);
  TracedRun r;
  r.plan = planStrategy(config);
  r.events = tracer.collect().events;
  r.stepSeconds = run.medianSeconds;
  return r;
}

// Seconds of each collective at a few sizes over two in-process ranks.
std::vector<CollectiveTiming> timeCollectives() {
  std::vector<CollectiveTiming> timings;
  for (CommOp op : {CommOp::AllReduce, CommOp::AllGather, CommOp::ReduceScatter}) {
    for (std::size_t bytes = 1 << 12; bytes <= (std::size_t{1} << 24); bytes <<= 3) {
      const std::size_t count = bytes / 4;
      std::vector<double> seconds;
      runInProcess(2, [&](Communicator& comm) {
        std::vector<float> send(count, 1.0f), recv(count, 0.0f);
        for (int i = 0; i < 7; ++i) {
          int token = 0;  // both ranks start together
          comm.allReduce(&token, &token, 1, DType::I32, ReduceOp::Sum);
          const auto start = std::chrono::steady_clock::now();
          if (op == CommOp::AllReduce) {
            comm.allReduce(send.data(), recv.data(), count, DType::F32, ReduceOp::Sum);
          } else if (op == CommOp::AllGather) {
            comm.allGather(send.data(), recv.data(), count / 2, DType::F32);
          } else {
            comm.reduceScatter(send.data(), recv.data(), count / 2, DType::F32, ReduceOp::Sum);
          }
          const double s =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          if (comm.rank() == 0 && i > 0) seconds.push_back(s);
        }
      });
      // The fastest: other work on the machine only ever adds time.
      timings.push_back(
          {op, static_cast<double>(bytes), 2, *std::min_element(seconds.begin(), seconds.end())});
    }
  }
  return timings;
}

double relativeError(double predicted, double measured) {
  return measured > 0 ? (predicted - measured) / measured : 0;
}

// Spearman's rank correlation (average ranks for ties).
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<std::size_t> order(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](std::size_t x, std::size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (std::size_t i = 0; i < order.size();) {
      std::size_t j = i;
      while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
      for (std::size_t k = i; k <= j; ++k) r[order[k]] = (static_cast<double>(i + j) / 2) + 1;
      i = j + 1;
    }
    return r;
  };
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    ma += ra[i] / n;
    mb += rb[i] / n;
  }
  double cov = 0, va = 0, vb = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 0;
}

struct Strategy {
  std::string model;
  std::vector<std::string> modelKeys;  // the model's size
  std::vector<std::string> keys;       // the strategy's
  std::vector<std::string> all() const {
    std::vector<std::string> both = modelKeys;
    both.insert(both.end(), keys.begin(), keys.end());
    return both;
  }
};

// Data, tensor and pipeline degrees, every schedule, micro-batches, ZeRO 0-3, recompute and
// mixed precision, on 1 to 8 in-process ranks.
std::vector<std::vector<std::string>> strategyKeys() {
  return {
      {},
      {"data_parallel_size=2"},
      {"data_parallel_size=4"},
      {"data_parallel_size=2", "zero_optimization.stage=1"},
      {"data_parallel_size=2", "zero_optimization.stage=2"},
      {"data_parallel_size=2", "zero_optimization.stage=3"},
      {"data_parallel_size=4", "zero_optimization.stage=3"},
      {"tensor_model_parallel_size=2"},
      {"tensor_model_parallel_size=2", "sequence_parallel=true"},
      {"tensor_model_parallel_size=4"},
      {"bf16.enabled=true"},
      {"fp16.enabled=true", "data_parallel_size=2"},
      {"gradient_accumulation_steps=4", "recompute_granularity=full"},
      {"gradient_accumulation_steps=4", "recompute_granularity=selective"},
      {"pipeline_model_parallel_size=2", "gradient_accumulation_steps=4",
       "pipeline_schedule=gpipe"},
      {"pipeline_model_parallel_size=2", "gradient_accumulation_steps=4", "pipeline_schedule=1f1b"},
      {"pipeline_model_parallel_size=2", "gradient_accumulation_steps=8", "pipeline_schedule=1f1b"},
      {"pipeline_model_parallel_size=4", "gradient_accumulation_steps=8", "pipeline_schedule=1f1b"},
      {"pipeline_model_parallel_size=2", "gradient_accumulation_steps=4",
       "pipeline_schedule=interleaved", "virtual_pipeline_model_parallel_size=2"},
      {"pipeline_model_parallel_size=2", "gradient_accumulation_steps=4",
       "pipeline_schedule=zb-h1"},
      {"pipeline_model_parallel_size=2", "gradient_accumulation_steps=4", "data_parallel_size=2"},
      {"pipeline_model_parallel_size=2", "gradient_accumulation_steps=4",
       "tensor_model_parallel_size=2"},
      {"pipeline_model_parallel_size=2", "gradient_accumulation_steps=4", "data_parallel_size=2",
       "tensor_model_parallel_size=2"},
      {"data_parallel_size=2", "tensor_model_parallel_size=2", "zero_optimization.stage=2",
       "bf16.enabled=true"},
      {"data_parallel_size=8"},
  };
}

std::vector<Strategy> strategies(const std::string& which) {
  std::vector<Strategy> out;
  // GPT-mini (the default config) and a GPT about ten times its parameters (31.9M against 3.2M;
  // 8 layers, so that every pipeline layout of the list divides them), at a quarter of its
  // tokens per micro-batch so that a step stays within seconds.
  const std::vector<std::pair<std::string, std::vector<std::string>>> models = {
      {"mini", {}},
      {"large",
       {"model.hidden_size=576", "model.num_layers=8", "model.num_attention_heads=8",
        "train_micro_batch_size_per_gpu=2"}}};
  for (const auto& [name, base] : models) {
    if (which != "all" && which != name) continue;
    for (const std::vector<std::string>& keys : strategyKeys()) {
      out.push_back({name, base, keys});
    }
  }
  return out;
}

double modelState(const std::array<std::int64_t, kMemoryCategoryCount>& peak) {
  return static_cast<double>(peak[static_cast<std::size_t>(MemoryCategory::Parameter)] +
                             peak[static_cast<std::size_t>(MemoryCategory::Gradient)] +
                             peak[static_cast<std::size_t>(MemoryCategory::OptimizerState)]);
}

double estimated(const MemoryEstimate& e, const std::string& name) {
  for (const MemoryItem& item : e.items)
    if (item.name == name) return item.bytes;
  return 0;
}

// The simulator's own speed on a long program: 64 pipeline ranks, 512 micro-batches of 1F1B
// (the goal: 20 ms), planning apart.
void printSimulationSpeed(const SystemDescription& system, bool json) {
  const TrainConfig config =
      configWith({"model.num_layers=64", "pipeline_model_parallel_size=64",
                  "gradient_accumulation_steps=512", "train_micro_batch_size_per_gpu=1"});
  using Clock = std::chrono::steady_clock;
  const Clock::time_point planned = Clock::now();
  const StrategyPlan plan = planStrategy(config);
  const double planSeconds = std::chrono::duration<double>(Clock::now() - planned).count();
  const CostModel costs(system, plan);
  std::vector<double> runs;
  std::size_t instructions = 0;
  for (const RankPlan& r : plan.ranks) instructions += r.program.size();
  for (int i = 0; i < 5; ++i) {
    const Clock::time_point start = Clock::now();
    const Simulation sim = simulateStep(plan, costs);
    runs.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(runs.begin(), runs.end());
  const double seconds = runs[runs.size() / 2];
  if (json) {
    std::printf("%s\n", nlohmann::json{{"event", "simulation_speed"},
                                       {"pipeline_ranks", 64},
                                       {"micro_batches", 512},
                                       {"instructions", instructions},
                                       {"simulate_ms", 1e3 * seconds},
                                       {"plan_ms", 1e3 * planSeconds},
                                       {"goal_ms", 20}}
                            .dump()
                            .c_str());
  } else {
    std::printf(
        "simulating p=64, m=512 (1F1B, %zu instructions): %.1f ms (goal <= 20 ms; ratio "
        "%.2f), planning it %.1f ms\n",
        instructions, 1e3 * seconds, seconds / 0.020, 1e3 * planSeconds);
  }
}

}  // namespace

CalibrationFit calibrateThisMachine() {
  std::vector<TracedRun> runs;
  runs.push_back(tracedRun({}));
  runs.push_back(tracedRun({"model.hidden_size=128", "train_micro_batch_size_per_gpu=4"}));
  runs.push_back(tracedRun({"model.hidden_size=512", "model.num_layers=2",
                            "model.num_attention_heads=8", "train_micro_batch_size_per_gpu=2"}));
  // Two shapes per mixed precision: their casts scale with the weights, their products also
  // with the tokens.
  for (const char* precision : {"bf16.enabled=true", "fp16.enabled=true"}) {
    runs.push_back(tracedRun({precision}));
    runs.push_back(tracedRun({precision, "train_micro_batch_size_per_gpu=2"}));
  }
  runs.push_back(tracedRun({"pipeline_model_parallel_size=2", "gradient_accumulation_steps=4"}));
  // The first run's instructions on every core at once: how much compute the cores give together.
  runs.push_back(tracedRun(
      {"data_parallel_size=" + std::to_string(static_cast<int>(startingPoint().device.cores))}));
  CalibrationFit fit = calibrate(startingPoint(), runs, timeCollectives());
  fit.system.disk = measureThisDisk();
  return fit;
}

CalibrationFit calibrateFromTraces(const std::vector<std::string>& paths) {
  std::vector<TracedRun> runs;
  for (const std::string& path : paths) {
    profiler::TraceData trace = profiler::importChromeTrace(path);
    if (trace.runConfig.empty()) {
      throw UserError("plan calibrate: " + path +
                      " holds no run config; calibrate from traces that parascope-cli train "
                      "--trace or the workbench recorded");
    }
    const TrainConfig config =
        parseTrainConfig(parseBoundedJson(trace.runConfig, path, kConfigJsonLimits));
    if (trace.worldSize != config.parallel.worldSize()) {
      throw UserError("plan calibrate: " + path + " holds " + std::to_string(trace.worldSize) +
                      " ranks but its config " + std::to_string(config.parallel.worldSize()) +
                      ": a run switched live cannot be calibrated from");
    }
    TracedRun run;
    std::vector<double> steps;
    for (profiler::Event e : trace.events) {
      if (e.kind != profiler::EventKind::Span) continue;
      if (e.rank == 0 && e.category == profiler::Category::Step)
        steps.push_back(static_cast<double>(e.durationNs()) * 1e-9);
      if (e.category != profiler::Category::Instruction) continue;
      // The instruction spans outlive the trace's string pool: named by the ops' own strings.
      for (int op = 0; op < kOpCount; ++op) {
        if (std::string_view(e.name) != opName(static_cast<Op>(op))) continue;
        e.name = opName(static_cast<Op>(op));
        run.events.push_back(e);
        break;
      }
    }
    if (steps.empty()) throw UserError("plan calibrate: " + path + " holds no training step");
    std::sort(steps.begin(), steps.end());
    run.plan = planStrategy(config);
    run.stepSeconds = steps[steps.size() / 2];
    runs.push_back(std::move(run));
  }
  CalibrationFit fit = calibrate(startingPoint(), runs, timeCollectives());
  fit.system.disk = measureThisDisk();
  return fit;
}

std::string systemCachePath() {
  namespace fs = std::filesystem;
  const std::string sgemm = kernels::sgemmPeakCachePath();
  if (sgemm.empty()) return {};
  return (fs::path(sgemm).parent_path() / "system.json").string();
}

bool cacheSystem(const SystemDescription& system) {
  const std::string path = systemCachePath();
  if (path.empty()) return false;
  const kernels::SgemmPeakCache machine = kernels::SgemmPeakCache::thisMachine();
  const nlohmann::ordered_json j = {{"format", kCacheFormat},
                                    {"version", kCacheVersion},
                                    {"cpu", machine.cpu},
                                    {"sgemm_kernels", machine.kernels},
                                    {"system", systemToJson(system)}};
  const std::string text = j.dump(2) + "\n";
  try {
    std::error_code ignored;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
    OutputFile out(path, "system cache");
    out.write(text.data(), text.size());
    out.commit();
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

std::optional<SystemDescription> cachedMachine() {
  const std::string path = systemCachePath();
  if (path.empty()) return std::nullopt;
  const kernels::SgemmPeakCache machine = kernels::SgemmPeakCache::thisMachine();
  try {
    const nlohmann::json j = parseBoundedJson(
        readBoundedFile(path, kConfigJsonLimits.maxBytes, "system cache"), path, kConfigJsonLimits);
    if (j.value("format", "") == kCacheFormat && j.value("version", 0) == kCacheVersion &&
        j.value("cpu", "") == machine.cpu && j.value("sgemm_kernels", "") == machine.kernels)
      return parseSystem(j.at("system"), path);
  } catch (const std::exception&) {
    return std::nullopt;  // missing, unreadable or of an older schema: as if there were none
  }
  return std::nullopt;  // another machine's
}

SystemDescription thisMachine() {
  if (std::optional<SystemDescription> cached = cachedMachine()) return *cached;
  const std::string path = systemCachePath();
  std::fprintf(stderr,
               "plan: calibrating this machine's description (short runs, about a "
               "minute; cached for next time)\n");
  const auto start = std::chrono::steady_clock::now();
  const CalibrationFit fit = calibrateThisMachine();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const bool cached = cacheSystem(fit.system);
  std::fprintf(stderr, "plan: calibrated in %.0f s (compute fit error %.1f%%)%s%s\n", seconds,
               100 * fit.computeError, cached ? "; cached in " : "; not cached",
               cached ? path.c_str() : "");
  return fit.system;
}

void runBenchPlan(const BenchPlanOptions& o) {
  if (o.model != "mini" && o.model != "large" && o.model != "all")
    throw UserError("bench plan: --model must be mini, large or all, not '" + o.model + "'");
  if (o.steps < 1) throw UserError("bench plan: --steps must be at least 1");
  const SystemDescription system = o.system.empty() ? thisMachine() : readSystem(o.system);
  printSimulationSpeed(system, o.json);
  const std::vector<Strategy> list = strategies(o.model);
  std::vector<double> predictedTimes, measuredTimes;
  double errorSum = 0, worstActivation = 0;
  int exactState = 0;
  if (!o.json) {
    std::printf("%-5s %-70s %9s %9s %7s %13s %11s %8s\n", "model", "strategy", "measured",
                "predicted", "error", "idle m/p", "model state", "act err");
  }
  for (const Strategy& s : list) {
    const TrainConfig config = configWith(s.all());
    const BenchRun run = runBenchSession(config, 1, o.steps, 0, nullptr);
    const StrategyPlan plan = planStrategy(config);
    const CostModel costs(system, plan);
    const Simulation sim = simulateStep(plan, costs);
    const std::vector<MemoryEstimate> memory =
        estimateRankMemory(config, 0, config.parallel.worldSize());
    const double measured = run.medianSeconds, predicted = sim.stepSeconds;
    const double error = relativeError(predicted, measured);
    errorSum += std::abs(error);
    predictedTimes.push_back(predicted);
    measuredTimes.push_back(measured);
    // Per pipeline rank, its first world rank's figures (its data and tensor peers match).
    nlohmann::json ranks = nlohmann::json::array();
    double stateGap = 0, activationError = 0, idleGap = 0, worstIdleMeasured = 0,
           worstIdlePredicted = 0;
    for (std::size_t q = 0; q < plan.ranks.size(); ++q) {
      const RankFigures& f = run.ranks[q * static_cast<std::size_t>(plan.ranksPerPipelineRank())];
      const MemoryEstimate& e = memory[q];
      const double stateMeasured = modelState(f.peak);
      const double statePredicted =
          estimated(e, "parameters") + estimated(e, "gradients") + estimated(e, "optimizer state");
      const double actMeasured =
          static_cast<double>(f.peak[static_cast<std::size_t>(MemoryCategory::Activation)]);
      const double actPredicted = estimated(e, "activations");
      const double idleMeasured = f.busy + f.idle > 0 ? f.idle / (f.busy + f.idle) : 0;
      const double idlePredicted =
          config.pipeline.enabled ? sim.idleFraction(static_cast<int>(q)) : 0;
      stateGap = std::max(stateGap, std::abs(statePredicted - stateMeasured));
      activationError =
          std::max(activationError, std::abs(relativeError(actPredicted, actMeasured)));
      idleGap = std::max(idleGap, std::abs(idlePredicted - idleMeasured));
      worstIdleMeasured = std::max(worstIdleMeasured, idleMeasured);
      worstIdlePredicted = std::max(worstIdlePredicted, idlePredicted);
      ranks.push_back({{"pipeline_rank", q},
                       {"idle_measured", idleMeasured},
                       {"idle_predicted", idlePredicted},
                       {"model_state_measured_bytes", stateMeasured},
                       {"model_state_predicted_bytes", statePredicted},
                       {"activations_measured_bytes", actMeasured},
                       {"activations_predicted_bytes", actPredicted}});
    }
    exactState += stateGap == 0 ? 1 : 0;
    worstActivation = std::max(worstActivation, activationError);
    std::string keys;
    for (const std::string& k : s.keys) keys += (keys.empty() ? "" : " ") + k;
    if (keys.empty()) keys = "(one rank)";
    if (o.json) {
      std::printf("%s\n", nlohmann::json{{"event", "strategy"},
                                         {"model", s.model},
                                         {"overrides", s.all()},
                                         {"world_size", config.parallel.worldSize()},
                                         {"measured_step_s", measured},
                                         {"predicted_step_s", predicted},
                                         {"step_error", error},
                                         {"pipeline_ranks", ranks}}
                              .dump()
                              .c_str());
    } else {
      std::printf("%-5s %-70.70s %8.3fs %8.3fs %+6.1f%% %5.1f/%5.1f%% %11s %+7.1f%%\n",
                  s.model.c_str(), keys.c_str(), measured, predicted, 100 * error,
                  100 * worstIdleMeasured, 100 * worstIdlePredicted,
                  stateGap == 0 ? "exact" : formatBytes(stateGap).c_str(), 100 * activationError);
    }
    std::fflush(stdout);
  }
  const double mape = errorSum / static_cast<double>(list.size());
  const double rho = spearman(predictedTimes, measuredTimes);
  if (o.json) {
    std::printf("%s\n", nlohmann::json{{"event", "summary"},
                                       {"strategies", list.size()},
                                       {"step_mape", mape},
                                       {"spearman", rho},
                                       {"model_state_exact", exactState},
                                       {"activation_worst_error", worstActivation},
                                       {"system", system.name},
                                       {"cores", system.device.cores}}
                            .dump()
                            .c_str());
  } else {
    std::printf(
        "%zu strategies: step-time MAPE %.1f%% (goal <= 10%%), Spearman rank correlation %.3f "
        "(goal >= 0.9); model state exact on every pipeline rank for %d; activations within "
        "%.1f%% at worst (goal 5%%); system '%s', %.2f effective cores\n",
        list.size(), 100 * mape, rho, exactState, 100 * worstActivation, system.name.c_str(),
        system.device.cores);
  }
}

}  // namespace parascope::bench
