// CUPTI collection without a GPU: a fake activity source (as Kineto's tests mock CUPTI) feeds
// synthetic records through the conversion; a source that cannot start leaves the run
// host-only with one notice; the real source, on this GPU-less machine, fails that way too;
// and hand-made raw CUPTI records decode field by field.
#include <QtTest>

#include <thread>

#include <QTemporaryDir>

#include <fstream>
#include <mutex>
#include <sstream>

#include "core/trace/clock.h"
#include "core/trace/trace.h"
#include "profiler/cupti/buffer_pool.h"
#include "profiler/cupti/cupti_collector.h"
#include "profiler/io/chrome_import.h"
#include "profiler/trace_recording.h"
#ifdef PARASCOPE_HAVE_CUPTI
#include "profiler/cupti/cupti_decode.h"
#endif

using namespace parascope::profiler;
namespace trace = parascope::trace;
using K = ActivityRecord::Kind;

namespace {

// Records, ids and counts under one lock: a recording's drain thread flushes while a test adds.
class FakeSource final : public ActivitySource {
 public:
  explicit FakeSource(bool works) : works_(works) {}
  bool start(std::string* whyNot) override {
    std::lock_guard lock(mutex);
    ++starts;
    if (!works_) *whyNot = "CUPTI_ERROR_NO_DEVICE";
    return works_;
  }
  void flush(const std::function<void(const ActivityRecord&)>& sink) override {
    std::lock_guard lock(mutex);
    for (const auto& r : pending) sink(r);
    pending.clear();
  }
  void stop() override { stopped = true; }
  std::uint64_t droppedRecords() const override { return dropped; }
  void pushExternalId(std::uint64_t id) override {
    std::lock_guard lock(mutex);
    pushed.push_back(id);
  }
  void popExternalId() override { ++pops; }
  void add(std::vector<ActivityRecord> records) {
    std::lock_guard lock(mutex);
    for (auto& r : records) pending.push_back(std::move(r));
  }

