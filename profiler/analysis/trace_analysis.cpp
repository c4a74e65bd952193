#include "profiler/analysis/trace_analysis.h"

#include <cstring>

#include "profiler/io/chrome_import.h"

namespace parascope::profiler {

std::shared_ptr<const TraceAnalysis> analyzeTrace(std::shared_ptr<const profiler::TraceData> trace,
                                                  std::vector<std::string> files) {
  auto a = std::make_shared<TraceAnalysis>();
  a->files = std::move(files);
  a->trace = std::move(trace);
  const profiler::TraceData& t = *a->trace;
  a->breakdown = profiler::computeBreakdown(t);
  a->comm = profiler::computeCommVolume(t);
  a->memory = profiler::computeMemoryTimeline(t);
  a->bubbles = profiler::computeBubbles(t);
  for (const profiler::AnalysisTable& table : profiler::analysisTables()) {
    a->tables.push_back(table.rows(t));
  }
  return a;
}

std::shared_ptr<const TraceAnalysis> analyzeTraces(const std::vector<std::string>& files) {
  return analyzeTrace(
      std::make_shared<const profiler::TraceData>(profiler::importChromeTraces(files)), files);
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
