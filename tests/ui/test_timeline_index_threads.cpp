// The timeline index built on threads (groups of ranks in parts, merged) equals the index one
// pass builds, field by field: lanes and their levels, blocks, instants and nesting state,
// counters, flows, the detail table and name ids, and what later appends do with both. Input a
// threaded build cannot split (ranks not grouped, spans out of start order) gives the one-pass
// index too; a cancelled build leaves the index empty.
#include <QtTest>

#include <random>

#include "profiler/synthetic_trace.h"
#include "profiler/timeline/timeline_index.h"

namespace profiler = parascope::profiler;
using parascope::profiler::SyntheticOptions;
using parascope::profiler::syntheticTrainingTrace;
using parascope::profiler::TraceData;
namespace flag = parascope::trace::flag;

namespace {

const char* const kNames[] = {"gemm", "gemm_bwd", "all_reduce", "send", "recv", "F", "B", "W"};

// Random nested spans, instants and counters on `ranks` ranks of different sizes; names differ
// from rank to rank (so that parts number them differently), details repeat across ranks, and
// flows run within a rank and from each rank to the next, both ends in either order.
profiler::TraceData randomRanks(std::uint64_t seed, int ranks) {
  std::mt19937_64 rng(seed);
  auto uni = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  profiler::TraceData t;
  for (int rank = 0; rank < ranks; ++rank) {
    t.rankNames[rank] = "rank " + std::to_string(rank);
    const auto perLane = static_cast<int>(uni(50, 1500));
    for (int lane = 0; lane < 3; ++lane) {
      std::int64_t time = uni(0, 1000);
      for (int i = 0; i < perLane; ++i) {
        profiler::Event e;
        e.rank = rank;
        e.lane = lane;
        e.name = t.strings.intern(uni(0, 9) == 0 ? "only rank " + std::to_string(rank)
                                                 : std::string(kNames[uni(0, 7)]));
        e.category = lane == 1 ? profiler::Category::Communication : profiler::Category::Compute;
        e.startNs = time;
        e.endNs = time + uni(1, 10) * static_cast<std::int64_t>(std::pow(10, uni(0, 5)));
        e.step = static_cast<std::int32_t>(i / 40);
        e.stage = static_cast<std::int32_t>(uni(0, 1));
        if (lane == 1) {
          e.bytes = uni(1, 4) << 20;
          // Flow i of this rank to the next: the source here, the target on the next rank.
          const bool source = uni(0, 1) == 0;
          const std::int64_t to = source ? rank + 1 : rank;
          e.correlation = static_cast<std::uint64_t>((to << 32) | (i % 200)) + 1;
          e.flags = source ? flag::kFlowSource : flag::kReceive;
        } else if (uni(0, 15) == 0) {
          e.correlation =
              static_cast<std::uint64_t>(rank + 1) << 48 | static_cast<std::uint64_t>(i / 2);
          e.flags = i % 2 == 0 ? flag::kFlowSource : 0;
        }
        // Imported args on some spans, unique to each (as Kineto's "External id").
        if (lane == 0 && uni(0, 30) == 0)
          e.args = t.addArgs(R"("External id":)" + std::to_string(rank * 10000 + i));
        if (uni(0, 20) == 0) {
          e.kind = profiler::EventKind::Instant;
          e.endNs = e.startNs;
        } else if (uni(0, 25) == 0) {
          e.kind = profiler::EventKind::Counter;
          e.category = profiler::Category::Memory;
          e.endNs = e.startNs;
          e.bytes = uni(0, 1000);
          e.correlation = 0;
          e.flags = 0;
          e.args = 0;
          e.name = t.strings.intern(uni(0, 1) ? "memory" : "cache");
        }
        t.events.push_back(e);
        time += uni(0, 3) == 0 ? uni(1, 200000) : uni(0, 50);
      }
    }
  }
  t.sortByTime();
  return t;
}

void expectSameLane(const profiler::Lane& a, const profiler::Lane& b) {
  QCOMPARE(a.rank, b.rank);
  QCOMPARE(a.laneId, b.laneId);
  QCOMPARE(a.name, b.name);
  QVERIFY(a.levels == b.levels);
  QVERIFY(a.blocks == b.blocks);
  QVERIFY(a.instants == b.instants);
  QVERIFY(a.openEnds == b.openEnds);
  QCOMPARE(a.endNs, b.endNs);
  QCOMPARE(a.lastStartNs, b.lastStartNs);
}

void expectSame(const profiler::TimelineIndex& a, const profiler::TimelineIndex& b) {
  QCOMPARE(a.eventCount(), b.eventCount());
  QCOMPARE(a.beginNs(), b.beginNs());
  QCOMPARE(a.endNs(), b.endNs());
  QVERIFY(a.rankNames() == b.rankNames());
  QCOMPARE(a.nameCount(), b.nameCount());
  for (std::uint32_t n = 0; n < a.nameCount(); ++n) QCOMPARE(a.name(n << 4), b.name(n << 4));
  QVERIFY(a.details() == b.details());
  QVERIFY(a.flows() == b.flows());
  QCOMPARE(a.lanes().size(), b.lanes().size());
  for (std::size_t l = 0; l < a.lanes().size(); ++l) expectSameLane(a.lanes()[l], b.lanes()[l]);
  // The args the equal details point at are the same text.
  for (std::uint32_t l = 0; l < a.lanes().size(); ++l) {
    const auto& levels = a.lanes()[l].levels;
    for (std::uint32_t d = 0; d < levels.size(); ++d) {
      for (std::uint32_t i = 0; i < levels[d].size(); ++i)
        QCOMPARE(a.argsText({l, d, i}), b.argsText({l, d, i}));
    }
  }
  QCOMPARE(a.counters().size(), b.counters().size());
  for (std::size_t c = 0; c < a.counters().size(); ++c) {
    const profiler::CounterTrack &x = a.counters()[c], &y = b.counters()[c];
    QVERIFY(x.rank == y.rank && x.laneId == y.laneId && x.name == y.name &&
            x.category == y.category && x.minValue == y.minValue && x.maxValue == y.maxValue);
    QVERIFY(x.points == y.points);
  }
}

// More events on existing and new ranks, lanes, names and counters: both indexes must have kept
// the same look-ups (lanes, names, details, counters) for appends after a build.
std::vector<profiler::Event> laterEvents(profiler::TraceData& t) {
  std::vector<profiler::Event> more;
  const std::int64_t end = t.events.empty() ? 0 : t.events.back().endNs;
  for (std::int32_t rank : {0, 2, 9}) {
    for (int i = 0; i < 30; ++i) {
      profiler::Event e;
      e.rank = rank;
      e.lane = i % 4;
      e.name = t.strings.intern(i % 3 == 0 ? "later" : kNames[i % 8]);
      e.startNs = end + 1000 * i;
      e.endNs = e.startNs + 500;
      e.step = i % 2;
      if (i % 5 == 0) {
        e.kind = profiler::EventKind::Counter;
        e.name = t.strings.intern("memory");
        e.bytes = i;
        e.endNs = e.startNs;
      }
      more.push_back(e);
    }
  }
  return more;
}

}  // namespace

