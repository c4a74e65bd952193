// In-process ranks sharing one GPU: the collective suite every backend runs (each operation,
// element type, reduction and placement; sends and receives), with every buffer in the GPU's
// memory and the threads backend copying and reducing them there (core/cuda/device_buffers.h),
// at 2, 3, 4 and 8 ranks. Sums keep the rank order, so the suite's results are exact. Skips
// with one line where no device is visible.
#include <QtTest>

#include <string>

#include "core/comm/launch.h"
#include "core/cuda/device.h"
#include "core/cuda/device_buffers.h"
#include "tests/comm/collective_suite.h"
#include "tests/comm/cuda_buffer_memory.h"

using namespace parascope;

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

QTEST_GUILESS_MAIN(TestGpuThreadsComm)
#include "test_gpu_threads_comm.moc"
