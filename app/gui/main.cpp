// parascope: the GUI. `parascope [--open] FILE...` opens traces in the timeline;
// `parascope --bench-timeline [--events N] [--json]` runs the timeline benchmark (works under
// QT_QPA_PLATFORM=offscreen). Exit status 2 on a usage error.
#include <QApplication>
#include <QCommandLineParser>
#include <cstdio>
#include <iostream>

#include "ui/timeline_bench.h"
#include "ui/timeline_window.h"

int main(int argc, char** argv) {
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
  parser.addOptions({open, bench, events, json});
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
  window.openFiles(parser.values(open) + parser.positionalArguments());
  window.show();
  return QApplication::exec();
}