class TestTimelineIndexThreads : public QObject {
  Q_OBJECT
 private slots:
  void threadedEqualsOnePass_data();
  void threadedEqualsOnePass();
  void syntheticTraceEqualsOnePass();
  void unsplittableInputFallsBackToOnePass();
  void cancelLeavesAnEmptyIndex();
};

void TestTimelineIndexThreads::threadedEqualsOnePass_data() {
  QTest::addColumn<quint64>("seed");
  QTest::addColumn<int>("ranks");
  QTest::addColumn<unsigned>("threads");
  for (quint64 seed = 1; seed <= 4; ++seed) {
    for (const auto& [ranks, threads] : {std::pair{2, 2U}, {5, 2U}, {5, 3U}, {7, 4U}, {3, 8U}}) {
      QTest::newRow(
          qPrintable(QString("seed %1, %2 ranks, %3 threads").arg(seed).arg(ranks).arg(threads)))
          << seed << ranks << threads;
    }
  }
}

void TestTimelineIndexThreads::threadedEqualsOnePass() {
  QFETCH(quint64, seed);
  QFETCH(int, ranks);
  QFETCH(unsigned, threads);
  profiler::TraceData trace = randomRanks(seed, ranks);
  auto always = [](double) { return true; };
  profiler::TimelineIndex onePass, threaded;
  QVERIFY(onePass.build(trace, always, 1));
  QVERIFY(threaded.build(trace, always, threads));
  QVERIFY(!onePass.flows().empty());
  QVERIFY(trace.args.size() > 1);
  expectSame(threaded, onePass);
  if (QTest::currentTestFailed()) return;
  const std::vector<profiler::Event> more = laterEvents(trace);
  onePass.append(more.data(), more.size());
  threaded.append(more.data(), more.size());
  expectSame(threaded, onePass);
}

