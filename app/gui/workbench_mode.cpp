// parascope [--config F.json] [key=value ...] [--run] [--open trace.json[,rank1.json...] ...]
//           [--screenshot-dir DIR --quit-after-steps N] [--switch STEP:key=value,...]: the
// workbench on a session (the config with overrides; else the last session's config, else the
// bundled default), started with --run; --screenshot-dir runs it, saves the window and each
// view once N steps ran and the run's trace is shown, then quits (exit 1 if the session
// failed). Each --switch switches the run live after its step, as Apply would. Each --open is
// one trace (its per-rank files joined by commas; file arguments join the first), in a tab of
// its own and a source of Compare's diff; with --open and --screenshot-dir but no --run, the
// pictures are taken once every trace is shown and, for two or more, the last two compared.
#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QTimer>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "app/gui/modes.h"
#include "bench/plan.h"
#include "core/common/error.h"
#include "core/common/output_file.h"
#include "core/common/printable.h"
#include "core/common/shipped_file.h"
#include "core/common/stop_signal.h"
#include "core/config/config.h"
#include "core/session/switch_plan.h"
#include "ui/workbench/strategy_panel.h"
#include "ui/workbench/workbench_window.h"

namespace parascope::gui {

namespace {

// Saves the screenshots into `dir` and quits: exit status 1 when nothing could be written, or
// when `failure` is given (then the window's error follows it on stderr).
void saveScreenshotsAndQuit(ui::WorkbenchWindow& window, const QString& dir, const char* failure) {
  QStringList files;
  try {
    files = window.saveScreenshots(dir);
  } catch (const UserError& e) {
    std::fprintf(stderr, "parascope: %s\n", printableText(e.what()).c_str());
  }
  for (const QString& f : files) std::printf("parascope: wrote %s\n", qPrintable(f));
  if (failure != nullptr) {
    std::fprintf(stderr, "parascope: %s%s\n", failure,
                 printableText(window.errorText().toStdString()).c_str());
  }
  QApplication::exit(failure != nullptr || files.isEmpty() ? 1 : 0);
}

// After `steps` steps: stop the session; once it has ended and its trace is in the timeline (or
// it failed), save the screenshots and quit, exit status 1 if the session failed or nothing
// could be written.
void watchForScreenshots(ui::WorkbenchWindow& window, const QString& dir, int steps) {
  using ui::WorkbenchWindow;
  auto failed = std::make_shared<bool>(false);
  auto shot = std::make_shared<bool>(false);
  window.setStopAfterSteps(steps);
  auto shoot = [&window, dir, failed, shot] {
    if (*shot) return;  // a failed run may also show its trace
    *shot = true;
    QTimer::singleShot(200, &window, [&window, dir, failed] {
      saveScreenshotsAndQuit(window, dir, *failed ? "the session failed: " : nullptr);
    });
  };
  QObject::connect(&window, &WorkbenchWindow::sessionEnded, &window, [failed, shoot](bool f) {
    *failed = f;
    if (f) shoot();
  });
  QObject::connect(&window, &WorkbenchWindow::traceShown, &window, [shoot](bool run) {
    if (run) shoot();  // traces opened with --open show in tabs of their own beside the run
  });
}

// Without a run: once each of `traces` opened traces is shown and, with two or more, the diff of
// the last two (which opening the second started) is in the Compare tab, save the screenshots
// and quit.
void watchTracesForScreenshots(ui::WorkbenchWindow& window, const QString& dir, int traces) {
  using ui::WorkbenchWindow;
  auto shown = std::make_shared<int>(0);
  auto diffed = std::make_shared<bool>(traces < 2);
  auto shoot = [&window, dir, shown, diffed, traces] {
    if (*shown != traces || !*diffed) return;
    *shown = -1;  // once
    QTimer::singleShot(200, &window, [&window, dir] {
      // A trace that could not be read or analysed is in the picture, and in the exit status.
      saveScreenshotsAndQuit(window, dir, window.errorText().isEmpty() ? nullptr : "");
    });
  };
  QObject::connect(&window, &WorkbenchWindow::traceShown, &window, [shown, shoot](bool run) {
    if (run || *shown < 0) return;
    ++*shown;
    shoot();
  });
  QObject::connect(&window, &WorkbenchWindow::diffShown, &window, [diffed, shoot] {
    *diffed = true;
    shoot();
  });
}

// The screenshots' files, judged before the run rather than after it: a symbolic link, FIFO or
// device among them would be written through, or waited on for ever.
bool screenshotsWritable(const QString& dir, const QStringList& names) {
  try {
    if (!QDir().mkpath(dir)) {
      throw UserError("--screenshot-dir '" + dir.toStdString() +
                      "': not a directory, and one cannot be created there");
    }
    for (const QString& name : names)
      checkOutputPath(QDir(dir).filePath(name).toStdString(), "--screenshot-dir");
  } catch (const UserError& e) {
    std::fprintf(stderr, "parascope: %s\n", printableText(e.what()).c_str());
    return false;
  }
  return true;
}

}  // namespace

std::string defaultConfigPath() {
  const char* relative = "resources/configs/default.json";
  if (QFileInfo::exists(QString::fromLatin1(relative))) return relative;
  return shippedFile(relative);
}

int runWorkbench(const QCommandLineParser& parser, const GuiOptions& o) {
  // Positional arguments are key=value overrides, or more files of the first trace.
  nlohmann::json document;
  std::vector<QStringList> traces;
  for (const QString& value : parser.values(o.open)) {
    traces.push_back(value.split(QLatin1Char(','), Qt::SkipEmptyParts));
    if (traces.back().isEmpty()) {
      std::fprintf(stderr, "parascope: --open '%s' names no trace file\n", qPrintable(value));
      return 2;
    }
  }
  try {
    if (parser.isSet(o.config)) {
      document = readJsonFile(parser.value(o.config).toStdString());
    } else {
      document = ui::WorkbenchWindow::lastDocument();
      if (document.is_null()) document = readJsonFile(defaultConfigPath());
    }
    for (const QString& arg : parser.positionalArguments()) {
      if (arg.contains(QLatin1Char('='))) {
        applyOverride(document, arg.toStdString());
      } else {
        if (traces.empty()) traces.emplace_back();
        traces.front() << arg;
      }
    }
  } catch (const UserError& e) {
    std::fprintf(stderr, "parascope: %s\n", printableText(e.what()).c_str());
    return 2;
  }
  const bool screenshots = parser.isSet(o.screenshotDir);
  std::vector<std::string> switchSpecs;
  for (const QString& s : parser.values(o.switches)) switchSpecs.push_back(s.toStdString());
  // --screenshot-dir runs a session unless it photographs opened traces alone.
  if (!switchSpecs.empty() && !parser.isSet(o.run) && (!screenshots || !traces.empty())) {
    std::fprintf(stderr,
                 "parascope: --switch needs a run: give --run, or --screenshot-dir without "
                 "--open\n");
    return 2;
  }
  int quitAfter = 0;
  if (screenshots) {
    bool ok = false;
    quitAfter = parser.value(o.quitAfterSteps).toInt(&ok);
    if (!ok || quitAfter < 1) {
      std::fprintf(stderr, "parascope: --quit-after-steps must be an integer >= 1, got '%s'\n",
                   qPrintable(parser.value(o.quitAfterSteps)));
      return 2;
    }
  }
  // SIGINT and SIGTERM end the workbench as Quit does (the session stops, the run traces'
  // temporary folder goes), with exit status 128 + the signal; recorded from before the window
  // (and its folder) exists, so one that comes while it is being set up is not lost.
  installStopSignalHandlers();
  ui::WorkbenchWindow window;
  window.restoreLayout();
  // Predictions use this machine's cached description; calibrating one trains, so it waits for
  // the user to ask while no session runs.
  window.setSystem(bench::cachedMachine());
  window.setCalibrator([] {
    SystemDescription system = bench::calibrateThisMachine().system;
    bench::cacheSystem(system);
    return system;
  });
  window.setDocument(document);
  if (!switchSpecs.empty()) {
    // Every target checked now, as train --switch checks them: a bad one costs no run.
    try {
      if (!window.panel()->config()) throw UserError(window.panel()->message().toStdString());
      window.setSwitchPlan(planSwitches(switchSpecs, *window.panel()->config(), 0));
    } catch (const UserError& e) {
      std::fprintf(stderr, "parascope: %s\n", printableText(e.what()).c_str());
      return 2;
    }
  }
  // Pictures of the opened traces alone, or of a run (beside them).
  const bool tracesOnly = screenshots && !traces.empty() && !parser.isSet(o.run);
  if (screenshots) {
    if (!screenshotsWritable(parser.value(o.screenshotDir), window.screenshotNames())) return 2;
    window.resize(1600, 1000);
    if (tracesOnly) {
      watchTracesForScreenshots(window, parser.value(o.screenshotDir),
                                static_cast<int>(traces.size()));
    } else {
      watchForScreenshots(window, parser.value(o.screenshotDir), quitAfter);
    }
  }
  for (const QStringList& files : traces) window.showTraces(files);
  QTimer stopWatch;
  QObject::connect(&stopWatch, &QTimer::timeout, &window, [&window] {
    if (const int signal = pendingStopSignal()) {
      window.close();
      QApplication::exit(128 + signal);
    }
  });
  stopWatch.start(100);
  window.show();
  if (parser.isSet(o.run) || (screenshots && !tracesOnly)) {
    if (!window.panel()->config()) {
      std::fprintf(stderr, "parascope: %s\n",
                   printableText(window.panel()->message().toStdString()).c_str());
      return 2;
    }
    QTimer::singleShot(0, &window, &ui::WorkbenchWindow::start);
  }
  return QApplication::exec();
}

}  // namespace parascope::gui
