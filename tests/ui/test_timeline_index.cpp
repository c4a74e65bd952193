// The timeline's data side without a window: level of detail is exact at every zoom (each
// visible span drawn or counted in exactly one item), a 1-ns span among 10^6 stays visible,
// live appends equal a whole build, search finds exactly the matching spans, selection
// statistics equal analyze's per-operation totals and a brute-force sum, and an exported range
// re-imports to the same events.
#include <QTemporaryDir>
#include <QtTest>

#include <map>
#include <random>
#include <regex>
#include <string>
#include <tuple>

#include "profiler/analysis/comm_volume.h"
#include "profiler/io/chrome_import.h"
#include "profiler/synthetic_trace.h"
#include "profiler/timeline/flame_graph.h"
#include "profiler/timeline/selection_stats.h"
#include "profiler/timeline/timeline_index.h"
#include "profiler/timeline/timeline_lod.h"
#include "profiler/timeline/timeline_search.h"
#include "tests/ui/nested_steps.h"
#include "ui/timeline/timeline_export.h"

namespace profiler = parascope::profiler;
using namespace parascope::ui;
using parascope::profiler::SyntheticOptions;
using parascope::profiler::syntheticTrainingTrace;
using parascope::profiler::TraceData;
namespace flag = parascope::trace::flag;

namespace {

const char* const kNames[] = {"gemm", "gemm_bwd", "all_reduce", "send", "recv", "F", "B", "W"};

// Random nested spans on a few ranks and lanes: sizes from 1 ns to 1 ms, partial overlaps too.
profiler::TraceData randomTrace(std::uint64_t seed, int perLane) {
  std::mt19937_64 rng(seed);
  profiler::TraceData t;
  auto uni = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int rank = 0; rank < 3; ++rank) {
    for (int lane = 0; lane < 3; ++lane) {
      std::int64_t time = uni(0, 1000);
      for (int i = 0; i < perLane; ++i) {
        profiler::Event e;
        e.rank = rank;
        e.lane = lane;
        e.name = t.strings.intern(kNames[uni(0, 7)]);
        e.category = lane == 1 ? profiler::Category::Communication : profiler::Category::Compute;
        e.startNs = time;
        const int scale = static_cast<int>(uni(0, 6));
        e.endNs = time + uni(1, 10) * static_cast<std::int64_t>(std::pow(10, scale));
        e.bytes = lane == 1 ? uni(1, 1 << 20) : 0;
        e.peer = lane == 1 ? static_cast<std::int32_t>(uni(0, 2)) : -1;
        e.step = static_cast<std::int32_t>(i / 50);
        if (uni(0, 20) == 0) {
          e.kind = profiler::EventKind::Instant;
          e.endNs = e.startNs;
        }
        if (uni(0, 30) == 0) {
          e.kind = profiler::EventKind::Counter;
          e.category = profiler::Category::Memory;
          e.endNs = e.startNs;
          e.name = t.strings.intern("memory");
        }
        t.events.push_back(e);
        time += uni(0, 3) == 0 ? uni(1, 200000) : uni(0, 50);
      }
    }
  }
  t.sortByTime();
  return t;
}

// The spans of a level a view shows, by brute force.
std::pair<std::uint32_t, std::uint32_t> bruteVisible(const std::vector<profiler::SpanRec>& level,
                                                     std::int64_t t0, std::int64_t t1) {
  std::uint32_t first = UINT32_MAX, last = 0;
  for (std::uint32_t i = 0; i < level.size(); ++i) {
    if (level[i].endNs >= t0 && level[i].startNs < t1) {
      first = std::min(first, i);
      last = i + 1;
    }
  }
  return first == UINT32_MAX ? std::pair<std::uint32_t, std::uint32_t>{0, 0}
                             : std::pair{first, last};
}

