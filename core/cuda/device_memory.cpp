#include "core/cuda/device_memory.h"

#include <cuda_runtime_api.h>

#include <new>

#include "core/cuda/check.h"
#include "core/cuda/device.h"
#include "core/trace/trace.h"

// The copies and memsets below go to the legacy default stream, which the ranks' compute
// streams wait for and which waits for them (stream.h); a per-thread default stream would not.
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "the device memory's copies rely on the legacy default stream, not a per-thread one"
#endif

namespace parascope::cuda {

namespace {

class CudaMemory final : public DeviceMemory {
 public:
  explicit CudaMemory(int index) : index_(index) {}
  Device device() const override { return {Device::Kind::Cuda, index_}; }

  void* allocate(std::size_t bytes) override {
    check(cudaSetDevice(index_), "cudaSetDevice");
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear it: the allocator may free its cache and ask again
      throw std::bad_alloc();
    }
    check(e, "cudaMalloc");
    return p;
  }

  void release(void* p, std::size_t /*bytes*/) noexcept override {
    // cudaFree fails only for a pointer that is not the device's or a device already lost; there
    // is nothing left to do for either while memory is being given back.
    cudaSetDevice(index_);
    cudaFree(p);
  }

  void zero(void* p, std::size_t bytes) override {
    if (bytes == 0) return;
    const trace::LaunchSpan span("memset", trace::Category::Memset);
    check(cudaSetDevice(index_), "cudaSetDevice");
    check(cudaMemset(p, 0, bytes), "cudaMemset");
  }

  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    const trace::LaunchSpan span("memcpy", trace::Category::Memcpy);
    check(cudaSetDevice(index_), "cudaSetDevice");
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
  }

 private:
  int index_;
};

}  // namespace

std::shared_ptr<DeviceMemory> deviceMemory(int index) {
  requireDevice(index, "device memory");
  return std::make_shared<CudaMemory>(index);
}

}  // namespace parascope::cuda
