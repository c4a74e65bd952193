#include "core/cuda/device_buffers.h"

#include <cuda_runtime_api.h>

#include "core/cuda/check.h"
#include "core/cuda/device.h"
#include "core/cuda/kernels.h"
#include "core/cuda/stream.h"
#include "core/trace/trace.h"

namespace parascope::cuda {

namespace {

class CudaBuffers final : public DeviceBuffers {
 public:
  explicit CudaBuffers(int index) : index_(index) {}

  bool holds(const void* p) const override {
    // The device first: a thread's first CUDA call would otherwise make device 0's context its
    // own.
    check(cudaSetDevice(index_), "cudaSetDevice");
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();  // not a pointer CUDA knows: host memory
      return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
  }

  void copy(void* dst, const void* src, std::size_t bytes) const override {
    const trace::LaunchSpan span("memcpy", trace::Category::Memcpy);
    check(cudaSetDevice(index_), "cudaSetDevice");
    const cudaStream_t stream = communicationStream(index_);
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }

  void zero(void* p, std::size_t bytes) const override {
    const trace::LaunchSpan span("memset", trace::Category::Memset);
    check(cudaSetDevice(index_), "cudaSetDevice");
    const cudaStream_t stream = communicationStream(index_);
    check(cudaMemsetAsync(p, 0, bytes, stream), "cudaMemsetAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }

  void reduce(void* const* dsts, int ndst, const void* const* srcs, int nsrc, std::size_t count,
              DType type, ReduceOp op, int divisor) const override {
    const trace::LaunchSpan span("reduce", trace::Category::Communication);
    check(cudaSetDevice(index_), "cudaSetDevice");
    const cudaStream_t stream = communicationStream(index_);
    reduceBuffers(dsts, ndst, srcs, nsrc, static_cast<long>(count), type, op, divisor, stream);
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }

  std::shared_ptr<void> allocate(std::size_t bytes) const override {
    check(cudaSetDevice(index_), "cudaSetDevice");
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc (collective scratch)");
    return {p, [](void* q) { cudaFree(q); }};
  }

  std::shared_ptr<const void> mark() const override { return markWork(index_); }

  void waitFor(const std::shared_ptr<const void>& mark) const override {
    if (!mark) return;
    // The runtime's own type behind the pointer markWork made.
    check(cudaEventSynchronize(static_cast<cudaEvent_t>(const_cast<void*>(mark.get()))),
          "cudaEventSynchronize");
  }

 private:
  int index_;
};

}  // namespace

std::shared_ptr<const DeviceBuffers> deviceBuffers(int index) {
  requireDevice(index, "in-process collectives");
  return std::make_shared<CudaBuffers>(index);
}

}  // namespace parascope::cuda
