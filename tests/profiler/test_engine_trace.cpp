// What the engine records, checked against the truth: the communication matrix of real
// collectives on in-process ranks equals the communication layer's own per-peer counts and the
// bytes worked out by hand for each algorithm; memory peaks from a traced training run equal
// the Allocator's; every read and write of a swapped optimizer state is a span on the I/O lane
// and the swap file's bytes the rank's nvme counter; tracing changes no loss bit; clock alignment
// recovers injected skews; a TraceRecording writes a file that reads back. Runs under TSan (label
// threads).
#include <QtTest>

#include <unistd.h>

#include <bit>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "core/comm/launch.h"
#include "core/common/error.h"
#include "core/plan/memory_estimate.h"
#include "core/session/session.h"
#include "core/trace/trace.h"
#include "profiler/analysis/comm_volume.h"
#include "profiler/analysis/file_io.h"
#include "profiler/analysis/memory_timeline.h"
#include "profiler/clock_sync.h"
#include "profiler/io/chrome_import.h"
#include "profiler/trace_recording.h"
#include "profiler/tracer.h"
#include "tests/train/dp_harness.h"

using namespace parascope;
using namespace parascope::profiler;

namespace {

using Matrix = std::vector<std::vector<std::int64_t>>;

// Runs the same mix on every rank of an n-rank world: a direct all-reduce (4000 B, under the
// 32 KiB direct limit), a chunked one (80000 B), an all-gather of 300 floats per rank, a
// reduce-scatter of 500 per rank, a broadcast of 256 from rank 0 and a ring of sends of 100.
// Returns the bytes each rank's own CommRecords say it sent to each peer.
Matrix runCollectiveMix(int n) {
  Matrix recorded(static_cast<std::size_t>(n), std::vector<std::int64_t>(n, 0));
  std::mutex mutex;
  runInProcess(n, [&](Communicator& world) {
    const int r = world.rank();
    const trace::ScopedContext ctx({.rank = r});
    world.setObserver([&](const CommRecord& rec) {
      std::lock_guard lock(mutex);
      for (std::size_t p = 0; p < rec.sentTo.size(); ++p)
        recorded[static_cast<std::size_t>(r)][p] += static_cast<std::int64_t>(rec.sentTo[p]);
    });
    std::vector<float> a(20000, 1.0f), b(20000 * static_cast<std::size_t>(n));
    world.allReduce(a.data(), a.data(), 1000, DType::F32, ReduceOp::Sum);
    world.allReduce(a.data(), a.data(), 20000, DType::F32, ReduceOp::Sum);
    world.allGather(a.data(), b.data(), 300, DType::F32);
    world.reduceScatter(b.data(), a.data(), 500, DType::F32, ReduceOp::Sum);
    world.broadcast(a.data(), 256, DType::F32, 0);
    CommHandle s = world.sendAsync(a.data(), 100, DType::F32, (r + 1) % n);
    world.recv(b.data(), 100, DType::F32, (r + n - 1) % n);
    s.wait();
    world.setObserver({});
  });
  return recorded;
}

// By hand, rank r -> peer p (p != r): direct all-reduce 4000; chunked all-reduce: p's chunk
// plus r's chunk (20000 floats in chunks of ceil(20000/n) rounded up to 16 floats); all-gather
// 1200; reduce-scatter 2000; broadcast 1024 from rank 0 only; send 400 to (r + 1) % n.
//   n = 2: chunks 10000, 10000 floats -> 80000 B per pair.
//   n = 4: chunks 5008, 5008, 5008, 4976 floats -> pairs with rank 3: 39936 B, others 40064 B.
Matrix expectedMatrix(int n) {
  if (n == 2) {
    return {{0, 4000 + 80000 + 1200 + 2000 + 1024 + 400},  // 88624
            {4000 + 80000 + 1200 + 2000 + 400, 0}};        // 87600
  }
  return {{0, 48688, 48288, 48160},
          {47264, 0, 47664, 47136},
          {47264, 47264, 0, 47536},
          {47536, 47136, 47136, 0}};
}

std::int64_t counterPeak(const std::vector<MemorySeries>& series, std::int32_t rank,
                         std::string_view name) {
  for (const MemorySeries& s : series) {
    if (s.rank == rank && s.name == name) return s.peakBytes;
  }
  return 0;  // never allocated: no counter
}

// `steps` traced steps of `config` on two in-process ranks, each with its own allocator.
TraceData traceTraining(const TrainConfig& config, int steps) {
  Tracer tracer;
  tracer.install();
  runInProcess(2, [&](Communicator& world) {
    const trace::ScopedContext ctx({.rank = world.rank()});
    Allocator allocator;
    dptest::train(config, steps, world, &allocator);
  });
  tracer.uninstall();
  return tracer.collect();
}

// Per rank, how many compute spans of each name one traced training step records.
std::vector<std::map<std::string, int>> computeSpansOfOneStep(const TrainConfig& config) {
  const int n = config.parallel.worldSize();
  Tracer tracer;
  tracer.install();
  runInProcess(n, [&](Communicator& world) {
    const trace::ScopedContext ctx({.rank = world.rank()});
    dptest::train(config, 1, world);
  });
  tracer.uninstall();
  const TraceData trace = tracer.collect();
  std::vector<std::map<std::string, int>> counts(static_cast<std::size_t>(n));
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::Span && e.category == Category::Compute)
      counts[static_cast<std::size_t>(e.rank)][std::string(e.name)] += 1;
  }
  return counts;
}

}  // namespace

