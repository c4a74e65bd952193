// The GUI's modes, one file each, as parascope-cli's commands: the workbench (workbench_mode.cpp),
// the timeline window alone on trace files (timeline_mode.cpp) and the two benchmarks
// (bench_modes.cpp). main.cpp parses the command line once and runs one of them; each returns
// the exit status (2 for a usage error, named in one line).
#pragma once

#include <QCommandLineOption>
#include <QCommandLineParser>
#include <string>

namespace parascope::gui {

struct GuiOptions {
  QCommandLineOption open{
      QStringLiteral("open"),
      QStringLiteral("Open a trace (its per-rank files joined by commas); each --open is a tab "
                     "of its own and a source of Compare's diff."),
      QStringLiteral("file[,file...]")};
  QCommandLineOption benchTimeline{QStringLiteral("bench-timeline"),
                                   QStringLiteral("Benchmark the timeline and exit.")};
  QCommandLineOption events{QStringLiteral("events"),
                            QStringLiteral("Events in the benchmark's trace."), QStringLiteral("N"),
                            QStringLiteral("10000000")};
  QCommandLineOption json{QStringLiteral("json"), QStringLiteral("Benchmark output as JSON.")};
  QCommandLineOption screenshot{
      QStringLiteral("screenshot"),
      QStringLiteral("Save the window as a PNG once the traces are shown, then quit."),
      QStringLiteral("file.png")};
  QCommandLineOption config{QStringLiteral("config"),
                            QStringLiteral("The session's config (JSON)."),
                            QStringLiteral("file.json")};
  QCommandLineOption run{QStringLiteral("run"), QStringLiteral("Start the session.")};
  QCommandLineOption screenshotDir{
      QStringLiteral("screenshot-dir"),
      QStringLiteral("Run (or, with --open and no --run, show the traces and compare the last "
                     "two), save the window and each view as PNGs in DIR, then quit."),
      QStringLiteral("dir")};
  QCommandLineOption quitAfterSteps{
      QStringLiteral("quit-after-steps"),
      QStringLiteral("With --screenshot-dir: steps to run before the screenshots."),
      QStringLiteral("N"), QStringLiteral("5")};
  QCommandLineOption switches{
      QStringLiteral("switch"),
      QStringLiteral("With --run or --screenshot-dir: after STEP steps, switch the running "
                     "strategy live, as Apply does (repeatable; as train --switch)."),
      QStringLiteral("STEP:key=value,...")};
  QCommandLineOption benchUi{
      QStringLiteral("bench-ui"),
      QStringLiteral("Benchmark the workbench (frame time, throughput vs headless) and exit.")};
  QCommandLineOption rounds{
      QStringLiteral("rounds"),
      QStringLiteral("With --bench-ui: rounds of headless, traced and attached runs."),
      QStringLiteral("N"), QStringLiteral("3")};

  void addTo(QCommandLineParser& parser) const {
    parser.addOptions({open, benchTimeline, events, json, screenshot, config, run, screenshotDir,
                       quitAfterSteps, switches, benchUi, rounds});
    parser.addPositionalArgument(QStringLiteral("key=value|file"),
                                 QStringLiteral("Config overrides, or more trace files."));
  }
};

// The bundled default session: resources/configs/default.json from the working directory, else
// from the source tree.
std::string defaultConfigPath();

int runTimelineBench(const QCommandLineParser& parser, const GuiOptions& o);
int runWorkbenchBench(const QCommandLineParser& parser, const GuiOptions& o);
int runTimelineOnly(const QCommandLineParser& parser, const GuiOptions& o);
int runWorkbench(const QCommandLineParser& parser, const GuiOptions& o);

}  // namespace parascope::gui
