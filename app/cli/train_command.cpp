// parascope-cli train: a front over a Session (core/session/session.h) built from a JSON config
// plus key=value overrides. Printing is an observer: a progress bar on a terminal, plain lines
// otherwise, JSON lines with --json. data_parallel_size=N runs N in-process ranks; under
// `mpirun -np N ... --backend mpi` each process is a rank, and rank 0 prints.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "core/comm/mpi/mpi_backend.h"
#include "core/common/error.h"
#include "core/common/output_file.h"
#include "core/common/stop_signal.h"
#include "core/config/config_agreement.h"
#include "core/session/session.h"
#include "profiler/io/chrome_export.h"
#include "profiler/run_trace.h"

namespace parascope::cli {

namespace {

struct TrainOptions {
  std::string config = "resources/configs/default.json";
  std::vector<std::string> overrides;
  std::string backend;  // empty: the config's "backend" key
  bool json = false;
  std::string trace;  // Chrome trace file; empty: no tracing
};

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

  void onStep(const StepReport& r) override {
    const double rate = static_cast<double>(r.tokens) / r.seconds;
    if (json_) {
      std::printf("%s\n", nlohmann::json{{"event", "step"},
                                         {"step", r.step},
                                         {"total_steps", r.totalSteps},
                                         {"loss_nats", r.loss},
                                         {"lr", r.lr},
                                         {"grad_norm", r.gradNorm},
                                         {"step_time_s", r.seconds},
                                         {"targets_per_s", rate},
                                         {"loss_scale", r.lossScale},
                                         {"skipped", r.skipped}}
                              .dump()
                              .c_str());
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
                  r.totalSteps, r.loss, r.lr, unit(), smoothedRate_);
      std::fflush(stdout);
    } else if (r.skipped || r.step % c_.logInterval == 0 || r.step == 1 || r.step == r.totalSteps) {
      char norm[32] = "overflow";  // inf or NaN
      if (std::isfinite(r.gradNorm)) std::snprintf(norm, sizeof norm, "%.3f", r.gradNorm);
      std::printf("step %5d/%d  loss %.4f  lr %.2e  grad-norm %s  %s %.0f%s\n", r.step,
                  r.totalSteps, r.loss, r.lr, norm, unit(), smoothedRate_,
                  lossScaleText(r).c_str());
      std::fflush(stdout);
    }
  }

  void onEval(const EvalReport& r) override {
    const bool classify = c_.model.kind == ModelSpec::Kind::Mlp;
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
  const char* unit() const {
    return c_.model.kind == ModelSpec::Kind::Gpt ? "tokens/s" : "images/s";
  }
  const TrainConfig& c_;
  bool json_;
  bool tty_;
  bool tracing_;
  double smoothedRate_ = 0;
};

void Printer::onStart(const StartReport& s) {
  const TrainConfig& config = s.config;
  const ParallelStrategy& p = config.parallel;
  if (json_) {
    std::printf("%s\n", nlohmann::json{{"event", "start"},
                                       {"model", s.model},
                                       {"parameters", s.parameters},
                                       {"data", s.data},
                                       {"global_batch", config.globalBatch},
                                       {"micro_batch", config.microBatch},
                                       {"gradient_accumulation_steps", config.gradientAccumulation},
                                       {"data_parallel_size", p.data},
                                       {"tensor_model_parallel_size", p.tensor},
                                       {"pipeline_model_parallel_size", p.pipeline},
                                       {"sequence_parallel", p.sequenceParallel},
                                       {"zero_stage", p.zeroStage},
                                       {"precision", precisionName(p.compute)},
                                       {"backend", rankBackendName(p.backend)},
                                       {"train_iters", config.trainIters}}
                            .dump()
                            .c_str());
  } else {
    std::printf(
        "model: %s\ndata:  %s\nbatch: %d = %d micro x %d accumulation x %d data-parallel, %d "
        "steps\n",
        s.model.c_str(), s.data.c_str(), config.globalBatch, config.microBatch,
        config.gradientAccumulation, p.data, config.trainIters);
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
    options.mpiWorld = mpiWorld();
    // This rank's own output first, then, before any collective that depends on them, every
    // rank's settings and outputs must agree (a rank that fails here tells its peers).
    if (!o.trace.empty()) {
      checkOutputPath(profiler::perRankPath(o.trace, options.mpiWorld->rank()), "--trace");
    }
    SettingList settings = canonicalSettings(doc);
    settings.emplace_back("--trace", nlohmann::json(o.trace).dump());
    agreeOnSettings(*options.mpiWorld, settings);
  } else if (launchedByMpirun()) {
    throw UserError(
        "started by mpirun with the threads backend; pass --backend mpi (or set "
        "\"backend\": \"mpi\") so that the processes train together");
  } else if (!o.trace.empty()) {
    checkOutputPath(o.trace, "--trace");
  }
  const TrainConfig config =
      mpi ? parseTrainConfig(doc, options.mpiWorld->size()) : parseTrainConfig(doc);
  if (!o.trace.empty()) options.recorder = std::make_shared<profiler::RunTrace>(o.trace);
  const bool printing = !mpi || options.mpiWorld->rank() == 0;
  Session session(config, std::move(options));
  Printer printer(session.config(), o.json, !o.trace.empty());
  if (printing) session.addObserver(printer);
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
  cmd->add_option("--trace", o->trace,
                  "Record the run as a Chrome trace (.json or .json.gz); under MPI one file per "
                  "rank, NAME.rank0.json, ...");
  cmd->callback([o] { runTrain(*o); });
}

}  // namespace parascope::cli
