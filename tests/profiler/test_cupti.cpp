// CUPTI collection without a GPU: a fake activity source (as Kineto's tests mock CUPTI) feeds
// synthetic records through the conversion; a source that cannot start leaves the run
// host-only with one notice; the real source, on this GPU-less machine, fails that way too;
// and hand-made raw CUPTI records decode field by field.
#include <QtTest>

#include <thread>

#include "core/trace/trace.h"
#include "profiler/cupti/cupti_collector.h"
#ifdef PARASCOPE_HAVE_CUPTI
#include "profiler/cupti/cupti_decode.h"
#endif

using namespace parascope::profiler;
namespace trace = parascope::trace;
using K = ActivityRecord::Kind;

namespace {

class FakeSource final : public ActivitySource {
 public:
  explicit FakeSource(bool works) : works_(works) {}
  bool start(std::string* whyNot) override {
    ++starts;
    if (!works_) *whyNot = "CUPTI_ERROR_NO_DEVICE";
    return works_;
  }
  void flush(const std::function<void(const ActivityRecord&)>& sink) override {
    for (const auto& r : pending) sink(r);
    pending.clear();
  }
  void stop() override { stopped = true; }
  void pushExternalId(std::uint64_t id) override { pushed.push_back(id); }
  void popExternalId() override { ++pops; }

  std::vector<ActivityRecord> pending;
  std::vector<std::uint64_t> pushed;
  int pops = 0;
  int starts = 0;
  bool stopped = false;