class TestEngineTrace : public QObject {
  Q_OBJECT
 private slots:
  void cleanupTestCase() { std::filesystem::remove(dptest::textFixture()); }
  void commMatrixEqualsAccountingAndHandCount_data();
  void commMatrixEqualsAccountingAndHandCount();
  void asyncSpanCoversIssueToCompletion();
  void subGroupPeersAreWorldRanks();
  void memoryPeaksEqualAllocatorPeaks();
  void swapIoAndTheDiskAreTraced();
  void parameterSwapIsTraced();
  void tracingLeavesLossesBitIdentical();
  void clockOffsetRecoversInjectedSkew();
  void recordingWritesFileOnlyWhenFinished();
  void instructionTagsReachTheFile();
  void oneSpanPerOperationUnderTensorParallelism_data();
  void oneSpanPerOperationUnderTensorParallelism();
  void evaluationHasASpan();
  void memoryCountersFollowEachRankThroughASwitch();
};

void TestEngineTrace::commMatrixEqualsAccountingAndHandCount_data() {
  QTest::addColumn<int>("n");
  QTest::newRow("world 2") << 2;
  QTest::newRow("world 4") << 4;
}

void TestEngineTrace::commMatrixEqualsAccountingAndHandCount() {
  QFETCH(int, n);
  Tracer tracer;
  tracer.install();
  const Matrix recorded = runCollectiveMix(n);
  tracer.uninstall();
  const TraceData t = tracer.collect();
  const CommVolume v = computeCommVolume(t);
  const Matrix want = expectedMatrix(n);
  for (int r = 0; r < n; ++r) {
    for (int p = 0; p < n; ++p) {
      const auto ur = static_cast<std::size_t>(r), up = static_cast<std::size_t>(p);
      QCOMPARE(recorded[ur][up], want[ur][up]);
      QCOMPARE(v.matrix.at(r, p), want[ur][up]);
    }
  }
  std::map<std::string, std::int64_t> counts;
  for (const OpTotal& op : v.ops) counts[op.name] = op.count;
  QCOMPARE(counts["allReduce"], 2 * n);
  QCOMPARE(counts["allGather"], n);
  QCOMPARE(counts["reduceScatter"], n);
  QCOMPARE(counts["broadcast"], n);
  QCOMPARE(counts["send"], n);
  QCOMPARE(counts["recv"], n);
  // Each send and its receive share one correlation id; the send starts the flow.
  std::map<std::uint64_t, std::pair<const Event*, const Event*>> flows;
  for (const Event& e : t.events) {
    if (std::string_view(e.name) == "send") flows[e.correlation].first = &e;
    if (std::string_view(e.name) == "recv") flows[e.correlation].second = &e;
  }
  QCOMPARE(static_cast<int>(flows.size()), n);
  for (const auto& [id, pair] : flows) {
    QVERIFY(id != 0 && pair.first && pair.second);
    QCOMPARE(pair.first->peer, pair.second->rank);
    QCOMPARE(pair.second->peer, pair.first->rank);
    QCOMPARE(pair.first->flags, trace::flag::kFlowSource);
    QCOMPARE(pair.second->flags, trace::flag::kReceive);
    QCOMPARE(pair.second->bytes, std::int64_t{400});
  }
}

