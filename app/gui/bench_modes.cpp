// parascope --bench-timeline [--events N] [--json] and --bench-ui [--json] [--rounds R]
// [--config F] [key=value ...]: the timeline's and the workbench's benchmarks.
#include <QDir>

#include <cstdio>
#include <iostream>

#include "app/gui/modes.h"
#include "core/common/error.h"
#include "core/common/printable.h"
#include "core/config/config.h"
#include "core/plan/memory_estimate.h"
#include "ui/timeline/timeline_bench.h"
#include "ui/workbench/workbench_bench.h"

namespace parascope::gui {

int runTimelineBench(const QCommandLineParser& parser, const GuiOptions& o) {
  bool ok = false;
  const qulonglong n = parser.value(o.events).toULongLong(&ok);
  if (!ok || n < 1000 || n > 100'000'000) {
    std::fprintf(stderr, "parascope: --events must be an integer in [1000, 100000000], got '%s'\n",
                 printableText(parser.value(o.events).toStdString()).c_str());
    return 2;
  }
  // Before any work: the trace, its index and its re-import at their peak (571 bytes per event
  // measured, with ~82 MiB for the rest) and its file in the temporary directory (121 bytes per
  // event).
  try {
    const auto events = static_cast<double>(n);
    checkCountFits("--events", events, 600, 128.0 * (1 << 20), "memory", availableMemoryBytes());
    const std::string temp = QDir::tempPath().toStdString();
    checkCountFits("--events", events, 128, 0, "disk space in " + temp, availableDiskBytes(temp));
  } catch (const UserError& e) {
    std::fprintf(stderr, "parascope: %s\n", printableText(e.what()).c_str());
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
