// In-process ranks sharing one GPU: the collective suite every backend runs (each operation,
// element type, reduction and placement; sends and receives), with every buffer in the GPU's
// memory and the threads backend copying and reducing them there (core/cuda/device_buffers.h),
// at 2, 3, 4 and 8 ranks. Sums keep the rank order, so the suite's results are exact. Skips
// with one line where no device is visible.
#include <QtTest>

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "core/comm/launch.h"
#include "core/cuda/device.h"
#include "core/cuda/device_buffers.h"
#include "tests/comm/collective_suite.h"

using namespace parascope;

namespace {

class CudaMemory final : public commtest::BufferMemory {
 public:
  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
  }
  void release(void* p) override { cudaFree(p); }
  void upload(void* device, const void* host, std::size_t bytes) override {
    check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy up");
  }
  void download(void* host, const void* device, std::size_t bytes) override {
    check(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy down");
  }

 private:
  static void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess)
      throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
};

}  // namespace

class TestGpuThreadsComm : public QObject {
  Q_OBJECT
 private slots:
  void collectiveSuiteOnOneGpu();
};

void TestGpuThreadsComm::collectiveSuiteOnOneGpu() {
  if (cuda::deviceCount() == 0)
    QSKIP(("no CUDA device (" + cuda::whyNoDevice() +
           "): in-process ranks on a GPU are built but not run here")
              .c_str());
  for (int n : {2, 3, 4, 8}) {
    CommOptions options;
    options.deviceBuffers = cuda::deviceBuffers(0);
    CudaMemory memory;
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

QTEST_GUILESS_MAIN(TestGpuThreadsComm)
#include "test_gpu_threads_comm.moc"