void TestEngineTrace::asyncSpanCoversIssueToCompletion() {
  Tracer tracer;
  tracer.install();
  runInProcess(2, [&](Communicator& world) {
    const trace::ScopedContext ctx({.rank = world.rank(), .step = 3});
    std::vector<float> a(64, 1.0f);
    CommHandle h = world.allReduceAsync(a.data(), a.data(), a.size(), DType::F32, ReduceOp::Sum);
    trace::instant("issued", trace::Category::Host);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    trace::instant("waiting", trace::Category::Host);
    h.wait();
  });
  tracer.uninstall();
  const TraceData t = tracer.collect();
  for (std::int32_t rank : {0, 1}) {
    const Event *span = nullptr, *issued = nullptr, *waiting = nullptr;
    for (const Event& e : t.events) {
      if (e.rank != rank) continue;
      const std::string_view name(e.name);
      if (name == "allReduce" && e.kind == EventKind::Span) span = &e;
      if (name == "issued") issued = &e;
      if (name == "waiting") waiting = &e;
    }
    QVERIFY(span && issued && waiting);
    QVERIFY(span->startNs <= issued->startNs);
    QVERIFY(span->endNs >= waiting->startNs);
    QCOMPARE(span->lane, trace::lane::kCommunication);
    QCOMPARE(span->category, Category::Communication);
    QCOMPARE(span->group, 0);
    QCOMPARE(span->step, 3);
    QCOMPARE(span->bytes, std::int64_t{256});
  }
}

// Groups {0, 2} and {1, 3}: group rank 0 sends to group rank 1, which is world rank r + 2.
void TestEngineTrace::subGroupPeersAreWorldRanks() {
  Tracer tracer;
  tracer.install();
  runInProcess(4, [&](Communicator& world) {
    const trace::ScopedContext ctx({.rank = world.rank()});
    Communicator pair = world.split(world.rank() % 2, world.rank());
    float x = 1.0f;
    if (pair.rank() == 0) {
      pair.send(&x, 1, DType::F32, 1);
    } else {
      pair.recv(&x, 1, DType::F32, 0);
    }
    pair.allReduce(&x, &x, 1, DType::F32, ReduceOp::Sum);
  });
  tracer.uninstall();
  const CommVolume v = computeCommVolume(tracer.collect());
  // The send (4 B) plus the all-reduce (4 B each way) between world ranks 0-2 and 1-3 only.
  for (int r = 0; r < 4; ++r) {
    for (int p = 0; p < 4; ++p) {
      const std::int64_t want = (r % 2 != p % 2 || r == p) ? 0 : (r < p ? 8 : 4);
      QCOMPARE(v.matrix.at(r, p), want);
    }
  }
}

void TestEngineTrace::memoryPeaksEqualAllocatorPeaks() {
  const TrainConfig config = dptest::tinyConfig({"data_parallel_size=2"});
  std::array<std::array<std::int64_t, kMemoryCategoryCount>, 2> peaks{};
  Tracer tracer;
  tracer.install();
  runInProcess(2, [&](Communicator& world) {
    const trace::ScopedContext ctx({.rank = world.rank()});
    Allocator allocator;
    dptest::train(config, 2, world, &allocator);
    for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
      peaks[static_cast<std::size_t>(world.rank())][c] =
          allocator.peakBytes(static_cast<MemoryCategory>(c));
    }
  });
  tracer.uninstall();
  const auto series = computeMemoryTimeline(tracer.collect());
  for (std::int32_t rank : {0, 1}) {
    for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
      const auto name = memoryCategoryName(static_cast<MemoryCategory>(c));
      QCOMPARE(counterPeak(series, rank, name), peaks[static_cast<std::size_t>(rank)][c]);
    }
    QVERIFY(peaks[static_cast<std::size_t>(rank)][0] > 0);  // parameters were allocated
  }
}