void checkLevel(const profiler::Lane& lane, std::size_t depth, const profiler::TimeAxis& axis,
                int width) {
  const std::vector<profiler::SpanRec>& level = lane.levels[depth];
  const std::vector<profiler::SpanBlock>& blocks = lane.blocks[depth];
  QCOMPARE(blocks.size(), level.size() / profiler::kBlockSpans);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    profiler::SpanBlock expected;
    for (std::size_t i = b * profiler::kBlockSpans; i < (b + 1) * profiler::kBlockSpans; ++i) {
      expected.lastEnd = level[i].endNs;
      expected.maxDuration = std::max(expected.maxDuration, level[i].endNs - level[i].startNs);
      if (i > 0) expected.maxGap = std::max(expected.maxGap, level[i].startNs - level[i - 1].endNs);
    }
    QVERIFY(blocks[b] == expected);
  }
  std::vector<profiler::DrawItem> items, viaBlocks;
  profiler::buildLevelDrawList(level, axis, width, items);
  // The block summaries only speed level of detail up: the same items, field for field.
  profiler::buildLevelDrawList(level, blocks, axis, width, viaBlocks);
  QCOMPARE(viaBlocks.size(), items.size());
  for (std::size_t k = 0; k < items.size(); ++k) {
    const profiler::DrawItem &a = items[k], &b = viaBlocks[k];
    QVERIFY(a.x0 == b.x0 && a.x1 == b.x1 && a.first == b.first && a.count == b.count &&
            a.merged == b.merged);
  }
  const auto [first, last] = bruteVisible(level, axis.startNs, axis.endNs(width));
  std::uint32_t next = first;
  for (const profiler::DrawItem& it : items) {
    QCOMPARE(it.first, next);  // items partition the visible spans in order
    QVERIFY(it.count >= 1);
    QVERIFY(it.x0 >= 0 && it.x1 > it.x0 && it.x1 <= width);
    for (std::uint32_t k = it.first; k < it.first + it.count; ++k) {
      const bool tiny = static_cast<double>(level[k].endNs - level[k].startNs) < axis.nsPerPx;
      QCOMPARE(tiny, it.merged);  // a drawn span is a pixel wide; a block holds only narrower
    }
    next = it.first + it.count;
  }
  if (first != last) QCOMPARE(next, last);
  QVERIFY(items.size() <= 2 * static_cast<std::size_t>(width) + 2);  // cost follows pixels
}

bool sameEvent(const profiler::Event& a, const profiler::Event& b) {
  return std::string_view(a.name) == b.name && a.startNs == b.startNs && a.endNs == b.endNs &&
         a.rank == b.rank && a.lane == b.lane && a.kind == b.kind && a.category == b.category &&
         a.bytes == b.bytes && a.peer == b.peer && a.group == b.group && a.step == b.step &&
         a.microBatch == b.microBatch && a.stage == b.stage && a.instruction == b.instruction &&
         a.correlation == b.correlation && a.flags == b.flags;
}

}  // namespace

class TestTimelineIndex : public QObject {
  Q_OBJECT
 private slots:
  void levelsNeverOverlap();
  void partialOverlapsShareLevels();
  void levelOfDetailIsExact_data();
  void levelOfDetailIsExact();
  void lonelyNanosecondSpanStaysVisible();
  void deepZoomOnEpochTimes();
  void liveAppendEqualsWholeBuild();
  void lateEventsArePlacedNotLost();
  void rebuildsEveryEvent();
  void searchFindsExactlyTheMatches();
  void selectionStatsMatchAnalyze();
  void selectionStatsOverARange();
  void flameGraphMergesPaths();
  void flameGraphAgreesWithSelectionStats();
  void exportedRangeReimports();
  void rulerUnits();
  void timeMapping();
};

void TestTimelineIndex::levelsNeverOverlap() {
  profiler::TimelineIndex index;
  index.build(randomTrace(7, 3000));
  for (const profiler::Lane& l : index.lanes()) {
    for (const auto& level : l.levels) {
      for (std::size_t i = 1; i < level.size(); ++i) {
        QVERIFY(level[i - 1].endNs <= level[i].startNs);
      }
    }
  }
}

