// Analyses on hand-built traces whose answers are worked out in the comments: breakdown,
// overlap, GPU kernels, pipeline bubbles, communication matrix and totals, memory peaks,
// stragglers, file I/O.
#include <QtTest>

#include "profiler/analysis/breakdown.h"
#include "profiler/analysis/bubbles.h"
#include "profiler/analysis/comm_volume.h"
#include "profiler/analysis/file_io.h"
#include "profiler/analysis/gpu_kernels.h"
#include "profiler/analysis/intervals.h"
#include "profiler/analysis/memory_timeline.h"
#include "profiler/analysis/stragglers.h"
#include "trace_builder.h"

using namespace parascope::profiler;
using parascope::profiler::testing::add;
namespace lane = parascope::trace::lane;
namespace flag = parascope::trace::flag;

class TestAnalysis : public QObject {
  Q_OBJECT
 private slots:
  void intervals();
  void breakdownHost();
  void breakdownGpuCountsOnlyDeviceWork();
  void breakdownWithoutSteps();
  void gpuKernelsByRankAndTime();
  void bubblesGpipeTwoStages();
  void commMatrixAndTotals();
  void memoryPeaks();
  void stragglers();
  void fileIo();
};

void TestAnalysis::intervals() {
  auto u = unite({{5, 9}, {0, 2}, {1, 3}, {9, 10}, {20, 20}});
  QCOMPARE(u.size(), std::size_t{2});  // [0,3) and [5,10); [20,20) is empty
  QCOMPARE(totalLength(u), std::int64_t{8});
  QCOMPARE(lengthOutside(u, unite({{2, 6}})), std::int64_t{6});  // [0,2) + [6,10)
  QCOMPARE(totalLength(unionOf(u, unite({{3, 5}}))), std::int64_t{10});
}

void TestAnalysis::breakdownHost() {
  TraceData t;
  add(t, {.category = Category::Step, .start = 0, .end = 100, .name = "step", .step = 0});
  add(t, {.category = Category::Compute, .start = 10, .end = 40, .step = 0});
  add(t, {.category = Category::Optimizer, .start = 30, .end = 50, .step = 0});
  add(t, {.category = Category::Communication,
          .start = 45,
          .end = 70,
          .step = 0,
          .lane = lane::kCommunication});
  add(t, {.category = Category::Memcpy, .start = 60, .end = 80, .step = 0});
  add(t, {.category = Category::Runtime, .start = 0, .end = 100, .step = 0});  // not busy time
  // Step 1 has no Step span: its window is the extent of its events, [100, 130).
  add(t, {.category = Category::Compute, .start = 100, .end = 130, .step = 1});

  const auto rows = computeBreakdown(t);
  QCOMPARE(rows.size(), std::size_t{2});
  const StepBreakdown& s0 = rows[0];
  QCOMPARE(s0.step, 0);
  QCOMPARE(s0.windowNs(), std::int64_t{100});
  QCOMPARE(s0.computeNs, std::int64_t{40});               // [10,50)
  QCOMPARE(s0.communicationNs, std::int64_t{25});         // [45,70)
  QCOMPARE(s0.exposedCommunicationNs, std::int64_t{20});  // [50,70)
  QCOMPARE(s0.otherNs, std::int64_t{10});                 // [70,80)
  QCOMPARE(s0.idleNs, std::int64_t{30});                  // [0,10) + [80,100)
  QCOMPARE(s0.overlapRatio, 5.0 / 25.0);
  QVERIFY(!s0.gpu);
  const StepBreakdown& s1 = rows[1];
  QCOMPARE(s1.step, 1);
  QCOMPARE(s1.windowStartNs, std::int64_t{100});
  QCOMPARE(s1.computeNs, std::int64_t{30});
  QCOMPARE(s1.idleNs, std::int64_t{0});
  QCOMPARE(s1.overlapRatio, 0.0);
}

void TestAnalysis::breakdownGpuCountsOnlyDeviceWork() {
  TraceData t;
  add(t,
      {.rank = 1, .category = Category::Step, .start = 0, .end = 100, .name = "step", .step = 3});
  add(t, {.rank = 1, .category = Category::Compute, .start = 0, .end = 100, .step = 3});  // host
  add(t, {.rank = 1,
          .category = Category::Compute,
          .start = 20,
          .end = 30,
          .lane = lane::gpuStream(7)});
  add(t, {.rank = 1,
          .category = Category::Communication,
          .start = 25,
          .end = 60,
          .lane = lane::gpuStream(9)});
  // A kernel that ran past the step is clipped to it.
  add(t, {.rank = 1,
          .category = Category::Compute,
          .start = 90,
          .end = 150,
          .lane = lane::gpuStream(7)});
  const auto rows = computeBreakdown(t);
  QCOMPARE(rows.size(), std::size_t{1});
  QVERIFY(rows[0].gpu);
  QCOMPARE(rows[0].rank, 1);
  QCOMPARE(rows[0].computeNs, std::int64_t{20});               // [20,30) + [90,100)
  QCOMPARE(rows[0].communicationNs, std::int64_t{35});         // [25,60)
  QCOMPARE(rows[0].exposedCommunicationNs, std::int64_t{30});  // [30,60)
  QCOMPARE(rows[0].idleNs, std::int64_t{100 - 50});            // busy [20,60) + [90,100)
}

