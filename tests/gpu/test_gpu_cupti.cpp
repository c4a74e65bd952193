// CUPTI on a real device: the work of one traced "step" (two uploads, a memset, a cuBLAS sgemm,
// a download and a synchronisation, each launched inside an engine span with a correlation
// scope) comes back as events on the tracer's clock, each GPU activity linked to the span that
// launched it, once. Skips with one line when no device is visible.
#include <QtTest>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <vector>

#include "core/cuda/device.h"
#include "core/trace/trace.h"
#include "profiler/cupti/cupti_collector.h"
#include "tests/gpu/require_device.h"

using namespace parascope;
using namespace parascope::profiler;

namespace {

// GPU timestamps are converted to the tracer's clock by one offset taken at start; a launch's
// GPU work may not start before the launching span (nor end after the synchronisation) by more
// than this.
constexpr std::int64_t kClockSlackNs = 50'000;

#define CHECK_CUDA(call) QCOMPARE(static_cast<int>(call), static_cast<int>(cudaSuccess))

}  // namespace

class TestGpuCupti : public QObject {
  Q_OBJECT
 private slots:
  void stepWorkBecomesLinkedEvents();
};

void TestGpuCupti::stepWorkBecomesLinkedEvents() {
  REQUIRE_DEVICE("CUPTI is built");
  constexpr int n = 512;
  constexpr std::size_t bytes = std::size_t{n} * n * sizeof(float);
  CHECK_CUDA(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMalloc(&c, bytes));
  cublasHandle_t blas = nullptr;
  QCOMPARE(cublasCreate(&blas), CUBLAS_STATUS_SUCCESS);
  QCOMPARE(cublasSetStream(blas, stream), CUBLAS_STATUS_SUCCESS);
  std::vector<float> host(std::size_t{n} * n, 1.0F);

  Tracer tracer;
  tracer.install();
  std::vector<std::string> log;
  CuptiCollector cupti(tracer, makeCuptiActivitySource(), 0,
                       [&](const std::string& l) { log.push_back(l); });
  QVERIFY2(cupti.start(), log.empty() ? "start failed" : log[0].c_str());

  std::map<std::string, std::uint64_t> ids;  // span name -> correlation id
  auto launch = [&](const char* name, trace::Category category, auto&& work) {
    const std::uint64_t id = trace::newCorrelationId();
    ids[name] = id;
    trace::Span span(name, category);
    span.correlation(id).flags(trace::flag::kFlowSource);
    trace::ScopedCorrelation scope(id);
    work();
  };
  launch("upload", trace::Category::Memcpy, [&] {
    cudaMemcpyAsync(a, host.data(), bytes, cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(b, host.data(), bytes, cudaMemcpyHostToDevice, stream);
  });
  launch("zero", trace::Category::Memset, [&] { cudaMemsetAsync(c, 0, bytes, stream); });
  launch("sgemm", trace::Category::Compute, [&] {
    const float one = 1.0F, zero = 0.0F;
    cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
  });
  launch("download", trace::Category::Memcpy,
         [&] { cudaMemcpyAsync(host.data(), c, bytes, cudaMemcpyDeviceToHost, stream); });
  launch("sync", trace::Category::Sync, [&] { cudaStreamSynchronize(stream); });
  QCOMPARE(host[0], static_cast<float>(n));  // all-ones inputs: every element of C is n

  cupti.flush();
  cupti.flush();  // nothing new: no event may arrive twice
  cupti.stop();
  tracer.uninstall();
  cublasDestroy(blas);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaStreamDestroy(stream);
  const TraceData t = tracer.collect();

  std::map<std::uint64_t, const trace::Event*> hostSpans;
  for (const trace::Event& e : t.events)
    if (!trace::lane::isGpu(e.lane) && e.lane != trace::lane::kRuntime)
      hostSpans[e.correlation] = &e;
  QCOMPARE(hostSpans.size(), ids.size());
  const trace::Event* sync = hostSpans.at(ids.at("sync"));

  std::map<std::string, int> gpuCounts;  // by launching span
  int kernels = 0, runtimeCalls = 0;
  std::int64_t minLead = INT64_MAX;  // GPU start - launching span start, smallest
  for (const trace::Event& e : t.events) {
    if (e.lane == trace::lane::kRuntime) {
      ++runtimeCalls;
      continue;
    }
    if (!trace::lane::isGpu(e.lane)) continue;
    QVERIFY2(hostSpans.count(e.correlation), e.name);  // linked to its launching span
    const trace::Event* span = hostSpans.at(e.correlation);
    std::string launcher = span->name;
    ++gpuCounts[launcher];
    QCOMPARE(e.rank, 0);
    QVERIFY2(e.startNs <= e.endNs, e.name);
    minLead = std::min(minLead, e.startNs - span->startNs);
    QVERIFY2(e.startNs >= span->startNs - kClockSlackNs, e.name);
    QVERIFY2(e.endNs <= sync->endNs + kClockSlackNs, e.name);
    if (launcher == "upload" || launcher == "download") {
      QCOMPARE(static_cast<int>(e.category), static_cast<int>(trace::Category::Memcpy));
      QCOMPARE(e.bytes, static_cast<std::int64_t>(bytes));
      QCOMPARE(std::string(e.name),
               std::string(launcher == "upload" ? "Memcpy HtoD" : "Memcpy DtoH"));
    } else if (launcher == "zero") {
      QCOMPARE(static_cast<int>(e.category), static_cast<int>(trace::Category::Memset));
      QCOMPARE(e.bytes, static_cast<std::int64_t>(bytes));
    } else {
      QCOMPARE(launcher, std::string("sgemm"));
      QCOMPARE(static_cast<int>(e.category), static_cast<int>(trace::Category::Compute));
      ++kernels;
    }
  }
  QCOMPARE(gpuCounts["upload"], 2);
  QCOMPARE(gpuCounts["zero"], 1);
  QCOMPARE(gpuCounts["download"], 1);
  QVERIFY(kernels >= 1);
  QVERIFY(runtimeCalls >= 5);
  qInfo("%d sgemm kernel(s), %d runtime/driver calls; smallest launch-to-GPU lead %.1f us", kernels,
        runtimeCalls, static_cast<double>(minLead) / 1e3);
}

QTEST_GUILESS_MAIN(TestGpuCupti)
#include "test_gpu_cupti.moc"
