// parascope-cli train: a front over a Session (core/session/session.h) built from a JSON config
// plus key=value overrides. Printing is an observer: a progress bar on a terminal, plain lines
// otherwise, JSON lines with --json. data_parallel_size=N runs N in-process ranks; under
// `mpirun -np N ... --backend mpi` each process is a rank, and rank 0 prints.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "core/comm/mpi/mpi_backend.h"
#include "core/common/error.h"
#include "core/common/output_file.h"
#include "core/common/stop_signal.h"
#include "core/config/config_agreement.h"
#include "core/config/config_keys.h"
#include "core/config/ps_config.h"
#include "core/plan/memory_estimate.h"
#include "core/plan/search.h"
#include "core/session/run_metrics.h"
#include "core/session/run_summary.h"
#include "core/session/session.h"
#include "core/session/switch_plan.h"
#include "core/state/checkpoint.h"
#include "profiler/io/chrome_export.h"
#include "profiler/run_trace.h"

namespace parascope::cli {

namespace {

struct TrainOptions {
  std::string config = "resources/configs/default.json";
  std::vector<std::string> overrides;
  std::string backend;  // empty: the config's "backend" key
  std::string system;   // parallel.auto's hardware description; empty: this machine's
  bool json = false;
  std::string trace;                  // Chrome trace file; empty: no tracing
  std::vector<std::string> switches;  // STEP:key=value[,key=value...]
  std::string save, load, resume;     // checkpoint directories
  int saveInterval = 0;
  int keep = 0;
};

// What a run reads that its trace must not replace.
std::vector<InputPath> traceInputs(const TrainOptions& o) {
  return {{"--config", o.config}, {"--load", o.load}, {"--resume", o.resume}};
}

const char* precisionName(DType t) {
  return t == DType::F16 ? "fp16" : t == DType::BF16 ? "bf16" : "fp32";
}

class Printer final : public SessionObserver {
 public:
  Printer(const TrainConfig& c, bool json, bool tracing)
      // Under mpirun a rank's stdout may be a terminal (Open MPI's pty) even when mpirun's own
      // output is redirected: plain lines there, never the bar's escape codes.
      : c_(c),
        json_(json),
        tty_(!json && isatty(STDOUT_FILENO) && !launchedByMpirun()),
        tracing_(tracing) {}

  void onStart(const StartReport& s) override;
  void onFinished(const FinishedReport& f) override;
  void onSwitch(const SwitchReport& r) override;
  void onCheckpoint(const CheckpointReport& r) override;

  void onStep(const StepReport& r) override {
    const double rate = static_cast<double>(r.tokens) / r.seconds;
    // On a GPU, MFU against the peak measured before the run (StartReport::devicePeakFlops).
    const double mfu = devicePeakFlops_ > 0
                           ? modelFlopsUtilization(rate, flopsPerToken_, devicePeakFlops_, 1)
                           : 0.0;
    if (json_) {
      nlohmann::json line{{"event", "step"},
                          {"step", r.step},
                          {"total_steps", r.totalSteps},
                          {"loss_nats", r.loss},
                          {"lr", r.lr},
                          {"grad_norm", r.gradNorm},
                          {"step_time_s", r.seconds},
                          {"optimizer_time_s", r.optimizerSeconds},
                          {"swap_bytes", r.swapBytes},
                          {"targets_per_s", rate},
                          {"loss_scale", r.lossScale},
                          {"skipped", r.skipped}};
      if (devicePeakFlops_ > 0) line["mfu"] = mfu;
      std::printf("%s\n", line.dump().c_str());
      std::fflush(stdout);
      return;
    }
    smoothedRate_ = smoothedRate_ == 0 ? rate : 0.9 * smoothedRate_ + 0.1 * rate;
    if (tty_ && r.skipped) {  // above the bar, so that it stays visible
      std::printf("\r\033[Kstep %5d/%d  skipped: gradient overflow at loss scale %.0f\n", r.step,
                  r.totalSteps, r.lossScale);
    }
    if (tty_) {
      const int width = 30;
      const int done = width * r.step / r.totalSteps;
      std::printf("\r[%s%s] %d/%d loss %.4f lr %.2e %s %.0f\033[K",
                  std::string(static_cast<std::size_t>(done), '#').c_str(),
                  std::string(static_cast<std::size_t>(width - done), '.').c_str(), r.step,
                  r.totalSteps, r.loss, r.lr, unit().c_str(), smoothedRate_);
      std::fflush(stdout);
    } else if (r.skipped || r.step % c_.logInterval == 0 || r.step == 1 || r.step == r.totalSteps) {
      char norm[32] = "overflow";  // inf or NaN
      if (std::isfinite(r.gradNorm)) std::snprintf(norm, sizeof norm, "%.3f", r.gradNorm);
      char mfuText[32] = "";
      if (devicePeakFlops_ > 0) std::snprintf(mfuText, sizeof mfuText, "  MFU %.1f%%", 100 * mfu);
      std::printf("step %5d/%d  loss %.4f  lr %.2e  grad-norm %s  %s %.0f%s%s\n", r.step,
                  r.totalSteps, r.loss, r.lr, norm, unit().c_str(), smoothedRate_, mfuText,
                  lossScaleText(r).c_str());
      std::fflush(stdout);
    }
  }