// ZeRO-2 over two ranks with the optimizer state swapped in sub-groups of 1000 elements: each
// rank's shard of 17,088 elements is 18 records of two f32 moments, each padded to 4 KiB. The
// optimizer writes them all once when it is built, then each of 3 steps reads and writes every
// record: 54 reads and 72 writes per rank, one span each on the I/O lane named for the
// optimizer's file, with the record's bytes and a "queued" child from the same start; each step
// asks for its update's first sub-groups as it begins. The nvme counter holds the file's bytes,
// the memory estimate's swapBytes, while the file exists, and 0 after.
void TestEngineTrace::swapIoAndTheDiskAreTraced() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("parascope-test-swap-trace-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const TrainConfig config =
      dptest::tinyConfig({"data_parallel_size=2", "zero_optimization.stage=2",
                          "zero_optimization.offload_optimizer.device=nvme",
                          "zero_optimization.offload_optimizer.nvme_path=" + dir.string(),
                          "zero_optimization.sub_group_size=1000"});
  constexpr std::int64_t kRecord = 2 * 4096;
  QCOMPARE(estimateRankMemory(config, 0, 2).front().swapBytes, 18.0 * kRecord);
  const TraceData trace = traceTraining(config, 3);
  std::filesystem::remove_all(dir);
  QCOMPARE(trace.laneName(0, trace::lane::kIo), std::string("I/O"));
  for (std::int32_t rank : {0, 1}) {
    std::map<std::string, int> spans;
    std::vector<const Event*> requests, queued;
    for (const Event& e : trace.events) {
      if (e.rank != rank || e.lane != trace::lane::kIo) continue;
      QCOMPARE(e.category, Category::Io);
      QCOMPARE(e.kind, EventKind::Span);
      ++spans[e.name];
      (std::string_view(e.name) == "queued" ? queued : requests).push_back(&e);
    }
    QCOMPARE(spans,
             (std::map<std::string, int>{
                 {"optimizer swap read", 54}, {"optimizer swap write", 72}, {"queued", 126}}));
    for (const Event* e : requests) QCOMPARE(e->bytes, kRecord);
    // Events are sorted by start, the longer first: each request's queue time follows it.
    for (const Event* q : queued) {
      const auto parent = std::find_if(requests.begin(), requests.end(), [q](const Event* r) {
        return r->startNs == q->startNs && r->endNs >= q->endNs;
      });
      QVERIFY(parent != requests.end());
    }
    const std::vector<MemorySeries> series = computeMemoryTimeline(trace);
    const auto disk = std::find_if(series.begin(), series.end(), [rank](const MemorySeries& s) {
      return s.rank == rank && s.name == kDiskCounterName;
    });
    QVERIFY(disk != series.end());
    QCOMPARE(disk->peakBytes, 18 * kRecord);
    QCOMPARE(disk->points.size(), std::size_t{2});
    QCOMPARE(disk->points.back().bytes, std::int64_t{0});
    // Each step asks for the update's first three sub-groups (4 buffers: 2 read ahead of the
    // one updated) when it begins, so the disk reads them during the passes.
    std::vector<std::pair<std::int64_t, std::int64_t>> passes;  // step start, update start
    for (const Event& e : trace.events) {
      if (e.rank != rank || e.kind != EventKind::Span) continue;
      if (std::string_view(e.name) == "train_step") passes.emplace_back(e.startNs, 0);
      if (std::string_view(e.name) == "optimizer_step") passes.back().second = e.startNs;
    }
    // The I/O analysis (analyze's file_io table) sums the same requests.
    const std::vector<FileIo> files = computeFileIo(trace);
    const auto mine = std::find_if(files.begin(), files.end(),
                                   [rank](const FileIo& f) { return f.rank == rank; });
    QVERIFY(mine != files.end());
    QCOMPARE(mine->file, std::string("optimizer swap"));
    QCOMPARE(mine->reads, std::int64_t{54});
    QCOMPARE(mine->readBytes, 54 * kRecord);
    QCOMPARE(mine->writes, std::int64_t{72});
    QCOMPARE(mine->writeBytes, 72 * kRecord);
    QVERIFY(mine->outstandingNs > 0);
    QCOMPARE(passes.size(), std::size_t{3});
    for (const auto& [begin, update] : passes) {
      const auto early = std::count_if(requests.begin(), requests.end(), [&](const Event* e) {
        return std::string_view(e->name) == "optimizer swap read" && e->startNs >= begin &&
               e->startNs < update;
      });
      QCOMPARE(early, std::ptrdiff_t{3});
    }
  }
}

