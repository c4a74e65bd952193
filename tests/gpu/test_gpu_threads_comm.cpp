// In-process ranks sharing one GPU: the collective suite every backend runs (each operation,
// element type, reduction and placement; sends and receives), with every buffer in the GPU's
// memory and the threads backend copying and reducing them there (core/cuda/device_buffers.h),
// at 2, 3, 4 and 8 ranks. Sums keep the rank order, so the suite's results are exact. Then the
// ranks' kernels on their own compute streams, which the collectives must wait for. Skips with
// one line where no device is visible.
#include <QtTest>

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "core/comm/launch.h"
#include "core/cuda/check.h"
#include "core/cuda/device.h"
#include "core/cuda/device_buffers.h"
#include "core/cuda/kernels.h"
#include "core/cuda/stream.h"
#include "tests/comm/collective_suite.h"
#include "tests/comm/cuda_buffer_memory.h"
#include "tests/gpu/require_device.h"

using namespace parascope;

class TestGpuThreadsComm : public QObject {
  Q_OBJECT
 private slots:
  void collectiveSuiteOnOneGpu();
  void collectivesWaitForEachRanksKernels();
};

void TestGpuThreadsComm::collectiveSuiteOnOneGpu() {
  REQUIRE_DEVICE("in-process ranks on a GPU are built");
  for (int n : {2, 3, 4, 8}) {
    CommOptions options;
    options.deviceBuffers = cuda::deviceBuffers(0);
    commtest::CudaBufferMemory memory;
    try {
      runInProcess(
          n,
          [&](Communicator& c) {
            commtest::runCollectives(c, n > 4 ? commtest::smallSizes() : commtest::defaultSizes(),
                                     &memory);
          },
          options);
    } catch (const std::exception& e) {
      QFAIL((std::to_string(n) + " ranks: " + e.what()).c_str());
    }
  }
}

// Each rank fills its buffers on its own compute stream and issues the operations right after
// launching the fills, without waiting for them: the fills of 2^26 floats, several times over,
// are still running when the operation is issued, and the communication stream would read
// (or be overwritten by) them unless the operation waited for its rank's mark. An all-reduce on
// the rank's worker, a blocking one on its own thread, and a ring of sends and receives whose
// receive buffers a fill still writes.
void TestGpuThreadsComm::collectivesWaitForEachRanksKernels() {
  REQUIRE_DEVICE("in-process ranks on a GPU are built");
  constexpr long kCount = 1L << 26;
  constexpr int kFills = 8;
  for (int n : {2, 4}) {
    CommOptions options;
    options.deviceBuffers = cuda::deviceBuffers(0);
    try {
      runInProcess(
          n,
          [&](Communicator& c) {
            const cuda::ComputeStream compute(0);
            const cuda::ComputeStream::Scope scope(compute);
            auto buffer = [] {
              float* p = nullptr;
              cuda::check(cudaMalloc(reinterpret_cast<void**>(&p), kCount * sizeof(float)),
                          "cudaMalloc");
              return std::unique_ptr<float, decltype(&cudaFree)>(p, &cudaFree);
            };
            auto fill = [&](float* p, float value) {
              for (int i = 0; i < kFills; ++i)
                cuda::fill(p, i + 1 == kFills ? value : -1.0f, kCount, compute.get());
            };
            auto at = [&](const float* p, long i) {
              cuda::check(cudaStreamSynchronize(compute.get()), "cudaStreamSynchronize");
              float v = 0;
              cuda::check(cudaMemcpy(&v, p + i, sizeof v, cudaMemcpyDeviceToHost), "cudaMemcpy");
              return v;
            };
            const float mine = 1.0f + static_cast<float>(c.rank());
            const auto sum = static_cast<float>(c.size() * (c.size() + 1) / 2);
            auto expect = [](float got, float want, const char* what) {
              if (got != want)
                throw std::runtime_error(std::string(what) + ": " + std::to_string(got) +
                                         ", expected " + std::to_string(want));
            };

            const auto queued = buffer();
            fill(queued.get(), mine);
            c.allReduceAsync(queued.get(), queued.get(), kCount, DType::F32, ReduceOp::Sum).wait();
            expect(at(queued.get(), kCount - 1), sum, "all-reduce on the worker");

            const auto blocking = buffer();
            fill(blocking.get(), mine);
            c.allReduce(blocking.get(), blocking.get(), kCount, DType::F32, ReduceOp::Sum);
            expect(at(blocking.get(), kCount - 1), sum, "blocking all-reduce");

            const auto sent = buffer(), received = buffer();
            fill(sent.get(), mine);
            fill(received.get(), -7.0f);
            const int next = (c.rank() + 1) % c.size(),
                      previous = (c.rank() + c.size() - 1) % c.size();
            CommHandle s = c.sendAsync(sent.get(), kCount, DType::F32, next);
            CommHandle r = c.recvAsync(received.get(), kCount, DType::F32, previous);
            s.wait();
            r.wait();
            expect(at(received.get(), kCount - 1), 1.0f + static_cast<float>(previous), "receive");
          },
          options);
    } catch (const std::exception& e) {
      QFAIL((std::to_string(n) + " ranks: " + e.what()).c_str());
    }
  }
}

QTEST_GUILESS_MAIN(TestGpuThreadsComm)
#include "test_gpu_threads_comm.moc"
