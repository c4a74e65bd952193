#include "ui/workbench_bench.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QTimer>

#include <algorithm>
#include <ctime>
#include <vector>

#include "core/config/config.h"
#include "core/session/session.h"
#include "ui/segment_model.h"
#include "ui/workbench_window.h"

namespace parascope::ui {

namespace {

// Tokens per second over all steps, as the Compare table counts a segment.
class Throughput final : public SessionObserver {
 public:
  void onStep(const StepReport& r) override {
    tokens_ += static_cast<double>(r.tokens);
    seconds_ += r.seconds;
  }
  double rate() const { return seconds_ > 0 ? tokens_ / seconds_ : 0; }

 private:
  double tokens_ = 0, seconds_ = 0;
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

}  // namespace

int runWorkbenchBench(const WorkbenchBenchOptions& options, std::ostream& out) {
  nlohmann::json doc = options.document;
  doc["data_parallel_size"] = 4;
  doc["train_iters"] = options.steps;
  doc["eval_interval"] = 0;
  const TrainConfig config = parseTrainConfig(doc);

  // Headless: the session and one observer, nothing else.
  Throughput headless;
  {
    Session session(config);
    session.addObserver(headless);
    const FinishedReport f = session.run();
    if (f.failed) {
      out << "bench-ui: the headless run failed: " << session.error()->reason << "\n";
      return 1;
    }
  }

  // In the workbench, with a frame probe on the GUI thread.
  WorkbenchWindow window;
  window.setDocument(doc);
  window.resize(1600, 1000);
  window.show();
  // Two measures per frame period of 16 ms: the interval between the probe's ticks (late when
  // the GUI thread was busy or not scheduled), and the GUI thread's CPU time in it (draining
  // reports, updating models and charts, painting), which is what the GUI costs per frame
  // whatever the rank threads leave it of two shared cores.
  std::vector<double> frames;  // ms between probe ticks
  std::vector<double> work;    // ms of GUI-thread CPU time per period
  QElapsedTimer clock;
  double cpuAtTick = 0;
  QTimer probe;
  probe.setTimerType(Qt::PreciseTimer);
  probe.setInterval(16);
  QObject::connect(&probe, &QTimer::timeout, [&] {
    const double cpu = threadCpuMilliseconds();
    if (clock.isValid()) {
      frames.push_back(static_cast<double>(clock.nsecsElapsed()) / 1e6);
      work.push_back(cpu - cpuAtTick);
    }
    cpuAtTick = cpu;
    clock.start();
  });
  bool failed = false;
  QObject::connect(&window, &WorkbenchWindow::sessionEnded, [&](bool f) {
    failed = f;
    probe.stop();
    QApplication::exit(0);
  });
  // The probe starts once the session has (the start measures this machine's sgemm peak for
  // MFU once, on the GUI thread, before any frame of the run).
  QTimer::singleShot(0, &window, [&] {
    window.start();
    probe.start();
  });
  QApplication::exec();
  if (failed) {
    out << "bench-ui: the run in the window failed: " << window.errorText().toStdString() << "\n";
    return 1;
  }
  // The window's own measure of its segment: all steps, as counted headless.
  const double attached = window.segmentModel()->rowCount() > 0
                              ? window.segmentModel()->value(0, SegmentModel::TokensPerSecond)
                              : 0;
  const double median = percentile(frames, 0.5), p99 = percentile(frames, 0.99);
  const double workMedian = percentile(work, 0.5), workP99 = percentile(work, 0.99);
  const double slowdown = headless.rate() > 0 ? 1 - attached / headless.rate() : 0;
  if (options.json) {
    out << nlohmann::json{{"ranks", 4},
                          {"steps", options.steps},
                          {"frames", frames.size()},
                          {"frame_interval_ms_median", median},
                          {"frame_interval_ms_p99", p99},
                          {"frame_work_ms_median", workMedian},
                          {"frame_work_ms_p99", workP99},
                          {"headless_tokens_per_s", headless.rate()},
                          {"gui_tokens_per_s", attached},
                          {"slowdown", slowdown}}
               .dump()
        << "\n";
  } else {
    out << "4 ranks, " << options.steps << " steps; " << frames.size() << " GUI frames\n"
        << "frame work (GUI thread CPU time per 16 ms frame): median " << workMedian << " ms, p99 "
        << workP99 << " ms\n"
        << "frame interval (16 ms timer on the GUI thread): median " << median << " ms, p99 " << p99
        << " ms\n"
        << "throughput: headless " << headless.rate() << " tokens/s, with the workbench "
        << attached << " tokens/s (" << 100 * slowdown << "% slower)\n";
  }
  return 0;
}

}  // namespace parascope::ui
