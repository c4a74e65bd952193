#include "ui/workbench/workbench_bench.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/kernels/sgemm_peak.h"
#include "core/session/run_metrics.h"
#include "core/session/session.h"
#include "profiler/live_trace.h"
#include "ui/views/segment_model.h"
#include "ui/workbench/workbench_window.h"

namespace parascope::ui {

namespace {

// Tokens per second over all steps, as the Compare table counts a segment.
class Throughput final : public SessionObserver {
 public:
  void onStep(const StepReport& r) override { metrics_.addStep(r); }
  double rate() const { return metrics_.tokensPerSecond(); }

 private:
  RunMetrics metrics_;
};

double threadCpuMilliseconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

struct Round {
  double headless = 0, traced = 0, attached = 0;  // tokens/s
  std::vector<double> frames;                     // ms between probe ticks
  std::vector<double> work;                       // ms of GUI-thread CPU time per period
  double seconds = 0;                             // the attached run's probe time
  // GUI-thread CPU ms per second of the attached run: the share of a core the window took from
  // the ranks, which another process's load changes far less than the throughput.
  double guiCpuPerSecond() const {
    double sum = 0;
    for (double w : work) sum += w;
    return seconds > 0 ? sum / seconds : 0;
  }
};

// The session without a window; `tracePath` non-empty: with the workbench's recorder writing
// there. Tokens/s, or nothing when the run failed (its reason in `error`).
std::optional<double> runHeadless(const TrainConfig& config, const std::string& tracePath,
                                  std::string& error) {
  Throughput throughput;
  SessionOptions options;
  if (!tracePath.empty()) options.recorder = std::make_shared<profiler::LiveTrace>(tracePath);
  Session session(config, options);
  session.addObserver(throughput);
  if (session.run().failed) {
    error = session.error()->reason;
    return std::nullopt;
  }
  return throughput.rate();
}

// The session in a fresh workbench window, with the frame probe. Tokens/s as the window's
// Compare table measures its segment, or nothing when the run failed.
std::optional<double> runAttached(const nlohmann::json& doc, Round& round, std::string& error) {
  WorkbenchWindow window;
  window.setDocument(doc);
  window.resize(1600, 1000);
  window.show();
  // Two measures per frame period of 16 ms: the interval between the probe's ticks (late when
  // the GUI thread was busy or not scheduled), and the GUI thread's CPU time in it (draining
  // reports, updating models and charts, painting), which is what the GUI costs per frame
  // whatever the rank threads leave it of two shared cores.
  QElapsedTimer clock, run;
  double cpuAtTick = 0;
  QTimer probe;
  probe.setTimerType(Qt::PreciseTimer);
  probe.setInterval(16);
  QObject::connect(&probe, &QTimer::timeout, [&] {
    const double cpu = threadCpuMilliseconds();
    if (clock.isValid()) {
      round.frames.push_back(static_cast<double>(clock.nsecsElapsed()) / 1e6);
      round.work.push_back(cpu - cpuAtTick);
    }
    cpuAtTick = cpu;
    clock.start();
  });
  bool failed = false;
  QObject::connect(&window, &WorkbenchWindow::sessionEnded, [&](bool f) {
    failed = f;
    probe.stop();
    round.seconds = static_cast<double>(run.nsecsElapsed()) / 1e9;
    if (f) QApplication::exit(0);
  });
  // The ended run's analysis runs on a thread of its own: wait for it, so that it does not
  // overlap the next run.
  QObject::connect(&window, &WorkbenchWindow::traceShown, [] { QApplication::exit(0); });
  // The frame probe starts once the session has.
  QTimer::singleShot(0, &window, [&] {
    window.start();
    probe.start();
    run.start();
  });
  QApplication::exec();
  if (failed) {
    error = window.errorText().toStdString();
    return std::nullopt;
  }
  // The window's own measure of its segment: all steps, as counted headless.
  const SegmentModel* segments = window.segmentModel();
  return segments->rowCount() > 0
             ? segments->value(segments->rowCount() - 1, SegmentModel::TokensPerSecond)
             : 0;
}

double slowdownOf(double rate, double headless) {
  return headless > 0 ? 1 - rate / headless : 0;
}

}  // namespace

int runWorkbenchBench(const WorkbenchBenchOptions& options, std::ostream& out) {
  nlohmann::json doc = options.document;
  doc["data_parallel_size"] = 4;
  doc["train_iters"] = options.steps;
  doc["eval_interval"] = 0;
  const TrainConfig config = parseTrainConfig(doc);
  QTemporaryDir traces;
  // MFU's peak, cached now (measured if this machine has none) so that no window measures it
  // during a run.
  kernels::sgemmPeak();

  std::vector<Round> rounds(static_cast<std::size_t>(std::max(1, options.rounds)));
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    Round& r = rounds[i];
    std::string error;
    const std::string tracePath =
        QDir(traces.path()).filePath(QStringLiteral("traced-%1.json").arg(i)).toStdString();
    const bool attachedFirst = i % 2 == 1;
    std::optional<double> attached;
    if (attachedFirst) attached = runAttached(doc, r, error);
    if (attachedFirst && !attached) {
      out << "bench-ui: the run in the window failed: " << error << "\n";
      return 1;
    }
    for (const std::string& path : attachedFirst ? std::vector<std::string>{tracePath, {}}
                                                 : std::vector<std::string>{{}, tracePath}) {
      const std::optional<double> rate = runHeadless(config, path, error);
      if (!rate) {
        out << "bench-ui: the " << (path.empty() ? "headless" : "traced")
            << " run failed: " << error << "\n";
        return 1;
      }
      (path.empty() ? r.headless : r.traced) = *rate;
    }
    if (!attachedFirst) attached = runAttached(doc, r, error);
    if (!attached) {
      out << "bench-ui: the run in the window failed: " << error << "\n";
      return 1;
    }
    r.attached = *attached;
  }