// Requests posted in turn and each answered after the next was posted (a server's receives of
// its workers' headers) overlap only their neighbours: they take the first free level, two in
// all, not one level each. A span inside one of them still nests below it, and a span that
// encloses several sits above them.
void TestTimelineIndex::partialOverlapsShareLevels() {
  auto add = [](profiler::TraceData& trace, std::int64_t from, std::int64_t to) {
    profiler::Event e;
    e.name = trace.strings.intern("recv");
    e.category = profiler::Category::Communication;
    e.startNs = from;
    e.endNs = to;
    trace.events.push_back(e);
  };
  profiler::TraceData t;
  add(t, 0, 100);  // encloses the chain
  for (int i = 0; i < 8; ++i) add(t, 10 + 10 * i, 25 + 10 * i);
  add(t, 41, 44);  // inside the request [40, 55], which sits at level 1 or 2
  t.sortByTime();
  profiler::TimelineIndex index;
  index.build(t);
  QCOMPARE(index.lanes().size(), std::size_t{1});
  const profiler::Lane& lane = index.lanes().front();
  // The encloser, the chain alternating between two levels, the nested one below its parent.
  QCOMPARE(lane.levels.size(), std::size_t{4});
  QCOMPARE(lane.levels[0].size(), std::size_t{1});
  QCOMPARE(lane.levels[1].size(), std::size_t{4});
  QCOMPARE(lane.levels[2].size(), std::size_t{4});
  QCOMPARE(lane.levels[3].size(), std::size_t{1});
  for (std::size_t i = 0; i < lane.levels[1].size(); ++i)
    QCOMPARE(lane.levels[1][i].startNs, std::int64_t{10 + 20 * static_cast<int>(i)});
  QCOMPARE(lane.levels[3][0].startNs, std::int64_t{41});
  // Appended one by one, the same levels.
  profiler::TimelineIndex live;
  for (const profiler::Event& e : t.events) live.append(&e, 1);
  for (std::size_t d = 0; d < lane.levels.size(); ++d) {
    QCOMPARE(live.lanes().front().levels[d].size(), lane.levels[d].size());
  }
  // A late span inside one that another overlaps in part goes under its encloser, where a whole
  // build puts it: [0,10], [5,100], [40,50], then [20,30] late.
  profiler::TraceData u;
  for (const auto& [from, to] : {std::pair{0, 10}, {5, 100}, {40, 50}, {20, 30}}) add(u, from, to);
  profiler::TimelineIndex late;
  for (const profiler::Event& e : u.events) late.append(&e, 1);
  u.sortByTime();
  profiler::TimelineIndex whole;
  whole.build(u);
  const auto& a = late.lanes().front().levels;
  const auto& b = whole.lanes().front().levels;
  QCOMPARE(a.size(), b.size());
  for (std::size_t d = 0; d < a.size(); ++d) {
    QCOMPARE(a[d].size(), b[d].size());
    for (std::size_t i = 0; i < a[d].size(); ++i) QCOMPARE(a[d][i].startNs, b[d][i].startNs);
  }
  QCOMPARE(b.size(), std::size_t{3});  // [20,30] and [40,50] under [5,100]
}

void TestTimelineIndex::levelOfDetailIsExact_data() {
  QTest::addColumn<quint64>("seed");
  for (quint64 s = 1; s <= 6; ++s) QTest::newRow(qPrintable(QString("seed %1").arg(s))) << s;
}

void TestTimelineIndex::levelOfDetailIsExact() {
  QFETCH(quint64, seed);
  profiler::TimelineIndex index;
  index.build(randomTrace(seed, 4000));
  std::mt19937_64 rng(seed);
  const int width = 1000 + static_cast<int>(seed) * 37;
  const double span = static_cast<double>(index.endNs() - index.beginNs());
  for (double window = span * 1.2; window >= 50; window /= 4) {
    for (int probe = 0; probe < 4; ++probe) {
      profiler::TimeAxis axis;
      axis.nsPerPx = window / width;
      axis.startNs =
          index.beginNs() - static_cast<std::int64_t>(window * 0.1) +
          static_cast<std::int64_t>(std::uniform_real_distribution<double>(0, span)(rng));
      for (const profiler::Lane& l : index.lanes()) {
        for (std::size_t d = 0; d < l.levels.size(); ++d) checkLevel(l, d, axis, width);
      }
    }
  }
}

void TestTimelineIndex::lonelyNanosecondSpanStaysVisible() {
  profiler::TraceData t;
  const char* name = t.strings.intern("kernel");
  for (std::int64_t i = 0; i < 1'000'000; ++i) {
    profiler::Event e;
    e.name = name;
    e.startNs = i * 500;
    e.endNs = i * 500 + 300;
    t.events.push_back(e);
  }
  profiler::Event lone;
  lone.name = t.strings.intern("lone");
  lone.startNs = 750'000'000;
  lone.endNs = lone.startNs + 1;
  t.events.push_back(lone);
  profiler::TimelineIndex index;
  index.build(t);
  QCOMPARE(index.lanes().size(), std::size_t{1});
  const auto& level = index.lanes()[0].levels[0];
  const std::uint32_t loneAt = 1'000'000;
  QCOMPARE(index.name(level[loneAt].nameCat), std::string("lone"));
  const int width = 1920;
  for (double window = 2e9; window >= 10; window /= 3) {
    profiler::TimeAxis axis;
    axis.nsPerPx = window / width;
    axis.startNs = lone.startNs - static_cast<std::int64_t>(window / 3);
    std::vector<profiler::DrawItem> items;
    profiler::buildLevelDrawList(level, index.lanes()[0].blocks[0], axis, width, items);
    const auto holds = [&](const profiler::DrawItem& d) {
      return d.first <= loneAt && loneAt < d.first + d.count;
    };
    auto it = std::find_if(items.begin(), items.end(), holds);
    QVERIFY2(it != items.end(), qPrintable(QString("lost at %1 ns per px").arg(axis.nsPerPx)));
    QVERIFY(it->x1 - it->x0 >= 1);
    QCOMPARE(it->x0, static_cast<std::int32_t>(axis.column(lone.startNs)));
    if (axis.nsPerPx > 200) QCOMPARE(it->count, 1u);  // alone in its columns: its own mark
  }
}

