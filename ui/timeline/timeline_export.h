// Exports from the timeline: a time range of the trace as Chrome trace JSON (".gz": gzip) that
// re-imports to the same events, the current view as PNG or SVG, selection statistics as CSV.
// Each throws UserError naming the file when it cannot be written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/timeline/selection_stats.h"
#include "profiler/timeline/timeline_index.h"

namespace parascope::ui {

class TimelineView;

// Events overlapping [fromNs, toNs] (every event for the full range).
void exportTraceRange(const profiler::TimelineIndex& index, std::int64_t fromNs, std::int64_t toNs,
                      const std::string& path);
void exportViewPng(const TimelineView& view, const std::string& path);
void exportViewSvg(const TimelineView& view, const std::string& path);
void exportStatsCsv(const std::vector<profiler::NameStats>& stats, const std::string& path);

}  // namespace parascope::ui
