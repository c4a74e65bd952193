#include "core/cuda/device_buffers.h"

#include <cuda_runtime_api.h>

#include "core/cuda/check.h"
#include "core/cuda/device.h"
#include "core/cuda/kernels.h"
#include "core/trace/trace.h"

// The ranks' kernels and these copies are ordered by sharing the legacy default stream.
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "in-process ranks on a GPU rely on the legacy default stream, not a per-thread one"
#endif

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
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
    // A copy within the device returns before it is done.
    check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  }

  void zero(void* p, std::size_t bytes) const override {
    const trace::LaunchSpan span("memset", trace::Category::Memset);
    check(cudaSetDevice(index_), "cudaSetDevice");
    check(cudaMemset(p, 0, bytes), "cudaMemset");
    check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  }

  void reduce(void* const* dsts, int ndst, const void* const* srcs, int nsrc, std::size_t count,
              DType type, ReduceOp op, int divisor) const override {
    const trace::LaunchSpan span("reduce", trace::Category::Communication);
    check(cudaSetDevice(index_), "cudaSetDevice");
    reduceBuffers(dsts, ndst, srcs, nsrc, static_cast<long>(count), type, op, divisor, nullptr);
    check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  }

  std::shared_ptr<void> allocate(std::size_t bytes) const override {
    check(cudaSetDevice(index_), "cudaSetDevice");
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc (collective scratch)");
    return {p, [](void* q) { cudaFree(q); }};
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
