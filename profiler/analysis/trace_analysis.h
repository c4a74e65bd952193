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
  std::vector<std::string> files;
  profiler::TraceData trace;  // kept for filtering the communication matrix by operation
  std::vector<profiler::StepBreakdown> breakdown;
  profiler::CommVolume comm;
  std::vector<profiler::MemorySeries> memory;
  std::vector<profiler::StageBubble> bubbles;
  // Every table of profiler::analysisTables(), in its order, as `analyze --json` prints it.
  std::vector<std::vector<nlohmann::json>> tables;
};

// Reads the traces (one per rank or merged) and runs every analysis; throws what the importer
// throws for a file it cannot read.
std::shared_ptr<const TraceAnalysis> analyzeTraces(const std::vector<std::string>& files);

// The communication matrix and totals of one operation (its events' name), or of all ("").
profiler::CommVolume commVolumeOf(const profiler::TraceData& trace, const std::string& op);

}  // namespace parascope::profiler
