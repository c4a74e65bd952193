// Time <-> pixel mapping and level of detail for the timeline. A view of W pixel columns turns
// one nesting level into draw items: spans at least a pixel wide are drawn as themselves; runs
// of narrower spans in touching columns become one merged block that counts them (Tracy's
// way). Every span in the visible range lands in exactly one item, a lone 1-ns span included,
// and the work is O(columns x log events), not O(events). Plain C++, no Qt.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/common/checked_math.h"
#include "profiler/timeline/timeline_index.h"

namespace parascope::profiler {

// A time in ns from a double, clamped to the int64 range: a view of a trace spanning more than
// 2^63 ns reaches past it.
inline std::int64_t clampedTime(double ns) {
  constexpr double kLimit = 9223372036854774784.0;  // the largest double below 2^63
  return std::llround(std::clamp(ns, -kLimit, kLimit));
}

// Times are any int64 the importer accepts, so distances between them are taken as doubles
// (differenceAsDouble), never as an int64 difference that could overflow.
struct TimeAxis {
  std::int64_t startNs = 0;  // time at x = 0
  double nsPerPx = 1.0;      // > 0

  double x(std::int64_t t) const { return differenceAsDouble(t, startNs) / nsPerPx; }
  std::int64_t time(double px) const {
    const double offset = px * nsPerPx;
    // Exact in integers wherever it can be (a deep zoom into a trace of epoch timestamps).
    if (std::fabs(offset) < 4e18) return saturatingAdd(startNs, std::llround(offset));
    return clampedTime(static_cast<double>(startNs) + offset);
  }
  // The pixel column holding time t (may be negative or past the width; clamped far outside
  // it so that the conversion cannot overflow when zoomed deep into a long trace).
  std::int64_t column(std::int64_t t) const {
    const double c = std::floor(differenceAsDouble(t, startNs) / nsPerPx);
    return static_cast<std::int64_t>(std::clamp(c, -1e15, 1e15));
  }
  std::int64_t endNs(int widthPx) const { return time(widthPx); }
  // Keeps the time under pixel `px` where it is; factor < 1 zooms in.
  void zoomAt(double px, double factor);
  void fit(std::int64_t fromNs, std::int64_t toNs, int widthPx);
};

struct DrawItem {
  std::int32_t x0 = 0, x1 = 0;  // pixel columns [x0, x1), x1 > x0
  std::uint32_t first = 0;      // index of the first span in the level
  std::uint32_t count = 0;      // spans it stands for
  bool merged = false;          // a block of spans narrower than a pixel
};

// Spans of `level` with end >= axis.startNs and start < the view's end: [first, last).
std::pair<std::uint32_t, std::uint32_t> visibleRange(const std::vector<SpanRec>& level,
                                                     const TimeAxis& axis, int widthPx);
void buildLevelDrawList(const std::vector<SpanRec>& level, const TimeAxis& axis, int widthPx,
                        std::vector<DrawItem>& out);
// The same items, found faster through the level's Lane::blocks.
void buildLevelDrawList(const std::vector<SpanRec>& level, const std::vector<SpanBlock>& blocks,
                        const TimeAxis& axis, int widthPx, std::vector<DrawItem>& out);

// Instants: at most one mark per column, counting the instants in it.
void buildInstantDrawList(const std::vector<SpanRec>& instants, const TimeAxis& axis, int widthPx,
                          std::vector<DrawItem>& out);

// A counter as a step line: the value in force at the end of each column that has points
// (or carries one), y from the track's min..max. Per column: {x, value}.
struct CounterSample {
  std::int32_t x = 0;
  std::int64_t value = 0;
};
void sampleCounter(const std::vector<CounterPoint>& points, const TimeAxis& axis, int widthPx,
                   std::vector<CounterSample>& out);
// Where `value` sits on its track's scale, 0 (the row's floor) to 1 (its top). The scale runs
// from min(minValue, 0) to max(maxValue, 0): a track that stays positive rises from the floor,
// and negative values (which foreign counters may hold) lie below a zero line. Any int64 values.
double counterHeight(std::int64_t value, std::int64_t minValue, std::int64_t maxValue);

// A counter's value as the views write it: memory in binary units (formatBytes), else the number.
std::string formatCounterValue(Category category, std::int64_t value);

// Ruler ticks: a step of 1, 2 or 5 times a power of ten ns with labels in ns, us, ms or s.
struct Tick {
  double x = 0;
  std::string label;
};
// Labels are times since originNs (the trace's start).
std::vector<Tick> rulerTicks(const TimeAxis& axis, std::int64_t originNs, int widthPx,
                             int minSpacingPx);
std::string formatDuration(std::int64_t ns);

}  // namespace parascope::profiler
