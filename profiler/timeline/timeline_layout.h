// Vertical layout of the timeline: a header row per rank (process), then for each of its lanes
// one row per nesting level, then its counter tracks. Ranks fold to their header; they are
// ordered by rank or by pipeline stage, a predicted rank right after the measured rank it
// predicts. Plain C++, no Qt.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "profiler/timeline/timeline_index.h"

namespace parascope::profiler {

// A prediction shown beside a measured trace (timeline_prediction.h) keeps its ranks apart from
// the measured ones: predicted rank N is kPredictedRankBase + N. The base lies above any rank a
// trace names (ours count from 0; imported ones are process ids, below 2^22 on Linux).
inline constexpr std::int32_t kPredictedRankBase = 1 << 24;
inline bool isPredictedRank(std::int32_t rank) {
  return rank >= kPredictedRankBase;
}
// The measured rank a rank stands beside: itself, or the one a predicted rank predicts.
inline std::int32_t measuredRankOf(std::int32_t rank) {
  return isPredictedRank(rank) ? rank - kPredictedRankBase : rank;
}

struct TimelineRow {
  enum class Kind { RankHeader, Level, Counter };
  Kind kind = Kind::Level;
  std::int32_t rank = 0;
  std::uint32_t lane = 0;     // Level: index into TimelineIndex::lanes()
  std::uint32_t depth = 0;    // Level: nesting level
  std::uint32_t counter = 0;  // Counter: index into TimelineIndex::counters()
  std::int32_t stage = -1;    // RankHeader: the rank's pipeline stage, -1 if none
  int y = 0;                  // pixels from the top of the content
  int height = 0;
};

struct LayoutOptions {
  std::set<std::int32_t> collapsed;  // ranks shown as their header only
  bool byStage = false;              // order ranks by pipeline stage, then rank
  int headerHeight = 20, levelHeight = 18, counterHeight = 36;
};

std::vector<TimelineRow> layoutRows(const TimelineIndex& index, const LayoutOptions& options);
// The pipeline stage a rank runs (from its first outermost span that names one, as pipeline
// instructions are), -1 if none.
std::int32_t rankStage(const TimelineIndex& index, std::int32_t rank);
// Index of the row at content y, or -1.
int rowAt(const std::vector<TimelineRow>& rows, int y);

}  // namespace parascope::profiler
