// parascope: the GUI.
//   parascope [--config F.json] [key=value ...] [--run] [--open trace.json ...]
//             [--screenshot-dir DIR --quit-after-steps N]
// opens the workbench on a session (the config with overrides; else the last session's config,
// else resources/configs/default.json), --run starts it, and --screenshot-dir saves the window
// and each view as PNGs once N steps ran and the run's trace is shown, then quits (exit 1 if the
// session failed). `parascope --open FILE... --screenshot FILE.png` shows traces alone in the
// timeline window as before; `parascope --bench-timeline [--events N] [--json]` runs the timeline
// benchmark, `parascope --bench-ui [--json] [--rounds R] [--config F] [key=value ...]` the
// workbench's. All work under QT_QPA_PLATFORM=offscreen. Exit status 2 on a usage error.
#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QTimer>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>

#include "core/common/error.h"
#include "core/config/config.h"
#include "ui/strategy_panel.h"
#include "ui/timeline_bench.h"
#include "ui/timeline_window.h"
#include "ui/workbench_bench.h"
#include "ui/workbench_window.h"

namespace {

// A display to open, or a platform chosen (QT_QPA_PLATFORM or Qt's -platform argument).
bool hasPlatform(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-platform") == 0) return true;
  }
  return !qEnvironmentVariableIsEmpty("DISPLAY") ||
         !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") ||
         !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

std::string defaultConfigPath() {
  const char* relative = "resources/configs/default.json";
  if (QFileInfo::exists(QString::fromLatin1(relative))) return relative;
  return std::string(PARASCOPE_SOURCE_DIR) + "/" + relative;
}

// The timeline window alone on trace files; with a screenshot path it saves the window once the
// traces are shown (or their error) and quits.
int timelineOnly(const QStringList& files, const QString& path) {
  parascope::ui::TimelineWindow window;
  window.resize(1600, 900);
  // Once the load has ended either way, give the view one turn of the event loop to paint.
  auto save = [&window, path] {
    QTimer::singleShot(100, &window, [&window, path] {
      const bool saved = window.grab().save(path, "PNG");
      if (!saved) std::fprintf(stderr, "parascope: cannot write '%s'\n", qPrintable(path));
      QApplication::exit(saved ? 0 : 1);
    });
  };
  QObject::connect(window.loader(), &parascope::ui::TraceLoader::loaded, &window, save);
  QObject::connect(window.loader(), &parascope::ui::TraceLoader::failed, &window, save);
  window.openFiles(files);
  window.show();
  return QApplication::exec();
}

// After `steps` steps: stop the session; once it has ended and its trace is in the timeline (or
// it failed), save the screenshots and quit, exit status 1 if the session failed or nothing
// could be written.
void watchForScreenshots(parascope::ui::WorkbenchWindow& window, const QString& dir, int steps) {
  using parascope::ui::WorkbenchWindow;
  auto failed = std::make_shared<bool>(false);
  auto shot = std::make_shared<bool>(false);
  window.setStopAfterSteps(steps);
  auto shoot = [&window, dir, failed, shot] {
    if (*shot) return;  // a failed run may also show its trace
    *shot = true;
    QTimer::singleShot(200, &window, [&window, dir, failed] {
      const QStringList files = window.saveScreenshots(dir);
      for (const QString& f : files) std::printf("parascope: wrote %s\n", qPrintable(f));
      if (*failed) {
        std::fprintf(stderr, "parascope: the session failed: %s\n", qPrintable(window.errorText()));
      }
      QApplication::exit(*failed || files.isEmpty() ? 1 : 0);
    });
  };
  QObject::connect(&window, &WorkbenchWindow::sessionEnded, &window, [failed, shoot](bool f) {
    *failed = f;
    if (f) shoot();
  });
  QObject::connect(&window, &WorkbenchWindow::traceShown, &window, shoot);
}

}  // namespace