  std::mutex mutex;
  std::vector<ActivityRecord> pending;
  std::vector<std::uint64_t> pushed;
  int pops = 0;
  int starts = 0;
  std::uint64_t dropped = 0;
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
  void kernelNamesReadAsCpp();
  void correlationScopesReachTheSource();
  void decodesRawCuptiRecords();
  void bufferPoolIsBounded();
  void ranksSharingAGpuGetTheirOwnWork();
  void droppedRecordsAreReportedOnce();
  void recordedGpuRunIsAKinetoTrace();
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

// CUPTI names a kernel by its mangled symbol; a trace shows it as C++ reads it, as Kineto's and
// Nsight's do. Names that are not mangled (cuBLAS's, NCCL's C kernels) stay as they are. The
// runtime calls' lane is named for them.
void TestCupti::kernelNamesReadAsCpp() {
  ActivityConverter converter;
  const std::vector<Event> events = converter.convert(
      {rec(K::Kernel, 1, 0, 10, "_ZN9parascope4cuda12_GLOBAL__N_117geluForwardKernelEPfPKfl", 7),
       rec(K::Kernel, 2, 10, 20, "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n", 7),
       rec(K::Kernel, 3, 20, 30, "_Znot_a_mangled_name", 7)});
  QCOMPARE(events.size(), std::size_t{3});
  QCOMPARE(std::string(events[0].name),
           std::string("parascope::cuda::(anonymous namespace)::geluForwardKernel(float*, float "
                       "const*, long)"));
  QCOMPARE(std::string(events[1].name), std::string("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n"));
  QCOMPARE(std::string(events[2].name), std::string("_Znot_a_mangled_name"));
  QCOMPARE(TraceData{}.laneName(0, trace::lane::kRuntime), std::string("CUDA runtime"));
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

void TestCupti::bufferPoolIsBounded() {
  ActivityBufferPool pool(64, 2);
  std::uint8_t* a = pool.take();
  std::uint8_t* b = pool.take();
  QVERIFY(a != nullptr && b != nullptr && a != b);
  QCOMPARE(reinterpret_cast<std::uintptr_t>(a) % 8, std::uintptr_t{0});
  QCOMPARE(pool.take(), static_cast<std::uint8_t*>(nullptr));  // both out: CUPTI drops
  QCOMPARE(pool.refused(), std::size_t{1});
  pool.give(a);
  QCOMPARE(pool.take(), a);  // reused, not a new one
  QCOMPARE(pool.allocated(), std::size_t{2});
  pool.give(a);
  pool.give(b);
}

// In-process ranks share one GPU and its stream: each kernel goes to the rank whose span launched
// it (the thread's rank when the scope opened), not to the collector's. What the converter
// learned is forgotten kGenerations flushes later, so a long run does not grow it.
void TestCupti::ranksSharingAGpuGetTheirOwnWork() {
  Tracer tracer;
  tracer.install();
  auto source = std::make_unique<FakeSource>(true);
  FakeSource* fake = source.get();
  CuptiCollector cupti(tracer, std::move(source), 0);
  QVERIFY(cupti.start());
  std::uint64_t ids[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    std::thread([&, i] {
      trace::Context c;
      c.rank = i == 0 ? 1 : 3;
      const trace::ScopedContext scope(c);
      const trace::LaunchSpan launch("matmul_forward", trace::Category::Compute);
    }).join();
    std::lock_guard lock(fake->mutex);
    ids[i] = fake->pushed.back();
  }
  ActivityRecord a, b;
  a.kind = b.kind = K::ExternalCorrelation;
  a.correlationId = 11;
  a.externalId = ids[0];
  b.correlationId = 12;
  b.externalId = ids[1];
  fake->add({rec(K::Kernel, 11, 100, 200, "gemm a", 7), a,
             rec(K::Kernel, 12, 210, 300, "gemm b", 7), b,
             rec(K::Runtime, 12, 90, 95, "cudaLaunchKernel")});
  cupti.flush();
  for (std::size_t i = 0; i < ActivityConverter::kGenerations; ++i) cupti.flush();
  fake->add({rec(K::Kernel, 12, 400, 500, "gemm late", 7)});  // its mapping is forgotten by now
  cupti.flush();
  cupti.stop();
  tracer.uninstall();
  const TraceData t = tracer.collect();
  QCOMPARE(find(t, "gemm a")->rank, 1);
  QCOMPARE(find(t, "gemm a")->correlation, ids[0]);
  QCOMPARE(find(t, "gemm b")->rank, 3);
  QCOMPARE(find(t, "cudaLaunchKernel")->rank, 3);
  QCOMPARE(find(t, "gemm late")->rank, 0);
  QCOMPARE(find(t, "gemm late")->correlation, kCuptiCorrelationBit | 12);
}

void TestCupti::droppedRecordsAreReportedOnce() {
  Tracer tracer;
  auto source = std::make_unique<FakeSource>(true);
  source->dropped = 1234;
  std::vector<std::string> log;
  CuptiCollector cupti(tracer, std::move(source), 0,
                       [&](const std::string& l) { log.push_back(l); });
  QVERIFY(cupti.start());
  cupti.stop();
  cupti.stop();
  QCOMPARE(log.size(), std::size_t{1});
  QCOMPARE(QString::fromStdString(log[0]),
           QString("profiler: 1234 GPU activity records were dropped (every CUPTI buffer was "
                   "full); the GPU lanes are incomplete"));
}

// A run recorded with a GPU's activity (train --trace on a device): the kernel a host span
// launched, its launch call, a copy nobody's span launched, and a wait, in the file in Kineto's
// categories and fields, with flows from the span to its launch call (1) and kernel (2), and
// read back as they were.
void TestCupti::recordedGpuRunIsAKinetoTrace() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("gpu.json").toStdString();
  auto source = std::make_unique<FakeSource>(true);
  FakeSource* fake = source.get();
  TraceRecording recording(path, 1, std::move(source), 0);
  { const trace::LaunchSpan launch("gelu_forward", trace::Category::Compute); }
  std::uint64_t id = 0;
  {
    std::lock_guard lock(fake->mutex);
    QCOMPARE(fake->pushed.size(), std::size_t{1});
    id = fake->pushed[0];
  }
  QCOMPARE(fake->pops, 1);
  const std::int64_t t = trace::steadyNs();
  ActivityRecord ext;
  ext.kind = K::ExternalCorrelation;
  ext.correlationId = 21;
  ext.externalId = id;
  ActivityRecord kernel = rec(K::Kernel, 21, t + 1'000, t + 9'000, "gelu_kernel", 7);
  kernel.deviceId = 1;
  ActivityRecord copy = rec(K::Memcpy, 22, t + 10'000, t + 12'000, "Memcpy DtoH", 7);
  copy.deviceId = 1;
  copy.bytes = 4096;
  fake->add({kernel, ext, rec(K::Runtime, 21, t - 500, t - 100, "cudaLaunchKernel"), copy,
             rec(K::Synchronization, 23, t + 12'000, t + 12'500, "synchronize")});
  QCOMPARE(QString::fromStdString(recording.finish()), QString::fromStdString(path));

  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string file = text.str();
  for (const char* expected :
       {R"("cat":"kernel","name":"gelu_kernel","pid":0,"tid":1048583)", R"("device":1,"stream":7)",
        R"("cat":"cuda_runtime","name":"cudaLaunchKernel","pid":0,"tid":4)",
        R"("cat":"gpu_memcpy","name":"Memcpy DtoH")", R"("cat":"cuda_sync","name":"synchronize")",
        R"({"ph":"s","cat":"ac2g","name":"ac2g","id":1,"pid":0,"tid":0,)",
        R"({"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":2,"pid":0,"tid":1048583,)"}) {
    QVERIFY2(file.find(expected) != std::string::npos, expected);
  }

  const TraceData back = importChromeTrace(path);
  QCOMPARE(back.events.size(), std::size_t{5});
  const Event* span = find(back, "gelu_forward");
  QCOMPARE(span->correlation, id);
  QCOMPARE(span->flags, trace::flag::kFlowSource);
  QCOMPARE(span->lane, trace::lane::kCompute);
  const Event* k = find(back, "gelu_kernel");
  QCOMPARE(static_cast<int>(k->category), static_cast<int>(trace::Category::Compute));
  QCOMPARE(k->lane, trace::lane::gpuStream(7));
  QCOMPARE(k->correlation, id);
  QVERIFY(k->startNs >= span->endNs);
  const Event* call = find(back, "cudaLaunchKernel");
  QCOMPARE(static_cast<int>(call->category), static_cast<int>(trace::Category::Runtime));
  QCOMPARE(call->correlation, id);
  QCOMPARE(call->flags, std::uint8_t{0});
  const Event* c = find(back, "Memcpy DtoH");
  QCOMPARE(static_cast<int>(c->category), static_cast<int>(trace::Category::Memcpy));
  QCOMPARE(c->bytes, std::int64_t{4096});
  QCOMPARE(c->correlation, kCuptiCorrelationBit | 22);
  QCOMPARE(static_cast<int>(find(back, "synchronize")->category),
           static_cast<int>(trace::Category::Sync));
  QCOMPARE(back.gpuDevices, (std::map<std::int32_t, std::int32_t>{{0, 1}}));
  QCOMPARE(back.laneName(0, trace::lane::gpuStream(7)), std::string("GPU 1 stream 7"));
}

QTEST_GUILESS_MAIN(TestCupti)
#include "test_cupti.moc"