// Kineto traces stamp events with the epoch in ns (~1.7e18): the deepest zoom (1e-3 ns per
// pixel) and panning far away stay exact and finite.
void TestTimelineIndex::deepZoomOnEpochTimes() {
  profiler::TraceData t = randomTrace(4, 500);
  for (profiler::Event& e : t.events) {
    e.startNs += 1'712'195'495'520'871'000;
    e.endNs += 1'712'195'495'520'871'000;
  }
  profiler::TimelineIndex index;
  index.build(t);
  for (double nsPerPx : {1e-3, 0.37, 1e3, 1e12}) {
    for (std::int64_t offset : {std::int64_t{0}, std::int64_t{-4'000'000'000'000'000'000},
                                (index.endNs() - index.beginNs()) / 2}) {
      profiler::TimeAxis axis;
      axis.nsPerPx = nsPerPx;
      axis.startNs = index.beginNs() + offset;
      for (const profiler::Lane& l : index.lanes()) {
        for (std::size_t d = 0; d < l.levels.size(); ++d) checkLevel(l, d, axis, 1500);
      }
    }
  }
}

void TestTimelineIndex::liveAppendEqualsWholeBuild() {
  SyntheticOptions o;
  o.events = 60'000;
  const profiler::TraceData trace = syntheticTrainingTrace(o);
  profiler::TimelineIndex whole, live;
  whole.build(trace);
  // Live data arrives per rank as the ranks record it, in chunks of any size.
  std::mt19937_64 rng(3);
  for (std::size_t i = 0; i < trace.events.size();) {
    const std::size_t n = std::min<std::size_t>(trace.events.size() - i, rng() % 700 + 1);
    const std::vector<profiler::Event> chunk(
        trace.events.begin() + static_cast<std::ptrdiff_t>(i),
        trace.events.begin() + static_cast<std::ptrdiff_t>(i + n));
    live.append(chunk.data(), chunk.size());
    i += n;
  }
  live.setNames(trace);
  QCOMPARE(live.eventCount(), whole.eventCount());
  QCOMPARE(live.lanes().size(), whole.lanes().size());
  for (std::size_t l = 0; l < whole.lanes().size(); ++l) {
    const profiler::Lane& a = whole.lanes()[l];
    const profiler::Lane& b = live.lanes()[l];
    QCOMPARE(b.name, a.name);
    QCOMPARE(b.levels.size(), a.levels.size());
    for (std::size_t d = 0; d < a.levels.size(); ++d) {
      QCOMPARE(b.levels[d].size(), a.levels[d].size());
      QVERIFY(b.blocks[d] == a.blocks[d]);
      for (std::size_t i = 0; i < a.levels[d].size(); ++i) {
        QVERIFY(sameEvent(live.eventOf(b, b.levels[d][i], profiler::EventKind::Span),
                          whole.eventOf(a, a.levels[d][i], profiler::EventKind::Span)));
      }
    }
  }
  QCOMPARE(live.flows().size(), whole.flows().size());
  for (std::size_t f = 0; f < whole.flows().size(); ++f) {
    QVERIFY(live.flows()[f].from == whole.flows()[f].from);
    QVERIFY(live.flows()[f].to == whole.flows()[f].to);
  }
  QCOMPARE(live.counters().size(), whole.counters().size());
  QVERIFY(!whole.flows().empty());
}