int main(int argc, char** argv) {
  // Without one, Qt's default platform aborts with several lines about plugins; say what is
  // missing in one line instead.
  if (!hasPlatform(argc, argv)) {
    std::fprintf(stderr,
                 "parascope: no display (DISPLAY and WAYLAND_DISPLAY are unset); for "
                 "--bench-timeline, --screenshot or --screenshot-dir set QT_QPA_PLATFORM=offscreen "
                 "(or run under xvfb-run)\n");
    return 2;
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("parascope"));
  QApplication::setOrganizationName(QStringLiteral("ParaScope"));
  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("ParaScope: timelines of parallel training"));
  parser.addHelpOption();
  const QCommandLineOption open(QStringLiteral("open"), QStringLiteral("Open trace files."),
                                QStringLiteral("file"));
  const QCommandLineOption bench(QStringLiteral("bench-timeline"),
                                 QStringLiteral("Benchmark the timeline and exit."));
  const QCommandLineOption events(QStringLiteral("events"),
                                  QStringLiteral("Events in the benchmark's trace."),
                                  QStringLiteral("N"), QStringLiteral("10000000"));
  const QCommandLineOption json(QStringLiteral("json"),
                                QStringLiteral("Benchmark output as JSON."));
  const QCommandLineOption screenshot(
      QStringLiteral("screenshot"),
      QStringLiteral("Save the window as a PNG once the traces are shown, then quit."),
      QStringLiteral("file.png"));
  const QCommandLineOption config(QStringLiteral("config"),
                                  QStringLiteral("The session's config (JSON)."),
                                  QStringLiteral("file.json"));
  const QCommandLineOption run(QStringLiteral("run"), QStringLiteral("Start the session."));
  const QCommandLineOption screenshotDir(
      QStringLiteral("screenshot-dir"),
      QStringLiteral("Run, save the window and each view as PNGs in DIR, then quit."),
      QStringLiteral("dir"));
  const QCommandLineOption quitAfterSteps(
      QStringLiteral("quit-after-steps"),
      QStringLiteral("With --screenshot-dir: steps to run before the screenshots."),
      QStringLiteral("N"), QStringLiteral("5"));
  const QCommandLineOption benchUi(
      QStringLiteral("bench-ui"),
      QStringLiteral("Benchmark the workbench (frame time, throughput vs headless) and exit."));
  const QCommandLineOption rounds(
      QStringLiteral("rounds"),
      QStringLiteral("With --bench-ui: rounds of headless, traced and attached runs."),
      QStringLiteral("N"), QStringLiteral("3"));
  parser.addOptions({open, bench, events, json, screenshot, config, run, screenshotDir,
                     quitAfterSteps, benchUi, rounds});
  parser.addPositionalArgument(QStringLiteral("key=value|file"),
                               QStringLiteral("Config overrides, or more trace files."));
  parser.process(app);
  if (parser.isSet(bench)) {
    bool ok = false;
    const qulonglong n = parser.value(events).toULongLong(&ok);
    if (!ok || n < 1000) {
      std::fprintf(stderr, "parascope: --events must be an integer of at least 1000, got '%s'\n",
                   qPrintable(parser.value(events)));
      return 2;
    }
    parascope::ui::TimelineBenchOptions o;
    o.events = n;
    o.json = parser.isSet(json);
    return parascope::ui::runTimelineBench(o, std::cout);
  }
  if (parser.isSet(benchUi)) {
    parascope::ui::WorkbenchBenchOptions o;
    o.json = parser.isSet(json);
    bool ok = false;
    o.rounds = parser.value(rounds).toInt(&ok);
    if (!ok || o.rounds < 1) {
      std::fprintf(stderr, "parascope: --rounds must be a positive integer, got '%s'\n",
                   qPrintable(parser.value(rounds)));
      return 2;
    }
    try {
      o.document = parascope::readJsonFile(parser.isSet(config) ? parser.value(config).toStdString()
                                                                : defaultConfigPath());
      for (const QString& arg : parser.positionalArguments()) {
        parascope::applyOverride(o.document, arg.toStdString());
      }
      return parascope::ui::runWorkbenchBench(o, std::cout);
    } catch (const parascope::UserError& e) {
      std::fprintf(stderr, "parascope: %s\n", e.what());
      return 2;
    }
  }
  if (parser.isSet(screenshot))
    return timelineOnly(parser.values(open) + parser.positionalArguments(),
                        parser.value(screenshot));

  // The workbench. Positional arguments are key=value overrides, or more trace files.
  nlohmann::json document;
  QStringList traces = parser.values(open);
  try {
    if (parser.isSet(config)) {
      document = parascope::readJsonFile(parser.value(config).toStdString());
    } else {
      document = parascope::ui::WorkbenchWindow::lastDocument();
      if (document.is_null()) document = parascope::readJsonFile(defaultConfigPath());
    }
    for (const QString& arg : parser.positionalArguments()) {
      if (arg.contains(QLatin1Char('='))) {
        parascope::applyOverride(document, arg.toStdString());
      } else {
        traces << arg;
      }
    }
  } catch (const parascope::UserError& e) {
    std::fprintf(stderr, "parascope: %s\n", e.what());
    return 2;
  }
  int quitAfter = 0;
  if (parser.isSet(screenshotDir)) {
    bool ok = false;
    quitAfter = parser.value(quitAfterSteps).toInt(&ok);
    if (!ok || quitAfter < 1) {
      std::fprintf(stderr, "parascope: --quit-after-steps must be an integer >= 1, got '%s'\n",
                   qPrintable(parser.value(quitAfterSteps)));
      return 2;
    }
  }
  parascope::ui::WorkbenchWindow window;
  window.restoreLayout();
  window.setDocument(document);
  if (!traces.isEmpty()) window.showTraces(traces);
  if (parser.isSet(screenshotDir)) {
    window.resize(1600, 1000);
    watchForScreenshots(window, parser.value(screenshotDir), quitAfter);
  }
  window.show();
  if (parser.isSet(run) || parser.isSet(screenshotDir)) {
    if (!window.panel()->config()) {
      std::fprintf(stderr, "parascope: %s\n", qPrintable(window.panel()->message()));
      return 2;
    }
    QTimer::singleShot(0, &window, &parascope::ui::WorkbenchWindow::start);
  }
  return QApplication::exec();
}
