// Level of detail: see timeline_lod.h. Columns come from one function (TimeAxis::column) so
// the binary searches and the merge decisions agree on which column a time falls in.
#include "profiler/timeline/timeline_lod.h"

#include <algorithm>
#include <cstdio>

#include "core/plan/memory_estimate.h"

namespace parascope::profiler {

void TimeAxis::zoomAt(double px, double factor) {
  const double anchor = static_cast<double>(startNs) + px * nsPerPx;
  nsPerPx = std::clamp(nsPerPx * factor, 1e-3, 1e15);
  startNs = clampedTime(anchor - px * nsPerPx);
}

void TimeAxis::fit(std::int64_t fromNs, std::int64_t toNs, int widthPx) {
  nsPerPx = std::max(differenceAsDouble(toNs, fromNs), 1.0) / std::max(widthPx, 1);
  startNs = fromNs;
}

std::pair<std::uint32_t, std::uint32_t> visibleRange(const std::vector<SpanRec>& level,
                                                     const TimeAxis& axis, int widthPx) {
  const std::int64_t t0 = axis.startNs;
  const std::int64_t t1 = axis.endNs(widthPx);
  // Within a level spans do not overlap, so ends are sorted like starts.
  auto first = std::lower_bound(level.begin(), level.end(), t0,
                                [](const SpanRec& s, std::int64_t t) { return s.endNs < t; });
  auto last = std::lower_bound(first, level.end(), t1,
                               [](const SpanRec& s, std::int64_t t) { return s.startNs < t; });
  return {static_cast<std::uint32_t>(first - level.begin()),
          static_cast<std::uint32_t>(last - level.begin())};
}

namespace {

std::int32_t clampColumn(std::int64_t c, int widthPx) {
  return static_cast<std::int32_t>(std::clamp<std::int64_t>(c, 0, widthPx));
}

bool tiny(const SpanRec& s, const TimeAxis& axis) {
  return static_cast<double>(s.endNs - s.startNs) < axis.nsPerPx;
}

// The earliest time in column `c` or later, exactly as TimeAxis::column rounds.
// Column `c` starts past any event (column() clamps at 1e15): a search up to it takes everything.
bool pastAnyEvent(const TimeAxis& axis, std::int64_t c) {
  return std::ceil(static_cast<double>(c) * axis.nsPerPx) > 4e18 || c > 1'000'000'000'000'000;
}

std::int64_t columnStart(const TimeAxis& axis, std::int64_t c) {
  if (pastAnyEvent(axis, c)) return INT64_MAX;
  const double offset = std::ceil(static_cast<double>(c) * axis.nsPerPx);
  auto t = saturatingAdd(axis.startNs, static_cast<std::int64_t>(offset));
  while (t > INT64_MIN && axis.column(t - 1) >= c) --t;
  while (t < INT64_MAX && axis.column(t) < c) ++t;
  return t;
}

// The first element of the sorted range [first, last) for which before(x) is false, searched
// from `first` with doubling steps: the answer is usually near, so this costs O(log distance)
// rather than O(log n) (the next column's answer is a few spans on).
template <class It, class Before>
It gallop(It first, It last, Before before) {
  std::ptrdiff_t step = 1;
  while (step < last - first && before(first[step])) {
    first += step;
    step *= 2;
  }
  if (first == last || !before(*first)) return first;
  return std::partition_point(first + 1, first + std::min(step, last - first), before);
}

// The first index in [from, end) whose end lies past column `last`, comparing integer times
// against the next column's first nanosecond. Ends are sorted within a level, so whole blocks
// ending before that are stepped over first, then at most one block's spans are probed.
std::uint32_t pastColumn(const std::vector<SpanRec>& level, const std::vector<SpanBlock>& blocks,
                         std::uint32_t from, std::uint32_t end, std::int64_t last,
                         const TimeAxis& axis) {
  // A lone span's successor mostly ends in a later column already: one division, no search
  // (t >= columnStart(c) exactly when column(t) >= c).
  if (from < end && !pastAnyEvent(axis, last + 1) && axis.column(level[from].endNs) > last) {
    return from;
  }
  const std::int64_t next = columnStart(axis, last + 1);
  std::size_t lo = from;
  const std::size_t full = std::min<std::size_t>(blocks.size(), end / kBlockSpans);
  if (from / kBlockSpans < full) {
    const auto b = gallop(blocks.begin() + static_cast<std::ptrdiff_t>(from / kBlockSpans),
                          blocks.begin() + static_cast<std::ptrdiff_t>(full),
                          [next](const SpanBlock& k) { return k.lastEnd < next; });
    lo = std::max<std::size_t>(from, static_cast<std::size_t>(b - blocks.begin()) * kBlockSpans);
  }
  const auto base = level.begin();
  auto it = gallop(base + static_cast<std::ptrdiff_t>(lo), base + end,
                   [next](const SpanRec& s) { return s.endNs < next; });
  return static_cast<std::uint32_t>(it - base);
}

// From the block holding span `i`, the first block before `full` that may end a merged run:
// one with a span of a pixel or more, or a gap that could leave a column empty. A gap shorter
// than a pixel by this margin moves the column by at most one whatever the rounding of
// TimeAxis::column (its error is ~1e-13 of a column inside the view).
std::size_t firstBreakingBlock(const std::vector<SpanBlock>& blocks, std::uint32_t i,
                               std::size_t full, const TimeAxis& axis) {
  const double touching = axis.nsPerPx * (1 - 1e-9);
  std::size_t b = i / kBlockSpans;
  while (b < full && static_cast<double>(blocks[b].maxDuration) < axis.nsPerPx &&
         static_cast<double>(blocks[b].maxGap) < touching) {
    ++b;
  }
  return b;
}

// Consumes a run of sub-pixel spans starting at `i` whose columns touch; returns the index
// after the run and the last column it covers.
std::uint32_t mergeRun(const std::vector<SpanRec>& level, const std::vector<SpanBlock>& blocks,
                       std::uint32_t i, std::uint32_t end, const TimeAxis& axis,
                       std::int64_t* lastColumn) {
  const std::size_t full = std::min<std::size_t>(blocks.size(), end / kBlockSpans);
  std::int64_t last = axis.column(level[i].startNs);
  while (i < end && tiny(level[i], axis) && axis.column(level[i].startNs) <= last + 1) {
    last = std::max(last, axis.column(level[i].endNs));
    // Blocks whose spans are all sub-pixel and all touch join the run whole: only their last
    // end matters, the run's rightmost column.
    const std::size_t b = firstBreakingBlock(blocks, i, full, axis);
    if (b > i / kBlockSpans) {
      last = std::max(last, axis.column(blocks[b - 1].lastEnd));
      i = static_cast<std::uint32_t>(b * kBlockSpans);
      continue;
    }
    // Every later span ending in column `last` lies wholly inside it: sub-pixel too.
    i = pastColumn(level, blocks, i + 1, end, last, axis);
  }
  *lastColumn = last;
  return i;
}

}  // namespace

void buildLevelDrawList(const std::vector<SpanRec>& level, const TimeAxis& axis, int widthPx,
                        std::vector<DrawItem>& out) {
  buildLevelDrawList(level, {}, axis, widthPx, out);
}

void buildLevelDrawList(const std::vector<SpanRec>& level, const std::vector<SpanBlock>& blocks,
                        const TimeAxis& axis, int widthPx, std::vector<DrawItem>& out) {
  auto [i, end] = visibleRange(level, axis, widthPx);
  while (i < end) {
    const SpanRec& s = level[i];
    DrawItem item;
    item.first = i;
    if (!tiny(s, axis)) {
      item.x0 = clampColumn(axis.column(s.startNs), widthPx);
      item.x1 = clampColumn(axis.column(s.endNs), widthPx);
      item.count = 1;
      ++i;
    } else {
      std::int64_t lastColumn = 0;
      item.x0 = clampColumn(axis.column(s.startNs), widthPx);
      const std::uint32_t next = mergeRun(level, blocks, i, end, axis, &lastColumn);
      item.x1 = clampColumn(lastColumn + 1, widthPx);
      item.count = next - i;
      item.merged = true;
      i = next;
    }
    item.x0 = std::min(item.x0, widthPx - 1);
    item.x1 = std::max(item.x1, item.x0 + 1);
    out.push_back(item);
  }
}

void buildInstantDrawList(const std::vector<SpanRec>& instants, const TimeAxis& axis, int widthPx,
                          std::vector<DrawItem>& out) {
  auto [i, end] = visibleRange(instants, axis, widthPx);
  const auto base = instants.begin();
  while (i < end) {
    const std::int64_t c = axis.column(instants[i].startNs);
    auto next = std::upper_bound(base + i, base + end, c, [&](std::int64_t col, const SpanRec& s) {
      return col < axis.column(s.startNs);
    });
    const auto j = static_cast<std::uint32_t>(next - base);
    const std::int32_t x = std::min(clampColumn(c, widthPx), widthPx - 1);
    out.push_back({x, x + 1, i, j - i, j - i > 1});
    i = j;
  }
}

void sampleCounter(const std::vector<CounterPoint>& points, const TimeAxis& axis, int widthPx,
                   std::vector<CounterSample>& out) {
  if (points.empty()) return;
  auto byTime = [](const CounterPoint& p, std::int64_t t) { return p.timeNs < t; };
  auto it = std::lower_bound(points.begin(), points.end(), axis.startNs, byTime);
  if (it != points.begin()) out.push_back({0, std::prev(it)->value});
  while (it != points.end()) {
    const std::int64_t c = axis.column(it->timeNs);
    if (c >= widthPx) break;
    // The value in force at the column's end: the last point inside it. Sparse points mostly
    // have the next one in a later column already: then no search.
    auto next = std::next(it);
    if (next != points.end() && (pastAnyEvent(axis, c + 1) || axis.column(next->timeNs) <= c)) {
      const std::int64_t end = columnStart(axis, c + 1);
      next = gallop(next, points.end(), [end](const CounterPoint& p) { return p.timeNs < end; });
    }
    out.push_back({clampColumn(c, widthPx), std::prev(next)->value});
    it = next;
  }
}

double counterHeight(std::int64_t value, std::int64_t minValue, std::int64_t maxValue) {
  const std::int64_t lo = std::min<std::int64_t>(minValue, 0);
  const std::int64_t hi = std::max<std::int64_t>(maxValue, 0);
  if (hi == lo) return 0;
  return std::clamp(differenceAsDouble(value, lo) / differenceAsDouble(hi, lo), 0.0, 1.0);
}

std::string formatCounterValue(Category category, std::int64_t value) {
  if (category == Category::Memory) return formatBytes(static_cast<double>(value));
  return std::to_string(value);
}

std::string formatDuration(std::int64_t ns) {
  const double v = static_cast<double>(ns);
  const double a = std::fabs(v);
  char buf[48];
  if (a < 1e3)
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  else if (a < 1e6)
    std::snprintf(buf, sizeof buf, "%.4g us", v / 1e3);
  else if (a < 1e9)
    std::snprintf(buf, sizeof buf, "%.4g ms", v / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.4g s", v / 1e9);
  return buf;
}

std::vector<Tick> rulerTicks(const TimeAxis& axis, std::int64_t originNs, int widthPx,
                             int minSpacingPx) {
  const double minStep = axis.nsPerPx * minSpacingPx;
  double step = 1;
  for (double p = 1; step < minStep; p *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      step = m * p;
      if (step >= minStep) break;
    }
  }
  // Ticks stop where time does: the ruler of a trace reaching the int64 range ends there.
  const auto stepNs = static_cast<std::int64_t>(std::min(step, 5e18));
  std::vector<Tick> ticks;
  const std::int64_t rel = saturatingSub(axis.startNs, originNs);
  std::int64_t t = rel / stepNs * stepNs;
  if (t < rel && __builtin_add_overflow(t, stepNs, &t)) return ticks;
  for (;;) {
    std::int64_t at;
    if (__builtin_add_overflow(t, originNs, &at) || axis.x(at) >= widthPx) break;
    ticks.push_back({axis.x(at), formatDuration(t)});
    if (__builtin_add_overflow(t, stepNs, &t)) break;
  }
  return ticks;
}

}  // namespace parascope::profiler