// Events in the order a scope-exit recorder emits them (each span when it ends, so parents
// after their children), in batches: every event is kept, levels stay sorted and disjoint,
// level of detail stays exact and every flow joins two ends with the same correlation id.
void TestTimelineIndex::lateEventsArePlacedNotLost() {
  SyntheticOptions o;
  o.events = 30'000;
  const profiler::TraceData trace = syntheticTrainingTrace(o);
  std::vector<profiler::Event> byEnd = trace.events;
  std::stable_sort(byEnd.begin(), byEnd.end(),
                   [](const profiler::Event& a, const profiler::Event& b) {
                     return a.rank != b.rank ? a.rank < b.rank : a.endNs < b.endNs;
                   });
  profiler::TimelineIndex index, whole;
  for (std::size_t i = 0; i < byEnd.size(); i += 500) {
    index.append(byEnd.data() + i, std::min<std::size_t>(500, byEnd.size() - i));
  }
  whole.build(trace);
  QCOMPARE(index.eventCount(), trace.events.size());
  QCOMPARE(index.flows().size(), whole.flows().size());
  for (const profiler::Flow& f : index.flows()) {
    QCOMPARE(index.event(f.from).correlation, index.event(f.to).correlation);
    QVERIFY(index.event(f.from).flags & flag::kFlowSource);
  }
  std::size_t spans = 0;
  profiler::TimeAxis axis;
  axis.fit(index.beginNs(), index.endNs(), 1700);
  for (const profiler::Lane& l : index.lanes()) {
    for (std::size_t d = 0; d < l.levels.size(); ++d) {
      const auto& level = l.levels[d];
      spans += level.size();
      for (std::size_t i = 1; i < level.size(); ++i)
        QVERIFY(level[i - 1].endNs <= level[i].startNs);
      checkLevel(l, d, axis, 1700);
    }
  }
  QCOMPARE(index.toTrace(INT64_MIN, INT64_MAX).events.size(), trace.events.size());
  std::size_t expectedSpans = 0;
  for (const profiler::Event& e : trace.events)
    expectedSpans += e.kind == profiler::EventKind::Span;
  QCOMPARE(spans, expectedSpans);
  // Parents arriving after their children still nest above them: every level holds exactly
  // the spans of the whole build's (an instruction above its kernels, from step to step).
  QCOMPARE(index.lanes().size(), whole.lanes().size());
  for (const profiler::Lane& a : whole.lanes()) {
    // Lanes come in the order their first events did.
    const auto same = std::find_if(
        index.lanes().begin(), index.lanes().end(),
        [&](const profiler::Lane& l) { return l.rank == a.rank && l.laneId == a.laneId; });
    QVERIFY(same != index.lanes().end());
    const profiler::Lane& b = *same;
    QCOMPARE(b.levels.size(), a.levels.size());
    for (std::size_t d = 0; d < a.levels.size(); ++d) {
      QCOMPARE(b.levels[d].size(), a.levels[d].size());
      QVERIFY(b.blocks[d] == a.blocks[d]);
      for (std::size_t i = 0; i < a.levels[d].size(); ++i)
        QVERIFY(sameEvent(index.eventOf(b, b.levels[d][i], profiler::EventKind::Span),
                          whole.eventOf(a, a.levels[d][i], profiler::EventKind::Span)));
    }
  }
}

void TestTimelineIndex::rebuildsEveryEvent() {
  const profiler::TraceData trace = randomTrace(11, 2000);
  profiler::TimelineIndex index;
  index.build(trace);
  const profiler::TraceData back = index.toTrace(INT64_MIN, INT64_MAX);
  QCOMPARE(back.events.size(), trace.events.size());
  // Both sorted by (rank, start, longer first); ties keep no particular order, so compare sets.
  auto key = [](const profiler::Event& e) {
    return std::tuple(e.rank, e.startNs, -e.endNs, e.lane, std::string(e.name), e.kind, e.bytes);
  };
  std::vector<std::tuple<int, long, long, int, std::string, profiler::EventKind, long>> a, b;
  for (const profiler::Event& e : trace.events) a.push_back(key(e));
  for (const profiler::Event& e : back.events) b.push_back(key(e));
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  QVERIFY(a == b);
  // Compact: the synthetic training trace stays within the 48-byte goal.
  SyntheticOptions o;
  o.events = 200'000;
  profiler::TimelineIndex big;
  const profiler::TraceData synthetic = syntheticTrainingTrace(o);
  big.build(synthetic);
  QVERIFY2(big.bytesHeld() <= 48 * synthetic.events.size(),
           qPrintable(QString::number(double(big.bytesHeld()) / synthetic.events.size())));
}

