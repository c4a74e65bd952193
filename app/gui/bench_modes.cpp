// parascope --bench-timeline [--events N] [--json] and --bench-ui [--json] [--rounds R]
// [--config F] [key=value ...]: the timeline's and the workbench's benchmarks.
#include <cstdio>
#include <iostream>

#include "app/gui/modes.h"
#include "core/common/error.h"
#include "core/common/printable.h"
#include "core/config/config.h"
#include "ui/timeline_bench.h"
#include "ui/workbench_bench.h"

namespace parascope::gui {

int runTimelineBench(const QCommandLineParser& parser, const GuiOptions& o) {
  bool ok = false;
  const qulonglong n = parser.value(o.events).toULongLong(&ok);
  if (!ok || n < 1000) {
    std::fprintf(stderr, "parascope: --events must be an integer of at least 1000, got '%s'\n",
                 qPrintable(parser.value(o.events)));
    return 2;
  }
  ui::TimelineBenchOptions bench;
  bench.events = n;
  bench.json = parser.isSet(o.json);
  return ui::runTimelineBench(bench, std::cout);
}

int runWorkbenchBench(const QCommandLineParser& parser, const GuiOptions& o) {
  ui::WorkbenchBenchOptions bench;
  bench.json = parser.isSet(o.json);
  bool ok = false;
  bench.rounds = parser.value(o.rounds).toInt(&ok);
  if (!ok || bench.rounds < 1) {
    std::fprintf(stderr, "parascope: --rounds must be a positive integer, got '%s'\n",
                 qPrintable(parser.value(o.rounds)));
    return 2;
  }
  try {
    bench.document = readJsonFile(parser.isSet(o.config) ? parser.value(o.config).toStdString()
                                                         : defaultConfigPath());
    for (const QString& arg : parser.positionalArguments())
      applyOverride(bench.document, arg.toStdString());
    return ui::runWorkbenchBench(bench, std::cout);
  } catch (const UserError& e) {
    std::fprintf(stderr, "parascope: %s\n", printableText(e.what()).c_str());
    return 2;
  }
}

}  // namespace parascope::gui