// Kernels summed by name on each rank's GPU lanes, longest total first; their share is of the
// GPU's busy time, the union of kernels, copies and memsets there (not host spans, not runtime
// calls). The text shows demangled names without their parameters.
void TestAnalysis::gpuKernelsByRankAndTime() {
  TraceData t;
  const char* gelu = "_ZN9parascope4cuda12_GLOBAL__N_117geluForwardKernelEPfPKfl";
  add(t, {.category = Category::Compute, .start = 0, .end = 100, .name = "host span"});
  add(t, {.category = Category::Runtime, .start = 0, .end = 5, .lane = lane::kRuntime});
  add(t, {.category = Category::Compute,
          .start = 10,
          .end = 20,
          .name = gelu,
          .lane = lane::gpuStream(7)});
  add(t, {.category = Category::Compute,
          .start = 15,
          .end = 45,
          .name = "sgemm",
          .lane = lane::gpuStream(8)});  // overlaps gelu: busy counts [15,20) once
  add(t, {.category = Category::Compute,
          .start = 50,
          .end = 54,
          .name = gelu,
          .lane = lane::gpuStream(7)});
  add(t, {.category = Category::Memcpy,
          .start = 60,
          .end = 70,
          .name = "Memcpy HtoD",
          .lane = lane::gpuStream(7)});
  add(t, {.rank = 1,
          .category = Category::Communication,
          .start = 0,
          .end = 8,
          .name = "ncclDevKernel_AllReduce",
          .lane = lane::gpuStream(3)});

  const std::vector<GpuKernelStats> k = computeGpuKernels(t);
  QCOMPARE(k.size(), std::size_t{3});
  QCOMPARE(k[0].name, std::string("sgemm"));
  QCOMPARE(k[0].totalNs, std::int64_t{30});
  QCOMPARE(k[0].rankBusyNs, std::int64_t{49});  // [10,45) + [50,54) + [60,70)
  QCOMPARE(k[1].name, std::string(gelu));
  QCOMPARE(k[1].launches, std::int64_t{2});
  QCOMPARE(k[1].totalNs, std::int64_t{14});
  QCOMPARE(k[1].meanNs(), std::int64_t{7});
  QCOMPARE(k[1].maxNs, std::int64_t{10});
  QCOMPARE(k[1].busyShare(), 14.0 / 49.0);
  QCOMPARE(k[2].rank, 1);
  QCOMPARE(k[2].busyShare(), 1.0);

  QCOMPARE(withoutParameters(demangledKernelName(gelu)),
           std::string("parascope::cuda::(anonymous namespace)::geluForwardKernel"));
  QCOMPARE(withoutParameters("void f<(int)2>(float*, g(int))"), std::string("void f<(int)2>"));
  QCOMPARE(withoutParameters("sgemm"), std::string("sgemm"));
  QCOMPARE(withoutParameters("unbalanced)"), std::string("unbalanced)"));
}

void TestAnalysis::breakdownWithoutSteps() {
  TraceData t;
  add(t, {.rank = 2, .category = Category::Compute, .start = 50, .end = 60});
  add(t, {.rank = 2, .category = Category::Communication, .start = 70, .end = 90});
  const auto rows = computeBreakdown(t);
  QCOMPARE(rows.size(), std::size_t{1});
  QCOMPARE(rows[0].step, -1);
  QCOMPARE(rows[0].windowNs(), std::int64_t{40});
  QCOMPARE(rows[0].idleNs, std::int64_t{10});
  QCOMPARE(rows[0].exposedCommunicationNs, std::int64_t{20});
}