void TestTimelineIndex::searchFindsExactlyTheMatches() {
  const profiler::TraceData trace = randomTrace(5, 1500);
  profiler::TimelineIndex index;
  index.build(trace);
  for (const auto& [pattern, regex] : std::vector<std::pair<std::string, bool>>{
           {"gemm", false}, {"_b", false}, {"^[FBW]$", true}, {"re(cv|duce)", true}}) {
    std::size_t expected = 0;
    for (const profiler::Event& e : trace.events) {
      if (e.kind != profiler::EventKind::Span) continue;
      const std::string name = e.name;
      expected += regex ? std::regex_search(name, std::regex(pattern))
                        : name.find(pattern) != std::string::npos;
    }
    const auto hits = profiler::searchSpans(index, pattern, regex);
    QCOMPARE(hits.size(), expected);
    for (std::size_t i = 0; i < hits.size(); ++i) {
      const std::string& name = index.name(index.span(hits[i].ref).nameCat);
      QVERIFY(regex ? std::regex_search(name, std::regex(pattern))
                    : name.find(pattern) != std::string::npos);
      QCOMPARE(hits[i].startNs, index.span(hits[i].ref).startNs);
      if (i) QVERIFY(hits[i - 1].startNs <= hits[i].startNs);
    }
  }
  QVERIFY(profiler::searchSpans(index, "", false).empty());
  QVERIFY_THROWS_EXCEPTION(std::regex_error, profiler::searchSpans(index, "(", true));
}

void TestTimelineIndex::selectionStatsMatchAnalyze() {
  SyntheticOptions o;
  o.events = 40'000;
  const profiler::TraceData trace = syntheticTrainingTrace(o);
  profiler::TimelineIndex index;
  index.build(trace);
  std::vector<std::uint32_t> all(index.lanes().size());
  std::iota(all.begin(), all.end(), 0u);
  const auto stats = profiler::selectionStats(index, all, index.beginNs(), index.endNs());
  const auto volume = parascope::profiler::computeCommVolume(trace);
  QVERIFY(!volume.ops.empty());
  for (const auto& op : volume.ops) {
    auto it = std::find_if(stats.begin(), stats.end(),
                           [&](const profiler::NameStats& s) { return s.name == op.name; });
    QVERIFY(it != stats.end());
    QCOMPARE(it->count, op.count);
    QCOMPARE(it->totalNs, op.timeNs);
  }
}

void TestTimelineIndex::selectionStatsOverARange() {
  const profiler::TraceData trace = randomTrace(9, 2000);
  profiler::TimelineIndex index;
  index.build(trace);
  std::vector<std::uint32_t> lanes;
  for (std::uint32_t l = 0; l < index.lanes().size(); ++l) {
    if (index.lanes()[l].rank == 1) lanes.push_back(l);
  }
  const std::int64_t from = index.beginNs() + (index.endNs() - index.beginNs()) / 3;
  const std::int64_t to = from + (index.endNs() - index.beginNs()) / 4;
  std::map<std::string, profiler::NameStats> expected;
  for (const profiler::Event& e : trace.events) {
    if (e.kind != profiler::EventKind::Span || e.rank != 1 || e.endNs < from || e.startNs > to)
      continue;
    const std::int64_t d = std::min(e.endNs, to) - std::max(e.startNs, from);
    profiler::NameStats& s = expected[e.name];
    s.minNs = s.count ? std::min(s.minNs, d) : d;
    s.maxNs = s.count ? std::max(s.maxNs, d) : d;
    ++s.count;
    s.totalNs += d;
  }
  const auto stats = profiler::selectionStats(index, lanes, from, to);
  QCOMPARE(stats.size(), expected.size());
  std::int64_t all = 0;
  for (const auto& [name, x] : expected) all += x.totalNs;
  double shares = 0;
  for (const profiler::NameStats& s : stats) shares += s.share;
  QVERIFY(std::abs(shares - 1) < 1e-12);
  for (const profiler::NameStats& s : stats) {
    const profiler::NameStats& x = expected.at(s.name);
    QCOMPARE(s.count, x.count);
    QCOMPARE(s.totalNs, x.totalNs);
    QCOMPARE(s.minNs, x.minNs);
    QCOMPARE(s.maxNs, x.maxNs);
    QCOMPARE(s.share, double(x.totalNs) / double(all));
  }
  const std::string csv = profiler::statsToCsv(stats);
  QVERIFY(csv.rfind("name,count,total_ns,mean_ns,min_ns,max_ns,share\n", 0) == 0);
  QCOMPARE(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(stats.size() + 1));
}