// ZeRO-3 over two ranks with the parameter shard swapped, one step: every record is written
// when the shard is built and again by the update's sweep, which reads each first; the forward
// reads each before its gather (the backward reads some again). The nvme counter is the
// parameter file's bytes.
void TestEngineTrace::parameterSwapIsTraced() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("parascope-test-param-trace-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const TrainConfig config =
      dptest::tinyConfig({"data_parallel_size=2", "zero_optimization.stage=3",
                          "zero_optimization.offload_param.device=nvme",
                          "zero_optimization.offload_param.nvme_path=" + dir.string()});
  const MemoryEstimate e = estimateRankMemory(config, 0, 2).front();
  const auto file = static_cast<std::int64_t>(e.parameterSwapBytes);
  QVERIFY(file > 0);
  QCOMPARE(e.swapBytes, e.parameterSwapBytes);
  const TraceData trace = traceTraining(config, 1);
  std::filesystem::remove_all(dir);
  const std::vector<MemorySeries> series = computeMemoryTimeline(trace);
  for (std::int32_t rank : {0, 1}) {
    std::int64_t read = 0, written = 0;
    for (const Event& e : trace.events) {
      if (e.rank != rank || e.lane != trace::lane::kIo) continue;
      const std::string_view name = e.name;
      if (name == "parameter swap read") read += e.bytes;
      if (name == "parameter swap write") written += e.bytes;
      QVERIFY2(name == "parameter swap read" || name == "parameter swap write" || name == "queued",
               e.name);
    }
    QCOMPARE(written, 2 * file);
    QVERIFY2(read >= 2 * file, qPrintable(QString("%1 of %2").arg(read).arg(file)));
    QCOMPARE(counterPeak(series, rank, kDiskCounterName), file);
  }
}

void TestEngineTrace::tracingLeavesLossesBitIdentical() {
  const TrainConfig config = dptest::tinyConfig({"data_parallel_size=2"});
  std::size_t tracedEvents = 0;
  auto run = [&](bool traced) {
    Tracer tracer;
    if (traced) tracer.install();
    std::array<dptest::RunRecord, 2> out;
    runInProcess(2, [&](Communicator& world) {
      const trace::ScopedContext ctx({.rank = world.rank()});
      Allocator allocator;
      out[static_cast<std::size_t>(world.rank())] = dptest::train(config, 3, world, &allocator);
    });
    tracer.uninstall();
    if (traced) tracedEvents = tracer.collect().events.size();
    return out;
  };
  const auto plain = run(false);
  const auto traced = run(true);
  QVERIFY(tracedEvents > 100);
  for (std::size_t r = 0; r < 2; ++r) {
    QCOMPARE(traced[r].losses.size(), std::size_t{3});
    for (std::size_t i = 0; i < 3; ++i) {
      QCOMPARE(std::bit_cast<std::uint64_t>(traced[r].losses[i]),
               std::bit_cast<std::uint64_t>(plain[r].losses[i]));
    }
    QVERIFY(traced[r].parameters == plain[r].parameters);
  }
}

// Rank r's clock runs skew[r] ns from the shared steady clock; the estimate must recover rank
// 0's minus rank r's skew to within the residual it reports.
void TestEngineTrace::clockOffsetRecoversInjectedSkew() {
  const std::array<std::int64_t, 3> skew = {1'000'000, 6'000'000, -3'000'000};
  std::array<ClockOffset, 3> got;
  runInProcess(3, [&](Communicator& world) {
    const auto r = static_cast<std::size_t>(world.rank());
    got[r] = estimateClockOffset(world, 16, [&, r] { return trace::steadyNs() + skew[r]; });
  });
  std::int64_t worst = 0;
  for (std::size_t r = 0; r < 3; ++r) {
    const std::int64_t truth = skew[0] - skew[r];
    QVERIFY2(std::llabs(got[r].offsetNs - truth) <= got[r].residualNs,
             qPrintable(QString("rank %1: offset %2, truth %3, residual %4")
                            .arg(r)
                            .arg(got[r].offsetNs)
                            .arg(truth)
                            .arg(got[r].residualNs)));
    worst = std::max(worst, got[r].residualNs);
  }
  QCOMPARE(got[0].offsetNs, std::int64_t{0});
  QCOMPARE(got[0].residualNs, std::int64_t{0});
  for (const ClockOffset& c : got) QCOMPARE(c.worldResidualNs, worst);
  QVERIFY(got[1].residualNs > 0);
  Communicator self;
  QVERIFY_THROWS_EXCEPTION(UserError, estimateClockOffset(self, 0));
}

