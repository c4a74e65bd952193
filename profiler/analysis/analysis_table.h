// The trace analyses, listed once. Each is a table: rows of named fields, units in the names
// (`bubble_ns`, `peak_bytes`), from the plain functions beside this file. `parascope-cli analyze`
// prints every table (as text, or one JSON object per row with its "section"), and the
// workbench's Analyses view shows any of them, so an analysis reaches both front ends at once.
// A new analysis: its file pair here and one entry in analysisTables().
#pragma once

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/trace_data.h"

namespace parascope::profiler {

struct AnalysisTable {
  std::string_view section;  // "breakdown": the rows' JSON "section" and the table's key
  std::string_view title;    // "Time per rank and step": a heading for people
  std::vector<nlohmann::json> (*rows)(const TraceData& trace);
  // The table as `analyze` prints it (heading included); `rows` are rows(trace).
  void (*printText)(const TraceData& trace, const std::vector<nlohmann::json>& rows);
};

// In the order `analyze` prints them.
const std::vector<AnalysisTable>& analysisTables();

}  // namespace parascope::profiler