// Two ranks, each a step holding F (with a gemm) then B (a gemm and a gelu): the graph merges
// both ranks by path, gemm under F apart from gemm under B; a range clips the times.
void TestTimelineIndex::flameGraphMergesPaths() {
  const profiler::TraceData trace = nestedSteps(5);  // rank 1 a little later
  profiler::TimelineIndex index;
  index.build(trace);
  std::vector<std::uint32_t> lanes;
  for (std::uint32_t l = 0; l < index.lanes().size(); ++l) lanes.push_back(l);
  const auto find = [](const profiler::FlameGraph& g, const std::vector<std::string>& path) {
    int node = -1;
    for (const std::string& name : path) {
      const std::vector<int>& among =
          node < 0 ? g.roots : g.nodes[static_cast<std::size_t>(node)].children;
      const auto it = std::find_if(among.begin(), among.end(), [&](int n) {
        return g.nodes[static_cast<std::size_t>(n)].name == name;
      });
      if (it == among.end()) return static_cast<const profiler::FlameNode*>(nullptr);
      node = *it;
    }
    return &g.nodes[static_cast<std::size_t>(node)];
  };
  const profiler::FlameGraph whole = profiler::flameGraph(index, lanes, 0, 200);
  QCOMPARE(whole.nodes.size(), std::size_t{6});  // step, F, F/gemm, B, B/gemm, B/gelu
  QCOMPARE(whole.roots.size(), std::size_t{1});
  QCOMPARE(whole.totalNs, std::int64_t{200});
  QCOMPARE(whole.depth, 3);
  const profiler::FlameNode* step = find(whole, {"step"});
  QVERIFY(step);
  QCOMPARE(step->count, std::int64_t{2});
  QCOMPARE(step->totalNs, std::int64_t{200});
  QCOMPARE(step->selfNs, std::int64_t{200 - 60 - 80});
  // Children heaviest first: B (80) before F (60).
  QCOMPARE(whole.nodes[static_cast<std::size_t>(step->children[0])].name, std::string("B"));
  QCOMPARE(find(whole, {"step", "F", "gemm"})->totalNs, std::int64_t{30});
  QCOMPARE(find(whole, {"step", "F"})->selfNs, std::int64_t{30});
  QCOMPARE(find(whole, {"step", "B", "gemm"})->totalNs, std::int64_t{30});
  QCOMPARE(find(whole, {"step", "B", "gelu"})->count, std::int64_t{2});
  QCOMPARE(find(whole, {"step", "B"})->selfNs, std::int64_t{80 - 30 - 16});
  QCOMPARE(find(whole, {"step", "B", "gelu"})->depth, 2);

  // [20, 60]: rank 0's F gemm 20..30, F 20..40, B 50..60, B gemm 55..60; rank 1's F gemm
  // 20..35, F 20..45, B 55..60, none of its B gemm (60..75 starts at 60: touches, 0 ns).
  const profiler::FlameGraph part = profiler::flameGraph(index, lanes, 20, 60);
  QCOMPARE(find(part, {"step"})->totalNs, std::int64_t{80});
  QCOMPARE(find(part, {"step", "F"})->totalNs, std::int64_t{20 + 25});
  QCOMPARE(find(part, {"step", "F", "gemm"})->totalNs, std::int64_t{10 + 15});
  QCOMPARE(find(part, {"step", "B"})->totalNs, std::int64_t{10 + 5});
  QCOMPARE(find(part, {"step", "B", "gemm"})->totalNs, std::int64_t{5});
  QCOMPARE(find(part, {"step", "B", "gemm"})->count, std::int64_t{2});
  QVERIFY(!find(part, {"step", "B", "gelu"}));

  // Only rank 1's lanes.
  std::vector<std::uint32_t> rank1;
  for (std::uint32_t l = 0; l < index.lanes().size(); ++l) {
    if (index.lanes()[l].rank == 1) rank1.push_back(l);
  }
  QCOMPARE(profiler::flameGraph(index, rank1, 0, 200).totalNs, std::int64_t{100});
  QVERIFY(profiler::flameGraph(index, lanes, 300, 400).nodes.empty());
}

// On random nesting and partial overlaps: every span in the range is merged into exactly one
// node, each name's total equals the selection statistics' (the two side panels agree), and no
// node's children take more than it does.
void TestTimelineIndex::flameGraphAgreesWithSelectionStats() {
  const profiler::TraceData trace = randomTrace(11, 2000);
  profiler::TimelineIndex index;
  index.build(trace);
  std::vector<std::uint32_t> lanes;
  for (std::uint32_t l = 0; l < index.lanes().size(); ++l) lanes.push_back(l);
  const std::int64_t from = index.beginNs() + (index.endNs() - index.beginNs()) / 5;
  const std::int64_t to = from + (index.endNs() - index.beginNs()) / 3;
  const profiler::FlameGraph g = profiler::flameGraph(index, lanes, from, to);
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> byName;  // count, total
  for (const profiler::FlameNode& n : g.nodes) {
    byName[n.name].first += n.count;
    byName[n.name].second += n.totalNs;
    QVERIFY2(n.selfNs >= 0, n.name.c_str());
    for (int c : n.children)
      QCOMPARE(g.nodes[static_cast<std::size_t>(c)].parent, static_cast<int>(&n - g.nodes.data()));
  }
  const auto stats = profiler::selectionStats(index, lanes, from, to);
  QCOMPARE(byName.size(), stats.size());
  std::int64_t all = 0;
  for (const profiler::NameStats& s : stats) {
    QCOMPARE(byName.at(s.name).first, s.count);
    QCOMPARE(byName.at(s.name).second, s.totalNs);
  }
  for (int r : g.roots) all += g.nodes[static_cast<std::size_t>(r)].totalNs;
  QCOMPARE(g.totalNs, all);
}

