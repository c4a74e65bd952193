// parascope-cli analyze TRACE...: loads ParaScope or PyTorch profiler traces (one per rank or
// merged) and prints the profiler's analyses: time breakdown per rank and step, pipeline
// bubbles, the communication matrix and per-operation totals, memory peaks and stragglers.
// The analyses and their text are the profiler's table (profiler/analysis/analysis_table.h),
// which the workbench's Analyses view shows too; this file only loads and prints.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "core/common/stop_signal.h"
#include "profiler/analysis/analysis_table.h"
#include "profiler/io/chrome_import.h"

namespace parascope::cli {

namespace {

using namespace parascope::profiler;

struct AnalyzeOptions {
  std::vector<std::string> traces;
  bool json = false;
};

void printJson(const TraceData& t, const AnalyzeOptions& o) {
  auto line = [](const nlohmann::json& j) { std::printf("%s\n", j.dump().c_str()); };
  line({{"section", "trace"},
        {"files", o.traces.size()},
        {"ranks", t.ranks().size()},
        {"world_size", t.worldSize},
        {"events", t.events.size()},
        {"clock_residual_ns", t.clockResidualNs}});
  for (const AnalysisTable& table : analysisTables()) {
    throwIfStopRequested();  // between analyses: a large trace's each takes seconds
    for (nlohmann::json& row : table.rows(t)) {
      row["section"] = std::string(table.section);
      line(row);
    }
  }
}

void printText(const TraceData& t, const AnalyzeOptions& o) {
  std::printf("%zu file(s), %zu rank(s) of world size %d, %zu events", o.traces.size(),
              t.ranks().size(), t.worldSize, t.events.size());
  if (t.clockResidualNs >= 0)
    std::printf(", clock residual %lld ns", static_cast<long long>(t.clockResidualNs));
  std::printf("\n");
  for (const AnalysisTable& table : analysisTables()) {
    throwIfStopRequested();  // between analyses: a large trace's each takes seconds
    table.printText(t, table.rows(t));
  }
}

}  // namespace

void registerAnalyzeCommand(CLI::App& app) {
  auto o = std::make_shared<AnalyzeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "analyze", "Breakdown, bubbles, communication, memory peaks and stragglers of traces");
  cmd->add_option(
         "traces", o->traces,
         "ParaScope or PyTorch profiler traces (.json or .json.gz), one per rank or merged")
      ->required();
  cmd->add_flag("--json", o->json, "Print one JSON object per line");
  cmd->callback([o] {
    const TraceData t = importChromeTraces(o->traces);
    throwIfStopRequested();
    if (o->json) {
      printJson(t, *o);
    } else {
      printText(t, *o);
    }
  });
}

}  // namespace parascope::cli
