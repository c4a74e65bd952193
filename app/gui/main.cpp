// parascope: the GUI. Parses the command line and runs one mode (app/gui/modes.h):
//   parascope [--config F.json] [key=value ...] [--run] [--open trace.json ...]
//             [--screenshot-dir DIR --quit-after-steps N]        the workbench
//   parascope --open FILE... --screenshot FILE.png               traces alone in the timeline
//   parascope --bench-timeline [--events N] [--json]             the timeline benchmark
//   parascope --bench-ui [--json] [--rounds R] [--config F] [key=value ...]
// All work under QT_QPA_PLATFORM=offscreen. Exit status 2 on a usage error.
#include <QApplication>
#include <cstdio>
#include <cstring>

#include "app/gui/modes.h"
#include "core/common/malloc_arena.h"

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
  parascope::shareMallocArenas();
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
  const parascope::gui::GuiOptions options;
  options.addTo(parser);
  parser.process(app);
  using namespace parascope::gui;
  if (parser.isSet(options.benchTimeline)) return runTimelineBench(parser, options);
  if (parser.isSet(options.benchUi)) return runWorkbenchBench(parser, options);
  if (parser.isSet(options.screenshot)) return runTimelineOnly(parser, options);
  return runWorkbench(parser, options);
}