void TestTimelineIndex::exportedRangeReimports() {
  SyntheticOptions o;
  o.events = 20'000;
  const profiler::TraceData trace = syntheticTrainingTrace(o);
  profiler::TimelineIndex index;
  index.build(trace);
  QTemporaryDir dir;
  const std::int64_t from = index.beginNs() + (index.endNs() - index.beginNs()) / 5;
  const std::int64_t to = from + (index.endNs() - index.beginNs()) / 3;
  for (const char* file : {"/range.json", "/range.json.gz"}) {
    const std::string path = dir.path().toStdString() + file;
    exportTraceRange(index, from, to, path);
    profiler::TraceData back = parascope::profiler::importChromeTrace(path);
    std::vector<profiler::Event> expected;
    // Each counter sampled before the range starts it with the value then in force.
    std::map<std::tuple<std::int32_t, std::int32_t, std::string>, const profiler::Event*> before;
    for (const profiler::Event& e : trace.events) {
      if (e.endNs >= from && e.startNs <= to) expected.push_back(e);
      if (e.kind == profiler::EventKind::Counter && e.startNs <= from)
        before[{e.rank, e.lane, std::string(e.name)}] = &e;
    }
    for (const auto& [track, last] : before) {
      if (last->startNs == from) continue;
      profiler::Event start = *last;
      start.startNs = start.endNs = from;
      expected.push_back(start);
    }
    QVERIFY(!before.empty());
    auto order = [](const profiler::Event& a, const profiler::Event& b) {
      return std::make_tuple(a.rank, a.startNs, -a.endNs, a.lane, std::string_view(a.name),
                             a.bytes) < std::make_tuple(b.rank, b.startNs, -b.endNs, b.lane,
                                                        std::string_view(b.name), b.bytes);
    };
    std::stable_sort(expected.begin(), expected.end(), order);
    std::stable_sort(back.events.begin(), back.events.end(), order);
    QCOMPARE(back.events.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      QVERIFY2(sameEvent(back.events[i], expected[i]), expected[i].name);
    }
  }
}

void TestTimelineIndex::rulerUnits() {
  QCOMPARE(profiler::formatDuration(750), std::string("750 ns"));
  QCOMPARE(profiler::formatDuration(1500), std::string("1.5 us"));
  QCOMPARE(profiler::formatDuration(2'000'000), std::string("2 ms"));
  QCOMPARE(profiler::formatDuration(3'250'000'000), std::string("3.25 s"));
  profiler::TimeAxis axis;
  axis.startNs = 1'000'000;
  axis.nsPerPx = 1000;  // 1 us per pixel: ticks every 100 us at 90 px minimum spacing
  const auto ticks = profiler::rulerTicks(axis, 1'000'000, 1000, 90);
  QCOMPARE(ticks.size(), std::size_t{10});
  QCOMPARE(ticks[0].label, std::string("0 ns"));
  QCOMPARE(ticks[1].label, std::string("100 us"));
  QCOMPARE(ticks[1].x, 100.0);
}

void TestTimelineIndex::timeMapping() {
  profiler::TimeAxis axis;
  axis.startNs = 5000;
  axis.nsPerPx = 10;
  QCOMPARE(axis.x(5100), 10.0);
  QCOMPARE(axis.time(10), std::int64_t{5100});
  QCOMPARE(axis.column(5109), std::int64_t{10});
  QCOMPARE(axis.column(4999), std::int64_t{-1});
  axis.zoomAt(50, 0.5);  // the time under x = 50 stays there
  QCOMPARE(axis.time(50), std::int64_t{5500});
  QCOMPARE(axis.nsPerPx, 5.0);
  axis.fit(0, 1000, 100);
  QCOMPARE(axis.startNs, std::int64_t{0});
  QCOMPARE(axis.nsPerPx, 10.0);
}

QTEST_GUILESS_MAIN(TestTimelineIndex)
#include "test_timeline_index.moc"