// GPipe, 2 stages, 2 micro-batches, unit 10 ns:
//   stage 0 (rank 0): F0 [0,10) F1 [10,20)                         B1 [50,60) B0 [60,70)
//   stage 1 (rank 1):           F0 [10,20) F1 [20,30) B1 [30,40) B0 [40,50)
// Window [0,70): each stage computes 40 ns, so each bubble is 30 ns = 3/7.
void TestAnalysis::bubblesGpipeTwoStages() {
  TraceData t;
  auto compute = [&](int rank, std::int64_t s) {
    add(t, {.rank = rank, .category = Category::Compute, .start = s, .end = s + 10, .step = 0})
        .stage = rank;
  };
  for (std::int64_t s : {0, 10, 50, 60}) compute(0, s);
  for (std::int64_t s : {10, 20, 30, 40}) compute(1, s);
  // Waiting on a receive is not compute.
  add(t, {.rank = 1, .category = Category::Communication, .start = 0, .end = 10, .step = 0}).stage =
      1;
  const auto b = computeBubbles(t);
  QCOMPARE(b.size(), std::size_t{2});
  for (int s = 0; s < 2; ++s) {
    QCOMPARE(b[s].stage, s);
    QCOMPARE(b[s].rank, s);
    QCOMPARE(b[s].windowNs, std::int64_t{70});
    QCOMPARE(b[s].busyNs, std::int64_t{40});
    QCOMPARE(b[s].bubbleNs, std::int64_t{30});
    QCOMPARE(b[s].bubbleFraction, 30.0 / 70.0);
  }
  QVERIFY(computeBubbles(TraceData{}).empty());
  // A step all on one stage has no bubble, however its compute is spread.
  TraceData single;
  for (std::int64_t s : {0, 50}) {
    add(single, {.rank = 0, .category = Category::Compute, .start = s, .end = s + 10, .step = 1})
        .stage = 0;
  }
  QVERIFY(computeBubbles(single).empty());
}

// Rank 0 sends 100 B to rank 1; rank 1 records the receive (not counted again). A two-rank
// allReduce where each rank sends 50 B to the other, recorded as one span per rank (its total)
// plus one instant per peer. Rank 2 only ever receives.
void TestAnalysis::commMatrixAndTotals() {
  TraceData t;
  auto comm = [&](int rank, const char* name, int peer, std::int64_t bytes) -> Event& {
    Event& e = add(
        t,
        {.rank = rank, .category = Category::Communication, .start = 0, .end = 10, .name = name});
    e.peer = peer;
    e.bytes = bytes;
    return e;
  };
  comm(0, "send", 1, 100);
  comm(1, "recv", 0, 100).flags = flag::kReceive;
  comm(0, "allReduce", -1, 50);
  comm(1, "allReduce", -1, 50);
  comm(0, "allReduce", 1, 50).kind = EventKind::Instant;
  comm(1, "allReduce", 0, 50).kind = EventKind::Instant;
  comm(0, "send", 2, 7);
  comm(2, "recv", 0, 7).flags = flag::kReceive;

  const CommVolume v = computeCommVolume(t);
  QCOMPARE(v.matrix.ranks, (std::vector<std::int32_t>{0, 1, 2}));
  QCOMPARE(v.matrix.at(0, 1), std::int64_t{150});
  QCOMPARE(v.matrix.at(1, 0), std::int64_t{50});
  QCOMPARE(v.matrix.at(0, 2), std::int64_t{7});
  QCOMPARE(v.matrix.at(2, 0), std::int64_t{0});
  QCOMPARE(v.matrix.at(1, 1), std::int64_t{0});
  QCOMPARE(v.matrix.at(5, 0), std::int64_t{0});
  QCOMPARE(v.matrix.total(), std::int64_t{207});
  QCOMPARE(v.ops.size(), std::size_t{3});
  QCOMPARE(v.ops[0].name, std::string("allReduce"));
  QCOMPARE(v.ops[0].count, std::int64_t{2});
  QCOMPARE(v.ops[0].bytes, std::int64_t{100});
  QCOMPARE(v.ops[0].timeNs, std::int64_t{20});
  QCOMPARE(v.ops[1].name, std::string("recv"));
  QCOMPARE(v.ops[1].bytes, std::int64_t{0});
  QCOMPARE(v.ops[2].name, std::string("send"));
  QCOMPARE(v.ops[2].bytes, std::int64_t{107});
}

void TestAnalysis::memoryPeaks() {
  TraceData t;
  auto sample = [&](int rank, const char* name, std::int64_t time, std::int64_t bytes) {
    Event& e = add(
        t, {.rank = rank, .category = Category::Memory, .start = time, .end = time, .name = name});
    e.kind = EventKind::Counter;
    e.bytes = bytes;
  };
  sample(0, "activation", 9, 30);  // out of time order on purpose
  sample(0, "activation", 0, 10);
  sample(0, "activation", 7, 20);
  sample(0, "activation", 5, 30);
  sample(0, "parameter", 0, 100);
  sample(1, "activation", 3, 4);
  // A non-memory counter is not part of the memory timeline.
  add(t, {.category = Category::Host, .start = 1, .end = 1, .name = "queue"}).kind =
      EventKind::Counter;

  const auto m = computeMemoryTimeline(t);
  QCOMPARE(m.size(), std::size_t{3});
  QCOMPARE(m[0].name, std::string("activation"));
  QCOMPARE(m[0].rank, 0);
  QCOMPARE(m[0].points.size(), std::size_t{4});
  QCOMPARE(m[0].points[1].timeNs, std::int64_t{5});
  QCOMPARE(m[0].peakBytes, std::int64_t{30});
  QCOMPARE(m[0].peakAtNs, std::int64_t{5});  // first time the peak was reached
  QCOMPARE(m[1].name, std::string("parameter"));
  QCOMPARE(m[1].peakBytes, std::int64_t{100});
  QCOMPARE(m[2].rank, 1);
  QCOMPARE(m[2].peakBytes, std::int64_t{4});
}