  std::vector<double> frames, work, headless, traced, attached, guiCpu, slowdowns, tracerSlowdowns;
  for (const Round& r : rounds) {
    guiCpu.push_back(r.guiCpuPerSecond());
    slowdowns.push_back(slowdownOf(r.attached, r.headless));
    tracerSlowdowns.push_back(slowdownOf(r.traced, r.headless));
    frames.insert(frames.end(), r.frames.begin(), r.frames.end());
    work.insert(work.end(), r.work.begin(), r.work.end());
    headless.push_back(r.headless);
    traced.push_back(r.traced);
    attached.push_back(r.attached);
  }
  const double median = percentile(frames, 0.5), p99 = percentile(frames, 0.99);
  const double workMedian = percentile(work, 0.5), workP99 = percentile(work, 0.99);
  const double headlessRate = percentile(headless, 0.5), tracedRate = percentile(traced, 0.5);
  const double attachedRate = percentile(attached, 0.5);
  // Each round's runs against its own headless run, which ran next to them: a load that comes and
  // goes between rounds then moves both sides of a ratio, not one.
  const double slowdown = percentile(slowdowns, 0.5);
  const double tracerSlowdown = percentile(tracerSlowdowns, 0.5);
  const double guiCpuPerSecond = percentile(guiCpu, 0.5);
  if (options.json) {
    nlohmann::json each = nlohmann::json::array();
    for (const Round& r : rounds) {
      each.push_back({{"headless_tokens_per_s", r.headless},
                      {"traced_tokens_per_s", r.traced},
                      {"gui_tokens_per_s", r.attached},
                      {"tracer_slowdown", slowdownOf(r.traced, r.headless)},
                      {"slowdown", slowdownOf(r.attached, r.headless)},
                      {"frames", r.frames.size()},
                      {"gui_cpu_ms_per_s", r.guiCpuPerSecond()},
                      {"frame_work_ms_p99", percentile(r.work, 0.99)},
                      {"frame_interval_ms_p99", percentile(r.frames, 0.99)}});
    }
    out << nlohmann::json{{"ranks", 4},
                          {"steps", options.steps},
                          {"rounds", rounds.size()},
                          {"frames", frames.size()},
                          {"frame_interval_ms_median", median},
                          {"frame_interval_ms_p99", p99},
                          {"frame_work_ms_median", workMedian},
                          {"frame_work_ms_p99", workP99},
                          {"gui_cpu_ms_per_s", guiCpuPerSecond},
                          {"headless_tokens_per_s", headlessRate},
                          {"traced_tokens_per_s", tracedRate},
                          {"gui_tokens_per_s", attachedRate},
                          {"tracer_slowdown", tracerSlowdown},
                          {"slowdown", slowdown},
                          {"per_round", each}}
               .dump()
        << "\n";
    return 0;
  }
  out << "4 ranks, " << options.steps << " steps, " << rounds.size() << " rounds; " << frames.size()
      << " GUI frames\n"
      << "frame work (GUI thread CPU time per 16 ms frame): median " << workMedian << " ms, p99 "
      << workP99 << " ms; " << guiCpuPerSecond
      << " ms of GUI thread CPU time per second of the run (median of the rounds)\n"
      << "frame interval (16 ms timer on the GUI thread): median " << median << " ms, p99 " << p99
      << " ms\n";
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    const Round& r = rounds[i];
    out << "round " << i + 1 << (i % 2 == 1 ? " (attached first)" : "") << ": headless "
        << r.headless << ", traced " << r.traced << " (" << 100 * slowdownOf(r.traced, r.headless)
        << "% slower), with the workbench " << r.attached << " tokens/s ("
        << 100 * slowdownOf(r.attached, r.headless) << "% slower)\n";
  }
  out << "throughput, median of the rounds: headless " << headlessRate << " tokens/s, traced "
      << tracedRate << " tokens/s, with the workbench " << attachedRate
      << " tokens/s; median of the rounds' slowdowns: traced " << 100 * tracerSlowdown
      << "%, with the workbench " << 100 * slowdown << "%\n";
  return 0;
}

}  // namespace parascope::ui
