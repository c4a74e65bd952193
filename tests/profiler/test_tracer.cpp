// The tracer under threads: spans from many threads at once, collected while they record
// (the lock-free path), stamped with each thread's context; nothing recorded while no
// recorder is installed; RAII spans close on every exit path. Runs under TSan (label threads).
#include <QtTest>

#include <atomic>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/kernels/adamw.h"
#include "core/kernels/cross_entropy.h"
#include "core/kernels/gelu.h"
#include "core/kernels/layernorm.h"
#include "core/kernels/matmul.h"
#include "core/kernels/residual.h"
#include "core/trace/trace.h"
#include "profiler/tracer.h"

using namespace parascope::profiler;
namespace trace = parascope::trace;

class TestTracer : public QObject {
  Q_OBJECT
 private slots:
  void disabledRecordsNothing();
  void spanFieldsAndContext();
  void spanClosesOnException();
  void threadsRecordConcurrentlyWithCollection();
  void drainWhileRecordingLosesNothing();
  void perThreadLimitDrops();
  void clockOffsetAndExternalEvents();
  void kernelSpansSayTheBytesTheyMove();
};

void TestTracer::disabledRecordsNothing() {
  QVERIFY(trace::recorder() == nullptr);
  Tracer tracer;
  {
    trace::Span s("not recorded", trace::Category::Compute);
    s.bytes(5);
    QVERIFY(!s.active());
    trace::counter("c", trace::Category::Memory, 1);
  }
  QVERIFY(tracer.collect().events.empty());
}