 private:
  bool works_;
};

ActivityRecord rec(K kind, std::uint32_t corr, std::int64_t start, std::int64_t end,
                   std::string name, std::uint32_t stream = 0) {
  ActivityRecord r;
  r.kind = kind;
  r.correlationId = corr;
  r.startNs = start;
  r.endNs = end;
  r.name = std::move(name);
  r.streamId = stream;
  return r;
}

const Event* find(const TraceData& t, std::string_view name) {
  for (const Event& e : t.events) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

}  // namespace

class TestCupti : public QObject {
  Q_OBJECT
 private slots:
  void unavailableSourceFallsBackToHostOnce();
  void realSourceWithoutGpuFallsBack();
  void syntheticRecordsBecomeEvents();
  void correlationScopesReachTheSource();
  void decodesRawCuptiRecords();
};

void TestCupti::unavailableSourceFallsBackToHostOnce() {
  Tracer tracer;
  tracer.install();
  auto source = std::make_unique<FakeSource>(false);
  FakeSource* fake = source.get();
  std::vector<std::string> log;
  CuptiCollector cupti(tracer, std::move(source), 0,
                       [&](const std::string& l) { log.push_back(l); });
  QVERIFY(!cupti.start());
  QVERIFY(!cupti.start());  // a second attempt (e.g. next step) does not repeat the notice
  QCOMPARE(fake->starts, 2);
  QCOMPARE(log.size(), std::size_t{1});
  QCOMPARE(QString::fromStdString(log[0]),
           QString("profiler: GPU activity collection unavailable (CUPTI_ERROR_NO_DEVICE); "
                   "recording host events only"));
  { trace::Span s("host work", trace::Category::Compute); }
  cupti.flush();
  tracer.uninstall();
  const TraceData t = tracer.collect();
  QCOMPARE(t.events.size(), std::size_t{1});
  QCOMPARE(std::string(t.events[0].name), std::string("host work"));
}

void TestCupti::realSourceWithoutGpuFallsBack() {
  auto source = makeCuptiActivitySource();
  std::string why;
  if (source->start(&why)) {
    source->stop();
    QSKIP("CUPTI started: this machine has a GPU, the fallback cannot be observed here");
  }
  QVERIFY(!why.empty());
  Tracer tracer;
  std::vector<std::string> log;
  CuptiCollector cupti(tracer, makeCuptiActivitySource(), 0,
                       [&](const std::string& l) { log.push_back(l); });
  QVERIFY(!cupti.start());
  QCOMPARE(log.size(), std::size_t{1});
  QVERIFY2(QString::fromStdString(log[0]).contains("recording host events only"), log[0].c_str());
  qInfo("%s", log[0].c_str());
}

// Launch A (CUPTI correlation 5) happened inside a host scope with id 900; launch B (6) did
// not. Stream 9 belongs to rank 1, everything else to the collector's rank 0.
void TestCupti::syntheticRecordsBecomeEvents() {
  Tracer tracer;
  auto source = std::make_unique<FakeSource>(true);
  FakeSource* fake = source.get();
  CuptiCollector cupti(tracer, std::move(source), 0);
  cupti.converter().mapStream(9, 1);
  QVERIFY(cupti.start());
  ActivityRecord ext;
  ext.kind = K::ExternalCorrelation;
  ext.correlationId = 5;
  ext.externalId = 900;
  ActivityRecord copy = rec(K::Memcpy, 7, 300, 400, "Memcpy HtoD", 7);
  copy.bytes = 4096;
  ActivityRecord set = rec(K::Memset, 8, 400, 410, "Memset", 7);
  set.bytes = 64;
  // The kernel arrives before the record that maps its correlation: order must not matter.
  fake->pending = {rec(K::Kernel, 5, 100, 200, "gemm", 7),
                   ext,
                   rec(K::Runtime, 5, 90, 95, "cudaLaunchKernel"),
                   rec(K::Kernel, 6, 210, 260, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 9),
                   rec(K::Runtime, 6, 96, 99, "cudaLaunchKernel_B"),
                   copy,
                   set,
                   rec(K::Runtime, 0, 500, 600, "cudaStreamSynchronize"),
                   rec(K::Overhead, 0, 10, 20, "CUPTI overhead")};
  cupti.flush();
  const TraceData t = tracer.collect();
  QCOMPARE(t.events.size(), std::size_t{8});

  const Event* gemm = find(t, "gemm");
  QVERIFY(gemm);
  QCOMPARE(static_cast<int>(gemm->category), static_cast<int>(trace::Category::Compute));
  QCOMPARE(gemm->lane, trace::lane::gpuStream(7));
  QCOMPARE(gemm->rank, 0);
  QCOMPARE(gemm->correlation, std::uint64_t{900});  // linked to the host span
  QCOMPARE(gemm->startNs, std::int64_t{100});
  QCOMPARE(gemm->endNs, std::int64_t{200});
  const Event* launchA = find(t, "cudaLaunchKernel");
  QCOMPARE(launchA->correlation, std::uint64_t{900});
  QCOMPARE(launchA->flags, std::uint8_t{0});  // the host span starts the flow, not the call
  QCOMPARE(launchA->lane, trace::lane::kRuntime);

  const Event* nccl = find(t, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  QCOMPARE(static_cast<int>(nccl->category), static_cast<int>(trace::Category::Communication));
  QCOMPARE(nccl->rank, 1);
  QCOMPARE(nccl->lane, trace::lane::gpuStream(9));
  QCOMPARE(nccl->correlation, kCuptiCorrelationBit | 6);
  const Event* launchB = find(t, "cudaLaunchKernel_B");
  QCOMPARE(launchB->correlation, kCuptiCorrelationBit | 6);
  QCOMPARE(launchB->flags, trace::flag::kFlowSource);

  QCOMPARE(find(t, "Memcpy HtoD")->bytes, std::int64_t{4096});
  QCOMPARE(static_cast<int>(find(t, "Memcpy HtoD")->category),
           static_cast<int>(trace::Category::Memcpy));
  QCOMPARE(find(t, "Memset")->bytes, std::int64_t{64});
  QCOMPARE(static_cast<int>(find(t, "cudaStreamSynchronize")->category),
           static_cast<int>(trace::Category::Sync));
  QCOMPARE(static_cast<int>(find(t, "CUPTI overhead")->category),
           static_cast<int>(trace::Category::Overhead));
  cupti.stop();
  QVERIFY(fake->stopped);
}

void TestCupti::correlationScopesReachTheSource() {
  Tracer tracer;
  tracer.install();
  auto source = std::make_unique<FakeSource>(true);
  FakeSource* fake = source.get();
  CuptiCollector cupti(tracer, std::move(source), 0);
  QVERIFY(cupti.start());
  const std::uint64_t id = trace::newCorrelationId();
  {
    trace::Span launch("matmul", trace::Category::Compute);
    launch.correlation(id).flags(trace::flag::kFlowSource);
    trace::ScopedCorrelation scope(id);
  }
  QCOMPARE(fake->pushed, std::vector<std::uint64_t>{id});
  QCOMPARE(fake->pops, 1);
  QVERIFY(trace::newCorrelationId() > id);
  cupti.stop();
  { trace::ScopedCorrelation after(id + 1); }  // stopped: no longer forwarded
  QCOMPARE(fake->pushed.size(), std::size_t{1});
  tracer.uninstall();
}

void TestCupti::decodesRawCuptiRecords() {
#ifndef PARASCOPE_HAVE_CUPTI
  QSKIP("built without CUPTI");
#else
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1000;
  k.end = 3000;
  k.deviceId = 1;
  k.streamId = 14;
  k.correlationId = 77;
  k.name = "ncclKernel_AllGather";
  ActivityRecord r;
  QVERIFY(decodeCuptiRecord(reinterpret_cast<const CUpti_Activity*>(&k), 50, &r));
  QCOMPARE(static_cast<int>(r.kind), static_cast<int>(K::Kernel));
  QCOMPARE(r.startNs, std::int64_t{1050});
  QCOMPARE(r.endNs, std::int64_t{3050});
  QCOMPARE(r.deviceId, 1u);
  QCOMPARE(r.streamId, 14u);
  QCOMPARE(r.correlationId, 77u);
  QCOMPARE(r.name, std::string("ncclKernel_AllGather"));

  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  m.bytes = 1 << 20;
  m.start = 5;
  m.end = 9;
  QVERIFY(decodeCuptiRecord(reinterpret_cast<const CUpti_Activity*>(&m), 0, &r));
  QCOMPARE(static_cast<int>(r.kind), static_cast<int>(K::Memcpy));
  QCOMPARE(r.bytes, std::uint64_t{1} << 20);
  QCOMPARE(r.name, std::string("Memcpy DtoH"));

  CUpti_ActivityExternalCorrelation x{};
  x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  x.correlationId = 77;
  x.externalId = 123456789012ULL;
  QVERIFY(decodeCuptiRecord(reinterpret_cast<const CUpti_Activity*>(&x), 0, &r));
  QCOMPARE(static_cast<int>(r.kind), static_cast<int>(K::ExternalCorrelation));
  QCOMPARE(r.externalId, std::uint64_t{123456789012ULL});

  CUpti_ActivityAPI api{};
  api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  api.correlationId = 77;
  api.start = 1;
  api.end = 2;
  QVERIFY(decodeCuptiRecord(reinterpret_cast<const CUpti_Activity*>(&api), 0, &r));
  QCOMPARE(static_cast<int>(r.kind), static_cast<int>(K::Runtime));
  QVERIFY2(QString::fromStdString(r.name).startsWith("cudaLaunchKernel"), r.name.c_str());

  CUpti_ActivityKernel10 unknown{};
  unknown.kind = CUPTI_ACTIVITY_KIND_MARKER;
  QVERIFY(!decodeCuptiRecord(reinterpret_cast<const CUpti_Activity*>(&unknown), 0, &r));
#endif
}

QTEST_GUILESS_MAIN(TestCupti)
#include "test_cupti.moc"