void TestEngineTrace::recordingWritesFileOnlyWhenFinished() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("parascope-test-recording-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "run.json").string();
  { TraceRecording abandoned(path, 1); }
  QVERIFY(!std::filesystem::exists(path));
  {
    TraceRecording recording(path, 2);
    recording.setClockOffset({.offsetNs = 1000, .residualNs = 7, .worldResidualNs = 9});
    std::thread other([] {
      const trace::ScopedContext ctx({.rank = 1});
      for (int i = 0; i < 40000; ++i) trace::Span s("work", Category::Compute);
    });
    for (int i = 0; i < 40000; ++i) trace::Span s("work", Category::Compute);
    other.join();
    QCOMPARE(recording.finish(), path);
  }
  const TraceData t = importChromeTrace(path);
  QCOMPARE(t.events.size(), std::size_t{80000});
  QCOMPARE(t.worldSize, 2);
  QCOMPARE(t.clockResidualNs, std::int64_t{9});
  QCOMPARE(t.ranks(), (std::vector<std::int32_t>{0, 1}));
  std::filesystem::remove_all(dir);
}

// What the pipeline executor does around an instruction, through export and import: the
// instruction's span and the work inside it carry stage, micro-batch and instruction id; the
// tags end with the scope while rank and step stay.
void TestEngineTrace::instructionTagsReachTheFile() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("parascope-test-instruction-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "run.json").string();
  {
    TraceRecording recording(path, 4);
    const trace::ScopedContext ctx({.rank = 2, .step = 5});
    {
      const trace::ScopedInstruction tags(1, 3, 17);
      const trace::Span instruction("forward", Category::Instruction);
      const trace::Span work("matmul_forward", Category::Compute);
    }
    { const trace::Span after("optimizer_step", Category::Optimizer); }
    recording.finish();
  }
  const TraceData t = importChromeTrace(path);
  QCOMPARE(t.events.size(), std::size_t{3});
  for (const Event& e : t.events) {
    const bool inside = std::string_view(e.name) != "optimizer_step";
    QCOMPARE(e.rank, 2);
    QCOMPARE(e.step, 5);
    QCOMPARE(e.stage, inside ? 1 : -1);
    QCOMPARE(e.microBatch, inside ? 3 : -1);
    QCOMPARE(e.instruction, inside ? 17 : -1);
  }
  std::filesystem::remove_all(dir);
}

// A kernel over a tensor-parallel rank's rows is one span, as on one rank, not one per row: a
// kernel both runs records no more spans than on one rank, and one only tensor parallelism runs
// (the vocabulary split, a row-parallel bias) once per layer and pass at most.
void TestEngineTrace::oneSpanPerOperationUnderTensorParallelism_data() {
  QTest::addColumn<QString>("overrides");
  QTest::newRow("t2") << "tensor_model_parallel_size=2";
  QTest::newRow("t2 sequence parallel") << "tensor_model_parallel_size=2 sequence_parallel=true";
}

void TestEngineTrace::oneSpanPerOperationUnderTensorParallelism() {
  QFETCH(QString, overrides);
  const std::map<std::string, int> one = computeSpansOfOneStep(dptest::tinyConfig({}))[0];
  std::vector<std::string> split;
  for (const QString& o : overrides.split(' ')) split.push_back(o.toStdString());
  const TrainConfig config = dptest::tinyConfig(split);
  const int passes = 2 * (config.model.gpt.numLayers + 2) * config.gradientAccumulation;
  for (const auto& rank : computeSpansOfOneStep(config)) {
    QVERIFY(!rank.empty());
    for (const auto& [name, count] : rank) {
      const auto alone = one.find(name);
      const int most = alone == one.end() ? passes : alone->second;
      QVERIFY2(count <= most, qPrintable(QString("%1: %2 spans in one step, at most %3 expected")
                                             .arg(QString::fromStdString(name))
                                             .arg(count)
                                             .arg(most)));
    }
  }
}

