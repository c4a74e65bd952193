// The profiler's analyses of a trace, computed together off the GUI thread for the workbench's
// views: the same functions `parascope-cli analyze` prints (profiler/analysis/), so a view and
// the CLI show the same numbers for the same trace. Plain data; no Qt.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/analysis/analysis_table.h"
#include "profiler/analysis/breakdown.h"
#include "profiler/analysis/bubbles.h"
#include "profiler/analysis/comm_volume.h"
#include "profiler/analysis/memory_timeline.h"
#include "profiler/trace_data.h"

namespace parascope::profiler {

struct TraceAnalysis {
  std::vector<std::string> files;  // where the trace came from; empty for a run in memory
  // Kept for the views (filtering the communication matrix by operation, the pipeline's spans)
  // and shared with the workbench's diffs, which then read no file.
  std::shared_ptr<const profiler::TraceData> trace = std::make_shared<const profiler::TraceData>();
  std::vector<profiler::StepBreakdown> breakdown;
  profiler::CommVolume comm;
  std::vector<profiler::MemorySeries> memory;
  std::vector<profiler::StageBubble> bubbles;
  // Every table of profiler::analysisTables(), in its order, as `analyze --json` prints it.
  std::vector<std::vector<nlohmann::json>> tables;
};

// Runs every analysis of a trace already in memory (a run that just ended), read from `files`.
std::shared_ptr<const TraceAnalysis> analyzeTrace(std::shared_ptr<const profiler::TraceData> trace,
                                                  std::vector<std::string> files);
// Reads the traces (one per rank or merged) and runs every analysis; throws what the importer
// throws for a file it cannot read.
std::shared_ptr<const TraceAnalysis> analyzeTraces(const std::vector<std::string>& files);

// The communication matrix and totals of one operation (its events' name), or of all ("").
profiler::CommVolume commVolumeOf(const profiler::TraceData& trace, const std::string& op);

}  // namespace parascope::profiler
