// The NCCL backend on every visible GPU (one rank per GPU, ranks as threads of this process
// bootstrapped over the in-process backend). Skips cleanly without a GPU or driver.
#include <QtTest>

#include <cuda_runtime.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "collective_suite.h"
#include "core/comm/launch.h"
#include "core/comm/nccl/nccl_backend.h"
#include "core/cuda/device.h"
#include "cuda_buffer_memory.h"

using namespace parascope;

namespace {

// Host-checked round trip of one operation with device buffers. Returns "" or what was wrong.
std::string checkAllReduce(Communicator& gpu, std::size_t count, ReduceOp op) {
  const int n = gpu.size(), r = gpu.rank();
  std::vector<float> host(count);
  for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>((r + 1) * (i % 7));
  float* dev = nullptr;
  if (cudaMalloc(&dev, std::max<std::size_t>(count, 1) * sizeof(float)) != cudaSuccess)
    return "cudaMalloc failed";
  cudaMemcpy(dev, host.data(), count * sizeof(float), cudaMemcpyHostToDevice);
  gpu.allReduce(dev, dev, count, DType::F32, op);
  cudaMemcpy(host.data(), dev, count * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(dev);
  // Exact: n (n + 1) is even. NOLINTNEXTLINE(bugprone-integer-division)
  const float ranksSum = static_cast<float>(n * (n + 1) / 2);
  for (std::size_t i = 0; i < count; ++i) {
    const float want = op == ReduceOp::Sum ? ranksSum * static_cast<float>(i % 7)
                                           : static_cast<float>(n * (i % 7));
    if (host[i] != want)
      return "element " + std::to_string(i) + " is " + std::to_string(host[i]) + ", expected " +
             std::to_string(want);
  }
  return "";
}

std::string checkAllGather(Communicator& gpu, std::size_t count) {
  const int n = gpu.size(), r = gpu.rank();
  std::vector<std::int32_t> in(count, r + 1), out(count * static_cast<std::size_t>(n), 0);
  std::int32_t *din = nullptr, *dout = nullptr;
  cudaMalloc(&din, std::max<std::size_t>(count, 1) * 4);
  cudaMalloc(&dout, std::max<std::size_t>(out.size(), 1) * 4);
  cudaMemcpy(din, in.data(), count * 4, cudaMemcpyHostToDevice);
  const CommRecord rec = gpu.allGather(din, dout, count, DType::I32);
  cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost);
  cudaFree(din);
  cudaFree(dout);
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] != static_cast<std::int32_t>(i / std::max<std::size_t>(count, 1)) + 1)
      return "allGather element " + std::to_string(i) + " is " + std::to_string(out[i]);
  if (rec.backend != "nccl") return "record backend is " + rec.backend;
  return "";
}

}  // namespace

class TestCommNccl : public QObject {
  Q_OBJECT
 private slots:
  void collectivesOnEveryGpu();
  void collectiveSuiteOnEveryGpu();
};

void TestCommNccl::collectivesOnEveryGpu() {
  const int gpus = cuda::deviceCount();
  if (gpus == 0) QSKIP("no CUDA device visible: the NCCL backend is built but not run here");
  std::vector<std::string> errors(static_cast<std::size_t>(gpus));
  runInProcess(gpus, [&](Communicator& host) {
    Communicator gpu = ncclCommunicator(host, host.rank());
    std::string& err = errors[static_cast<std::size_t>(host.rank())];
    for (std::size_t count :
         {std::size_t{0}, std::size_t{1}, std::size_t{1031}, std::size_t{1} << 22}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg})
        if (err.empty()) err = checkAllReduce(gpu, count, op);
      if (err.empty()) err = checkAllGather(gpu, count);
    }
  });
  for (const std::string& e : errors) QVERIFY2(e.empty(), e.c_str());
  qInfo("NCCL backend checked on %d GPU(s)", gpus);
}

// The collective suite the threads and MPI backends pass: every operation, element type,
// reduction and placement, with the buffers on the GPU.
void TestCommNccl::collectiveSuiteOnEveryGpu() {
  const int gpus = cuda::deviceCount();
  if (gpus == 0) QSKIP("no CUDA device visible: the NCCL backend is built but not run here");
  std::vector<std::string> errors(static_cast<std::size_t>(gpus));
  runInProcess(gpus, [&](Communicator& host) {
    // A receive that never matches fails in 20 s instead of hanging the suite.
    CommOptions options;
    options.timeout = std::chrono::seconds(20);
    Communicator gpu = ncclCommunicator(host, host.rank(), options);
    commtest::CudaBufferMemory memory;
    try {
      commtest::runCollectives(gpu, commtest::defaultSizes(), &memory);
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(host.rank())] = e.what();
    }
  });
  for (const std::string& e : errors) QVERIFY2(e.empty(), e.c_str());
  qInfo("collective suite passed on the NCCL backend, %d GPU(s)", gpus);
}

QTEST_GUILESS_MAIN(TestCommNccl)
#include "test_comm_nccl.moc"