// Two allReduces in group 0 on three ranks. Arrivals (start ns):
//   #0: r0 0, r1 10, r2 40    #1: r0 100, r1 130, r2 110
// Lateness: r0 0,0; r1 10,30 (mean 20, max 30, last once); r2 40,10 (mean 25, max 40, last once).
void TestAnalysis::stragglers() {
  TraceData t;
  auto coll = [&](int rank, std::int64_t start, int group, const char* name) -> Event& {
    Event& e = add(t, {.rank = rank,
                       .category = Category::Communication,
                       .start = start,
                       .end = start + 200,
                       .name = name});
    e.group = group;
    return e;
  };
  for (auto [rank, s0, s1] : {std::tuple{0, 0, 100}, {1, 10, 130}, {2, 40, 110}}) {
    coll(rank, s1, 0, "allReduce");  // recorded out of order: matching goes by start time
    coll(rank, s0, 0, "allReduce");
  }
  coll(0, 500, 1, "allReduce");      // only one rank in group 1: not matched
  coll(1, 999, 0, "send").peer = 0;  // point-to-point: not a collective
  const auto s = computeStragglers(t);
  QCOMPARE(s.size(), std::size_t{3});
  QCOMPARE(s[0].rank, 2);
  QCOMPARE(s[0].meanLatenessNs, std::int64_t{25});
  QCOMPARE(s[0].maxLatenessNs, std::int64_t{40});
  QCOMPARE(s[0].timesLast, std::int64_t{1});
  QCOMPARE(s[0].collectives, std::int64_t{2});
  QCOMPARE(s[1].rank, 1);
  QCOMPARE(s[1].meanLatenessNs, std::int64_t{20});
  QCOMPARE(s[1].maxLatenessNs, std::int64_t{30});
  QCOMPARE(s[1].timesLast, std::int64_t{1});
  QCOMPARE(s[2].rank, 0);
  QCOMPARE(s[2].totalLatenessNs, std::int64_t{0});
  QCOMPARE(s[2].timesLast, std::int64_t{0});
}

// Two files on rank 0 and one on rank 1: per (rank, file) the requests and bytes each way, the
// union of their spans (overlapping ones counted once) and their queue times matched by start;
// other categories and unknown names are not I/O.
void TestAnalysis::fileIo() {
  TraceData t;
  const auto io = [&t](std::int32_t rank, const char* name, std::int64_t start, std::int64_t end,
                       std::int64_t bytes) {
    add(t, {.rank = rank,
            .category = Category::Io,
            .start = start,
            .end = end,
            .name = name,
            .lane = parascope::trace::lane::kIo})
        .bytes = bytes;
  };
  io(0, "optimizer swap read", 0, 100, 4096);
  io(0, "queued", 0, 10, 0);
  io(0, "optimizer swap write", 50, 150, 8192);
  io(0, "queued", 50, 70, 0);
  io(0, "parameter swap read", 200, 300, 4096);
  io(1, "optimizer swap read", 0, 40, 4096);
  io(1, "something else", 0, 40, 4096);
  add(t, {.rank = 0,
          .category = Category::Compute,
          .start = 0,
          .end = 500,
          .name = "optimizer swap read"});
  const std::vector<FileIo> got = computeFileIo(t);
  QCOMPARE(got.size(), std::size_t{3});
  QCOMPARE(got[0].file, std::string("optimizer swap"));
  QCOMPARE(got[0].reads, std::int64_t{1});
  QCOMPARE(got[0].readBytes, std::int64_t{4096});
  QCOMPARE(got[0].writes, std::int64_t{1});
  QCOMPARE(got[0].writeBytes, std::int64_t{8192});
  QCOMPARE(got[0].outstandingNs, std::int64_t{150});
  QCOMPARE(got[0].queuedNs, std::int64_t{30});
  QCOMPARE(got[1].file, std::string("parameter swap"));
  QCOMPARE(got[1].outstandingNs, std::int64_t{100});
  QCOMPARE(got[1].queuedNs, std::int64_t{0});
  QCOMPARE(got[2].rank, 1);
  QCOMPARE(got[2].reads, std::int64_t{1});
  QCOMPARE(got[2].writes, std::int64_t{0});
}

QTEST_GUILESS_MAIN(TestAnalysis)
#include "test_analysis.moc"
