// parascope: the GUI. `parascope [--open] FILE...` opens traces in the timeline (with
// `--screenshot FILE.png` it saves the window once they are shown, or their error, and quits);
// `parascope --bench-timeline [--events N] [--json]` runs the timeline benchmark. Both work under
// QT_QPA_PLATFORM=offscreen. Exit status 2 on a usage error.
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "ui/timeline_bench.h"
#include "ui/timeline_window.h"

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

}  // namespace

int main(int argc, char** argv) {
  // Without one, Qt's default platform aborts with several lines about plugins; say what is
  // missing in one line instead.
  if (!hasPlatform(argc, argv)) {
    std::fprintf(stderr,
                 "parascope: no display (DISPLAY and WAYLAND_DISPLAY are unset); for "
                 "--bench-timeline or --screenshot set QT_QPA_PLATFORM=offscreen\n");
    return 2;
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("parascope"));
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
  parser.addOptions({open, bench, events, json, screenshot});
  parser.addPositionalArgument(QStringLiteral("files"), QStringLiteral("More trace files."));
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
  parascope::ui::TimelineWindow window;
  if (parser.isSet(screenshot)) {
    window.resize(1600, 900);
    // Once the load has ended either way, give the view one turn of the event loop to paint.
    const QString path = parser.value(screenshot);
    auto save = [&window, path] {
      QTimer::singleShot(100, &window, [&window, path] {
        const bool saved = window.grab().save(path, "PNG");
        if (!saved) std::fprintf(stderr, "parascope: cannot write '%s'\n", qPrintable(path));
        QApplication::exit(saved ? 0 : 1);
      });
    };
    QObject::connect(window.loader(), &parascope::ui::TraceLoader::loaded, &window, save);
    QObject::connect(window.loader(), &parascope::ui::TraceLoader::failed, &window, save);
  }
  window.openFiles(parser.values(open) + parser.positionalArguments());
  window.show();
  return QApplication::exec();
}