void TestTracer::spanFieldsAndContext() {
  Tracer tracer;
  tracer.install();
  const std::int64_t before = trace::steadyNs();
  {
    trace::ScopedContext ctx({.rank = 3, .step = 7, .microBatch = 1, .stage = 2, .instruction = 9});
    trace::Span s("send", trace::Category::Communication, trace::lane::kCommunication);
    s.bytes(128).peer(4).group(1).correlation(77).flags(trace::flag::kFlowSource);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  trace::counter("activation", trace::Category::Memory, 4096);
  const std::int64_t after = trace::steadyNs();
  tracer.uninstall();
  { trace::Span ignored("after uninstall", trace::Category::Compute); }

  const TraceData t = tracer.collect();
  QCOMPARE(t.events.size(), std::size_t{2});
  const Event* span = nullptr;
  const Event* counter = nullptr;
  for (const Event& e : t.events) (e.kind == EventKind::Span ? span : counter) = &e;
  QVERIFY(span && counter);
  QCOMPARE(std::string(span->name), std::string("send"));
  QCOMPARE(span->rank, 3);
  QCOMPARE(span->step, 7);
  QCOMPARE(span->microBatch, 1);
  QCOMPARE(span->stage, 2);
  QCOMPARE(span->instruction, 9);
  QCOMPARE(span->lane, trace::lane::kCommunication);
  QCOMPARE(span->bytes, std::int64_t{128});
  QCOMPARE(span->peer, 4);
  QCOMPARE(span->group, 1);
  QCOMPARE(span->correlation, std::uint64_t{77});
  QCOMPARE(span->flags, trace::flag::kFlowSource);
  // Times are steady-clock ns: inside the window we measured, and the 2 ms sleep is visible.
  // The tick conversion may be off by a few microseconds, never by milliseconds.
  QVERIFY(span->startNs >= before - 50'000 && span->endNs <= after + 50'000);
  QVERIFY(span->durationNs() >= 1'900'000);
  // The context was restored after the scope.
  QCOMPARE(counter->rank, 0);
  QCOMPARE(counter->step, -1);
  QCOMPARE(counter->bytes, std::int64_t{4096});
  QCOMPARE(counter->startNs, counter->endNs);
}

void TestTracer::spanClosesOnException() {
  Tracer tracer;
  tracer.install();
  bool caught = false;
  try {
    trace::Span s("throws", trace::Category::Compute);
    throw std::runtime_error("x");
  } catch (const std::runtime_error&) {
    caught = true;
  }
  QVERIFY(caught);
  tracer.uninstall();
  const TraceData t = tracer.collect();
  QCOMPARE(t.events.size(), std::size_t{1});
  QVERIFY(t.events[0].endNs >= t.events[0].startNs);
}

void TestTracer::threadsRecordConcurrentlyWithCollection() {
  constexpr int kThreads = 6;
  constexpr int kSpans = 20'000;  // several chunks per thread
  Tracer tracer;
  tracer.install();
  std::atomic<bool> done{false};
  std::size_t seenWhileRunning = 0;
  std::thread collector([&] {
    while (!done.load())
      seenWhileRunning = std::max(seenWhileRunning, tracer.collect().events.size());
  });
  std::vector<std::thread> workers;
  for (int r = 0; r < kThreads; ++r) {
    workers.emplace_back([r] {
      trace::context().rank = r;
      for (int i = 0; i < kSpans; ++i) {
        trace::context().step = i;
        trace::Span s("work", trace::Category::Compute);
        s.bytes(i);
      }
    });
  }
  for (auto& w : workers) w.join();
  done = true;
  collector.join();
  tracer.uninstall();

  const TraceData t = tracer.collect();
  QCOMPARE(t.events.size(), std::size_t{kThreads * kSpans});
  QVERIFY(seenWhileRunning <= t.events.size());
  QCOMPARE(tracer.dropped(), std::uint64_t{0});
  // Each thread's spans arrive complete and in order, step == bytes as written.
  std::map<std::int32_t, std::int64_t> next;
  for (const Event& e : t.events) {
    QCOMPARE(static_cast<std::int64_t>(e.step), e.bytes);
    QCOMPARE(e.bytes, next[e.rank]++);
  }
  QCOMPARE(next.size(), std::size_t{kThreads});
}

// A collector drains while four threads record; every event arrives exactly once, in order,
// and drained chunks are reused by the writers.
void TestTracer::drainWhileRecordingLosesNothing() {
  constexpr int kThreads = 4;
  constexpr int kSpans = 50'000;
  Tracer tracer;
  tracer.install();
  std::atomic<bool> done{false};
  std::vector<Event> drained;
  std::thread collector([&] {
    while (!done.load()) {
      TraceData batch = tracer.drain();
      drained.insert(drained.end(), batch.events.begin(), batch.events.end());
    }
  });
  std::vector<std::thread> workers;
  for (int r = 0; r < kThreads; ++r) {
    workers.emplace_back([r] {
      trace::context().rank = r;
      for (int i = 0; i < kSpans; ++i) trace::Span("work", trace::Category::Compute).bytes(i);
    });
  }
  for (auto& w : workers) w.join();
  done = true;
  collector.join();
  tracer.uninstall();
  TraceData rest = tracer.drain();
  drained.insert(drained.end(), rest.events.begin(), rest.events.end());
  QCOMPARE(drained.size(), std::size_t{kThreads * kSpans});
  std::map<std::int32_t, std::int64_t> next;
  for (const Event& e : drained) QCOMPARE(e.bytes, next[e.rank]++);
  QVERIFY(tracer.collect().events.empty());
  QVERIFY(tracer.drain().events.empty());
}

void TestTracer::perThreadLimitDrops() {
  Tracer tracer(Tracer::Options{.maxEventsPerThread = 10});
  tracer.install();
  for (int i = 0; i < 15; ++i) trace::instant("tick", trace::Category::Host);
  tracer.uninstall();
  QCOMPARE(tracer.collect().events.size(), std::size_t{10});
  QCOMPARE(tracer.dropped(), std::uint64_t{5});
}

void TestTracer::clockOffsetAndExternalEvents() {
  Tracer tracer;
  Event gpu;
  std::string name = "kernel";
  gpu.name = name.c_str();
  gpu.startNs = 1000;
  gpu.endNs = 2000;
  gpu.lane = trace::lane::gpuStream(2);
  tracer.addEvents({&gpu, 1});
  name = "overwritten";  // the tracer kept its own copy of the name
  tracer.setClockOffset(500, 20);
  tracer.setLaneName(0, trace::lane::gpuStream(2), "compute stream");
  const TraceData t = tracer.collect();
  QCOMPARE(t.events.size(), std::size_t{1});
  QCOMPARE(std::string(t.events[0].name), std::string("kernel"));
  QCOMPARE(t.events[0].startNs, std::int64_t{1500});
  QCOMPARE(t.events[0].endNs, std::int64_t{2500});
  QCOMPARE(t.clockResidualNs, std::int64_t{20});
  QCOMPARE(t.laneName(0, trace::lane::gpuStream(2)), std::string("compute stream"));
}

// Each kernel's span carries the least traffic of its call (core/kernels/traffic.h), what bench
// step divides by its time: every array read or written once, one added into twice.
void TestTracer::kernelSpansSayTheBytesTheyMove() {
  constexpr int N = 6, C = 5, OC = 3;
  std::vector<float> a(N * C, 0.5f), b(N * C, 0.25f), out(N * C), mean(N), rstd(N), w(C, 1.0f),
      bias(C, 0.0f), weight(OC * C, 0.1f), y(N * OC), m(N * C), v(N * C);
  Tracer tracer;
  tracer.install();
  namespace k = parascope::kernels;
  k::geluForward<float>(out.data(), a.data(), N * C);
  k::geluBackward<float>(out.data(), a.data(), b.data(), N * C);
  k::layernormForward<float>(out.data(), mean.data(), rstd.data(), a.data(), w.data(), bias.data(),
                             N, C);
  k::residualForward<float>(out.data(), a.data(), b.data(), N * C);
  k::residualLayernormForward<float>(b.data(), out.data(), mean.data(), rstd.data(), a.data(),
                                     b.data(), w.data(), bias.data(), N, C);
  k::layernormBackward<float>(out.data(), m.data(), v.data(), a.data(), b.data(), w.data(),
                              mean.data(), rstd.data(), N, C, a.data());
  k::matmulForward<float>(y.data(), a.data(), weight.data(), nullptr, N, C, OC);
  k::adamwUpdate<float>(a.data(), b.data(), m.data(), v.data(), N * C, {}, 1, 1.0f);
  // The vocabulary-split cross-entropy's passes over logits (N, C), against targets (N).
  const std::vector<std::int32_t> targets(N, 2);
  std::vector<float> sums(2 * N);
  k::crossEntropyPartMax(mean.data(), a.data(), N, C);
  k::crossEntropyPartExp(sums.data(), a.data(), a.data(), mean.data(), targets.data(), N, C, 0);
  k::crossEntropyPartFinish(rstd.data(), a.data(), sums.data(), mean.data(), N, C);
  k::crossEntropyPartBackward(a.data(), targets.data(), N, C, 0, 0.5f);
  tracer.uninstall();
  std::map<std::string, std::int64_t> bytes;
  for (const parascope::profiler::Event& e : tracer.collect().events) bytes[e.name] = e.bytes;
  QCOMPARE(bytes.at("gelu_forward"), std::int64_t{4 * 2 * N * C});
  QCOMPARE(bytes.at("gelu_backward"), std::int64_t{4 * 3 * N * C});
  QCOMPARE(bytes.at("layernorm_forward"), std::int64_t{4 * (2 * N * C + 2 * C + 2 * N)});
  QCOMPARE(bytes.at("residual_forward"), std::int64_t{4 * 3 * N * C});
  // The fused kernel reads the two branches and writes their sum and its normalised rows.
  QCOMPARE(bytes.at("residual_layernorm_forward"), std::int64_t{4 * (4 * N * C + 2 * C + 2 * N)});
  // dout, inp, dinp, the residual's gradient; weight; mean and rstd; dweight and dbias added into.
  QCOMPARE(bytes.at("layernorm_backward"), std::int64_t{4 * (4 * N * C + 2 * N + 5 * C)});
  QCOMPARE(bytes.at("matmul_forward"), std::int64_t{4 * (N * C + OC * C + N * OC)});
  QCOMPARE(bytes.at("adamw"), std::int64_t{4 * 7 * N * C});
  QCOMPARE(bytes.at("cross_entropy_max"), std::int64_t{4 * (N * C + N)});
  // Logits and targets read, probabilities written, maxima read, the sums' two rows written.
  QCOMPARE(bytes.at("cross_entropy_exp"), std::int64_t{4 * (2 * N * C + 4 * N)});
  QCOMPARE(bytes.at("cross_entropy_normalize"), std::int64_t{4 * (2 * N * C + 4 * N)});
  QCOMPARE(bytes.at("cross_entropy_backward"), std::int64_t{4 * (2 * N * C + N)});
}

QTEST_GUILESS_MAIN(TestTracer)
#include "test_tracer.moc"