  void onEval(const EvalReport& r) override {
    const bool classify = c_.model.kind->classifies();
    if (json_) {
      nlohmann::json j{{"event", "eval"},
                       {"step", r.step},
                       {"val_loss_nats", r.loss},
                       {"val_targets", r.targets}};
      if (classify) j["val_accuracy"] = r.accuracy;
      std::printf("%s\n", j.dump().c_str());
    } else {
      if (tty_) std::printf("\r\033[K");
      std::printf("eval  step %5d  validation loss %.4f %s", r.step, r.loss,
                  classify ? "nats" : "nats/byte");
      if (classify) std::printf("  accuracy %.2f%%", 100.0 * r.accuracy);
      std::printf("\n");
    }
    std::fflush(stdout);
  }

 private:
  // fp16 only: the loss scale, and why a step was skipped.
  std::string lossScaleText(const StepReport& r) const {
    if (c_.parallel.compute != DType::F16) return "";
    char buf[96];
    std::snprintf(buf, sizeof buf, "  loss-scale %.0f%s", r.lossScale,
                  r.skipped ? "  skipped (gradient overflow)" : "");
    return buf;
  }
  std::string unit() const { return std::string(c_.model.kind->target()) + "/s"; }
  TrainConfig c_;  // the layout running now
  double devicePeakFlops_ = 0;
  double flopsPerToken_ = 0;
  bool json_;
  bool tty_;
  bool tracing_;
  double smoothedRate_ = 0;
};

void Printer::onStart(const StartReport& s) {
  const TrainConfig& config = s.config;
  const ParallelStrategy& p = config.parallel;
  devicePeakFlops_ = s.devicePeakFlops;
  flopsPerToken_ = s.flopsPerToken;
  if (json_) {
    // The strategy under its config keys (config_keys.h), defaults and derivations filled in.
    nlohmann::json line = {{"event", "start"},
                           {"model", s.model},
                           {"parameters", s.parameters},
                           {"data", s.data},
                           {"train_batch_size", config.globalBatch},
                           {"precision", precisionName(p.compute)},
                           {"backend", rankBackendName(p.backend)},
                           {"train_iters", config.trainIters}};
    for (const auto& [key, value] : strategySettings(config)) line[key] = value;
    if (!s.deviceName.empty()) {
      line["device_name"] = s.deviceName;
      line["gemm_peak_precision"] = precisionName(p.compute);
      line["gemm_peak_tflops"] = s.devicePeakFlops / 1e12;
    }
    std::printf("%s\n", line.dump().c_str());
  } else {
    std::printf(
        "model: %s\ndata:  %s\nbatch: %d = %d micro x %d accumulation x %d data-parallel, %d "
        "steps\n",
        s.model.c_str(), s.data.c_str(), config.globalBatch, config.microBatch,
        config.gradientAccumulation, p.data, config.trainIters);
    if (!s.deviceName.empty()) {
      std::printf("device: %s, %s GEMM peak %.1f TFLOP/s (cuBLAS; MFU's denominator)\n",
                  s.deviceName.c_str(), precisionName(p.compute), s.devicePeakFlops / 1e12);
    }
    if (p.worldSize() > 1) {
      std::printf(
          "ranks: %d = %d tensor-parallel%s x %d data-parallel x %d pipeline (%s), ZeRO stage %d\n",
          p.worldSize(), p.tensor, p.sequenceParallel ? " (sequence-parallel)" : "", p.data,
          p.pipeline, std::string(rankBackendName(p.backend)).c_str(), p.zeroStage);
    }
    if (config.pipeline.enabled) {
      std::printf(
          "pipeline: schedule %s, %d chunk(s) per rank, %d micro-batches per step, "
          "recompute %s\n",
          config.pipeline.schedule.c_str(), config.pipeline.chunks, config.gradientAccumulation,
          std::string(recomputeName(config.pipeline.recompute)).c_str());
    }
    if (p.compute != DType::F32) {
      std::printf("precision: %s parameters, activations and gradients, fp32 master weights%s\n",
                  precisionName(p.compute), p.compute == DType::F16 ? ", loss scaling" : "");
    }
  }
  std::fflush(stdout);
}

void Printer::onSwitch(const SwitchReport& r) {
  c_ = r.to;
  if (json_) {
    std::printf("%s\n", nlohmann::json{{"event", "switch"},
                                       {"step", r.step},
                                       {"before", r.before},
                                       {"after", r.after},
                                       {"world_before", r.worldBefore},
                                       {"world_after", r.worldAfter},
                                       {"switch_ms", r.milliseconds},
                                       {"bytes_moved", r.bytesMoved}}
                            .dump()
                            .c_str());
  } else {
    if (tty_) std::printf("\r\033[K");
    std::printf("switch at step %d: %s -> %s (%d -> %d ranks), %.1f ms, %s moved\n", r.step,
                r.before.c_str(), r.after.c_str(), r.worldBefore, r.worldAfter, r.milliseconds,
                formatBytes(static_cast<double>(r.bytesMoved)).c_str());
  }
  std::fflush(stdout);
}

void Printer::onCheckpoint(const CheckpointReport& r) {
  if (json_) {
    std::printf("%s\n", nlohmann::json{{"event", "checkpoint"},
                                       {"action", r.loaded ? "load" : "save"},
                                       {"step", r.step},
                                       {"path", r.path},
                                       {"bytes", r.bytes},
                                       {"checkpoint_ms", r.milliseconds}}
                            .dump()
                            .c_str());
  } else {
    if (tty_) std::printf("\r\033[K");
    std::printf("checkpoint %s %s at step %d (%s, %.1f ms)\n",
                r.loaded ? "loaded from" : "saved to", r.path.c_str(), r.step,
                formatBytes(static_cast<double>(r.bytes)).c_str(), r.milliseconds);
  }
  std::fflush(stdout);
}

void Printer::onFinished(const FinishedReport& f) {
  if (f.failed) return;  // the error is printed by main() as one line
  if (!f.weightsPath.empty() && !json_) std::printf("weights saved to %s\n", f.weightsPath.c_str());
  if (tracing_) {
    if (json_) {
      std::printf("%s\n", nlohmann::json{{"event", "trace"}, {"path", f.tracePath}}.dump().c_str());
    } else {
      std::printf(
          "trace written to %s%s\n", f.tracePath.c_str(),
          c_.parallel.backend == RankBackend::Mpi ? " (and one file for each other rank)" : "");
    }
  }
  std::fflush(stdout);
}

// parallel.auto's choice and why: what limits it, and how much slower the runner-up is.
void printChoice(const PlanSearch& search, const PlanSearchRequest& request, bool json) {
  const SystemDescription& system = request.system;
  const PlanEstimate& best = search.best.front();
  const PlanEstimate* next = search.best.size() > 1 ? &search.best[1] : nullptr;
  if (json) {
    nlohmann::ordered_json j;
    j["event"] = "auto_parallel";
    j["world_size"] = request.gpus;
    j["system"] = system.name;
    j["strategy"] = planStrategyKeys(best.config);
    j["predicted_step_s"] = best.stepSeconds;
    j["limit"] = planLimit(best, system);
    j["candidates"] = search.candidates;
    j["seconds"] = search.seconds;
    if (next != nullptr) {
      j["runner_up"] = planStrategyKeys(next->config);
      j["runner_up_step_s"] = next->stepSeconds;
    }
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  auto words = [](const TrainConfig& c) {
    return describeStrategy(c) + ", micro-batch " + std::to_string(c.microBatch);
  };
  std::printf(
      "parallel.auto: %s for %d ranks on '%s', predicted %.3f s a step (best of %lld "
      "candidates, %.2f s)\n",
      words(best.config).c_str(), request.gpus, system.name.c_str(), best.stepSeconds,
      static_cast<long long>(search.candidates), search.seconds);
  std::printf("  limited by %s\n", planLimit(best, system).c_str());
  if (next != nullptr)
    std::printf("  the runner-up, %s, is predicted %.1f%% slower\n", words(next->config).c_str(),
                100 * (next->stepSeconds / best.stepSeconds - 1));
}

void runTrain(const TrainOptions& o) {
  nlohmann::json doc = readJsonFile(o.config);
  for (const auto& a : o.overrides) applyOverride(doc, a);
  if (!o.backend.empty()) doc["backend"] = o.backend;
  const bool mpi = doc.value("backend", std::string("threads")) == "mpi";
  SessionOptions options;
  if (mpi) {
    if (!launchedByMpirun()) {
      throw UserError("--backend mpi: start the ranks with mpirun -np N parascope-cli train ...");
    }
    options.world = mpiWorld();
  } else if (launchedByMpirun()) {
    throw UserError(
        "started by mpirun with the threads backend; pass --backend mpi (or set "
        "\"backend\": \"mpi\") so that the processes train together");
  }
  if (isPsConfig(doc)) {
    for (const auto& [flag, given] :
         {std::pair{"--switch", !o.switches.empty()}, std::pair{"--system", !o.system.empty()}}) {
      if (given) {
        throw UserError(std::string(flag) +
                        ": not for a parameter-server run; it takes --config, overrides, "
                        "--backend, --json, --trace, --save, --save-interval, --load, --resume "
                        "and --keep");
      }
    }
    if (!o.load.empty() && !o.resume.empty()) {
      throw UserError("--load and --resume: give one (--resume DIR also keeps saving into DIR)");
    }
    if ((o.keep > 0) && o.save.empty() && o.resume.empty()) {
      throw UserError("--keep needs --save DIR (or --resume DIR)");
    }
    if (!o.trace.empty()) {
      checkOutputPath(mpi ? profiler::perRankPath(o.trace, options.world->rank()) : o.trace,
                      "--trace", traceInputs(o));
    }
    if (mpi) {
      // Servers and workers waiting on rounds another rank never runs would wait for ever.
      SettingList settings = canonicalSettings(doc);
      for (const auto& [name, value] :
           {std::pair{"--trace", o.trace}, std::pair{"--load", o.load},
            std::pair{"--resume", o.resume}, std::pair{"--save", o.save}}) {
        settings.emplace_back(name, nlohmann::json(value).dump());
      }
      settings.emplace_back("--keep", std::to_string(o.keep));
      settings.emplace_back("--save-interval", std::to_string(o.saveInterval));
      agreeOnSettings(*options.world, settings);
    }
    PsCheckpoints checkpoints{o.resume.empty() ? o.load : o.resume,
                              o.save.empty() ? o.resume : o.save, o.keep, o.saveInterval};
    runPsTrain(doc, o.json, o.trace, checkpoints, mpi ? &*options.world : nullptr);
    return;
  }
  // parallel.auto: the planner's choice replaces the document's strategy before anything reads
  // it (under MPI every rank chooses alike; agreeing on the settings below checks it).
  std::optional<PlanSearch> chosen;
  std::optional<PlanSearchRequest> request;
  if (wantsAutoParallel(doc)) {
    request = autoParallelRequest(doc, mpi ? options.world->size() : 0,
                                  static_cast<int>(std::thread::hardware_concurrency()));
    checkPlanRequest(*request);  // before calibrating this machine
    request->system = systemNamed(o.system);
    chosen = searchPlans(*request);
    doc = documentWithPlan(*request, chosen->best.front());
  }
  if (mpi) {
    // This rank's own output first, then, before any collective that depends on them, every
    // rank's settings and outputs must agree (a rank that fails here tells its peers).
    if (!o.trace.empty()) {
      checkOutputPath(profiler::perRankPath(o.trace, options.world->rank()), "--trace",
                      traceInputs(o));
    }
    SettingList settings = canonicalSettings(doc);
    settings.emplace_back("--trace", nlohmann::json(o.trace).dump());
    settings.emplace_back("--switch", nlohmann::json(o.switches).dump());
    // Ranks loading or saving different checkpoints would train apart (or wait on each other).
    for (const auto& [name, value] : {std::pair{"--load", o.load}, std::pair{"--resume", o.resume},
                                      std::pair{"--save", o.save}}) {
      settings.emplace_back(name, nlohmann::json(value).dump());
    }
    settings.emplace_back("--save-interval", std::to_string(o.saveInterval));
    settings.emplace_back("--keep", std::to_string(o.keep));
    agreeOnSettings(*options.world, settings);
  } else if (!o.trace.empty()) {
    checkOutputPath(o.trace, "--trace", traceInputs(o));
  }
  const int worldSize = mpi ? options.world->size() : 0;
  const TrainConfig config = parseTrainConfig(doc, worldSize);
  std::vector<PlannedSwitch> plan = planSwitches(o.switches, config, worldSize);
  if (!o.trace.empty()) options.recorder = std::make_shared<profiler::RunTrace>(o.trace);
  if (!o.load.empty() && !o.resume.empty()) {
    throw UserError("--load and --resume: give one (--resume DIR also keeps saving into DIR)");
  }
  options.load = o.resume.empty() ? o.load : o.resume;
  // Steps count from the run's start, the saved ones included: a switch at or before the step
  // the checkpoint holds would never come (and hold back every later one).
  if (!options.load.empty() && !plan.empty()) {
    const int saved = CheckpointReader(options.load).manifest().counters.step;
    if (plan.front().step <= saved) {
      throw UserError("--switch '" + plan.front().spec + "': step " +
                      std::to_string(plan.front().step) + " is not after step " +
                      std::to_string(saved) + ", where " +
                      (o.resume.empty() ? "--load" : "--resume") +
                      " starts the run; switch steps count the saved steps too");
    }
  }
  options.saveDir = o.save.empty() ? o.resume : o.save;
  options.saveInterval = o.saveInterval;
  options.keep = o.keep;
  if (options.saveDir.empty() && (o.saveInterval > 0 || o.keep > 0)) {
    throw UserError("--save-interval and --keep need --save DIR (or --resume DIR)");
  }
  const bool printing = !mpi || options.world->rank() == 0;
  if (chosen && printing) printChoice(*chosen, *request, o.json);
  Session session(config, std::move(options));
  for (const PlannedSwitch& p : plan) session.checkSwitch(p.config);
  Printer printer(config, o.json, !o.trace.empty());
  Switcher switcher(session, std::move(plan));
  if (printing) session.addObserver(printer);
  session.addObserver(switcher);
  session.run();
  // A stop signal ended the run at a step boundary (or came after the last): exit 130 / 143.
  if (const int signal = pendingStopSignal()) throw Interrupted(signal);
  // main() prints the failure as one line and, under MPI, tells the peers.
  if (const auto failure = session.error()) {
    if (failure->userError) throw UserError(failure->reason);
    throw std::runtime_error(failure->reason);
  }
}

}  // namespace

void registerTrainCommand(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand("train", "Train a model from a JSON config");
  cmd->add_option("--config", o->config, "Config file (JSON)")->capture_default_str();
  cmd->add_option("overrides", o->overrides,
                  "Config overrides as key.path=value, e.g. train_iters=50 model.num_layers=2");
  cmd->add_option("--backend", o->backend,
                  "Ranks as in-process threads (default) or MPI processes (under mpirun)")
      ->check(CLI::IsMember({"threads", "mpi"}));
  cmd->add_flag("--json", o->json, "Print one JSON object per line");
  cmd->add_option("--system", o->system,
                  "With parallel.auto: the hardware description to plan on (a100-80gb, "
                  "h100-80gb, this-machine or a file; default this machine's)");
  cmd->add_option("--trace", o->trace,
                  "Record the run as a Chrome trace (.json or .json.gz); under MPI one file per "
                  "rank, NAME.rank0.json, ...");
  cmd->add_option("--switch", o->switches,
                  "Switch the strategy after STEP steps, live: STEP:key=value[,key=value...], "
                  "e.g. 20:tensor_model_parallel_size=2,data_parallel_size=1 (repeatable; each "
                  "applies on top of the previous; a comma inside [...] or {...} is the value's)");
  cmd->add_option("--save", o->save,
                  "Write checkpoints under DIR: at the end and every --save-interval steps");
  cmd->add_option("--save-interval", o->saveInterval, "Steps between checkpoints (0: at the end)")
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--keep", o->keep, "Keep the newest K checkpoints (0: all)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--load", o->load,
                  "Start from a checkpoint (a step directory, or DIR's latest) under this "
                  "config's strategy; train_iters counts the saved steps too");
  cmd->add_option("--resume", o->resume, "Continue DIR's latest checkpoint and keep saving there");
  cmd->callback([o] { runTrain(*o); });
}

}  // namespace parascope::cli