// Each evaluation is one "evaluate" span on the host lane of every rank, outside any step span.
void TestEngineTrace::evaluationHasASpan() {
  const TrainConfig config =
      dptest::tinyConfig({"data_parallel_size=2", "eval_interval=1", "eval_iters=1"});
  std::array<std::size_t, 2> evals{};
  Tracer tracer;
  tracer.install();
  runInProcess(2, [&](Communicator& world) {
    const trace::ScopedContext ctx({.rank = world.rank()});
    evals[static_cast<std::size_t>(world.rank())] =
        dptest::train(config, 2, {.world = world, .evaluate = true}).evals.size();
  });
  tracer.uninstall();
  const TraceData trace = tracer.collect();
  for (std::int32_t rank : {0, 1}) {
    std::size_t spans = 0;
    for (const Event& e : trace.events) {
      if (e.rank != rank || std::string_view(e.name) != "evaluate") continue;
      QCOMPARE(e.kind, EventKind::Span);
      QCOMPARE(e.lane, trace::lane::kHost);
      QVERIFY(e.category != Category::Step);
      spans += 1;
    }
    QVERIFY(evals[static_cast<std::size_t>(rank)] > 0);
    QCOMPARE(spans, evals[static_cast<std::size_t>(rank)]);
  }
}

QTEST_GUILESS_MAIN(TestEngineTrace)
// A live switch from one rank to two (ZeRO-3): each rank's memory counters count its own live
// bytes. They used to drop to 0 on rank 0 after the switch (the retiring layout's frees went to
// the same track as the new layout's allocations, each with its own total), and the end-of-run
// frees of every rank were recorded on rank 0 (the thread freeing them).
void TestEngineTrace::memoryCountersFollowEachRankThroughASwitch() {
  const TrainConfig first = dptest::tinyConfig({"train_iters=6", "eval_interval=0"});
  const TrainConfig second = dptest::tinyConfig(
      {"train_iters=6", "eval_interval=0", "data_parallel_size=2", "zero_optimization.stage=3"});
  Session session(first);
  struct Switcher : SessionObserver {
    Session* session;
    TrainConfig next;
    void onStep(const StepReport& r) override {
      if (r.step == 3) session->switchStrategy(next);
    }
  } switcher;
  switcher.session = &session;
  switcher.next = second;
  session.addObserver(switcher);
  Tracer tracer;
  tracer.install();
  const FinishedReport finished = session.run();
  tracer.uninstall();
  QVERIFY2(!finished.failed, session.error() ? session.error()->reason.c_str() : "");
  const TraceData trace = tracer.collect();
  // Per rank and counter, the samples in time order; and where each rank's last step ended.
  std::map<std::pair<int, std::string>, std::vector<std::pair<std::int64_t, std::int64_t>>> samples;
  std::map<int, std::int64_t> lastStepEnd;
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::Counter && e.category == Category::Memory)
      samples[{e.rank, std::string(e.name)}].push_back({e.startNs, e.bytes});
    if (e.kind == EventKind::Span && e.category == Category::Step &&
        std::string_view(e.name) == "train_step")
      lastStepEnd[e.rank] = std::max(lastStepEnd[e.rank], e.endNs);
  }
  QCOMPARE(static_cast<int>(lastStepEnd.size()), 2);
  for (int rank = 0; rank < 2; ++rank) {
    for (const char* name : {"parameter", "optimizer_state"}) {
      auto& series = samples[{rank, name}];
      QVERIFY2(!series.empty(), name);
      std::stable_sort(series.begin(), series.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      // Held from the first allocation to the last step's end, never negative, and all given
      // back when the run ends.
      for (const auto& [t, bytes] : series) {
        QVERIFY2(bytes >= 0, name);
        if (t <= lastStepEnd[rank] && t > series.front().first)
          QVERIFY2(bytes > 0, qPrintable(QStringLiteral("rank %1 %2 at 0 before its last step "
                                                        "ended")
                                             .arg(rank)
                                             .arg(name)));
      }
      QCOMPARE(series.back().second, std::int64_t{0});
    }
  }
  // Rank 1 exists only after the switch.
  const auto firstSample = [&](int rank) {
    return samples[std::make_pair(rank, std::string("parameter"))].front().first;
  };
  QVERIFY(firstSample(1) > firstSample(0));
}

#include "test_engine_trace.moc"
