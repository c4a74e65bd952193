#include "profiler/analysis/trace_analysis.h"

#include <cstring>

#include "profiler/io/chrome_import.h"

namespace parascope::profiler {

std::shared_ptr<const TraceAnalysis> analyzeTraces(const std::vector<std::string>& files) {
  auto a = std::make_shared<TraceAnalysis>();
  a->files = files;
  a->trace = profiler::importChromeTraces(files);
  a->breakdown = profiler::computeBreakdown(a->trace);
  a->comm = profiler::computeCommVolume(a->trace);
  a->memory = profiler::computeMemoryTimeline(a->trace);
  a->bubbles = profiler::computeBubbles(a->trace);
  for (const profiler::AnalysisTable& table : profiler::analysisTables()) {
    a->tables.push_back(table.rows(a->trace));
  }
  return a;
}

profiler::CommVolume commVolumeOf(const profiler::TraceData& trace, const std::string& op) {
  if (op.empty()) return profiler::computeCommVolume(trace);
  // Only the events' copies: their names stay owned by `trace`, which outlives this call.
  profiler::TraceData only;
  only.worldSize = trace.worldSize;
  for (const profiler::Event& e : trace.events) {
    if (e.category == profiler::Category::Communication && op == e.name) only.events.push_back(e);
  }
  return profiler::computeCommVolume(only);
}

}  // namespace parascope::profiler