void TestTimelineIndexThreads::syntheticTraceEqualsOnePass() {
  SyntheticOptions o;
  o.events = 120'000;
  const profiler::TraceData trace = syntheticTrainingTrace(o);
  auto always = [](double) { return true; };
  profiler::TimelineIndex onePass, threaded, byDefault;
  QVERIFY(onePass.build(trace, always, 1));
  QVERIFY(threaded.build(trace, always, 3));
  byDefault.build(trace);
  expectSame(threaded, onePass);
  if (QTest::currentTestFailed()) return;
  expectSame(byDefault, onePass);
  if (QTest::currentTestFailed()) return;
  // Every send meets the receive of the next rank: one flow each, across parts too.
  const auto sends =
      std::count_if(trace.events.begin(), trace.events.end(),
                    [](const profiler::Event& e) { return std::string_view(e.name) == "send"; });
  QCOMPARE(threaded.flows().size(), static_cast<std::size_t>(sends));
}

void TestTimelineIndexThreads::unsplittableInputFallsBackToOnePass() {
  const profiler::TraceData byRank = randomRanks(5, 4);
  // Ranks in reverse order: every rank still comes in one run, but not in rank order.
  profiler::TraceData reversed;
  for (std::int32_t r = 3; r >= 0; --r) {
    for (const profiler::Event& e : byRank.events) {
      if (e.rank == r) reversed.events.push_back(e);
    }
  }
  // Spans of a rank out of start order: the one-pass build places them late.
  profiler::TraceData late;
  late.events = byRank.events;
  for (std::size_t i = 0; i + 1 < late.events.size(); i += 97) {
    std::swap(late.events[i], late.events[i + 1]);
  }
  auto always = [](double) { return true; };
  for (const profiler::TraceData* trace : {&reversed, &late}) {
    profiler::TimelineIndex onePass, threaded;
    QVERIFY(onePass.build(*trace, always, 1));
    QVERIFY(threaded.build(*trace, always, 3));
    expectSame(threaded, onePass);
    if (QTest::currentTestFailed()) return;
  }
}

void TestTimelineIndexThreads::cancelLeavesAnEmptyIndex() {
  const profiler::TraceData trace = randomRanks(3, 6);
  for (unsigned threads : {1U, 3U}) {
    profiler::TimelineIndex index;
    std::vector<double> seen;
    const bool complete = index.build(
        trace,
        [&](double f) {
          seen.push_back(f);
          return false;
        },
        threads);
    QVERIFY(!complete);
    QCOMPARE(index.eventCount(), std::size_t{0});
    QVERIFY(index.lanes().empty() && index.flows().empty() && index.counters().empty());
    QVERIFY(!seen.empty());
    for (double f : seen) QVERIFY(f >= 0 && f <= 1);
    // The same index builds whole afterwards.
    QVERIFY(index.build(
        trace, [](double) { return true; }, threads));
    QCOMPARE(index.eventCount(), trace.events.size());
  }
}

QTEST_GUILESS_MAIN(TestTimelineIndexThreads)
#include "test_timeline_index_threads.moc"
