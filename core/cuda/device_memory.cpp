#include "core/cuda/device_memory.h"

#include <cuda_runtime_api.h>

#include <new>

#include "core/cuda/check.h"
#include "core/cuda/device.h"
#include "core/cuda/stream.h"
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
  ~CudaMemory() override {
    if (copies_ != nullptr) {
      cudaStreamSynchronize(copies_);
      cudaStreamDestroy(copies_);
    }
  }
  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;
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

  // On the memory's own copy stream (one rank's allocator, one rank's thread), which waits for
  // the kernels the calling thread launched before (stream.h's markWork): a copy to the host
  // runs beside the rank's later kernels, and one to the device after the kernels still reading
  // what it overwrites.
  std::shared_ptr<void> copyAsync(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    const trace::LaunchSpan span("memcpy", trace::Category::Memcpy);
    check(cudaSetDevice(index_), "cudaSetDevice");
    if (copies_ == nullptr) {
      check(cudaStreamCreateWithFlags(&copies_, cudaStreamNonBlocking), "cudaStreamCreate");
    }
    check(cudaStreamWaitEvent(copies_, markWork(index_).get(), 0), "cudaStreamWaitEvent");
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, copies_), "cudaMemcpyAsync");
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    const Event done(e, [](cudaEvent_t x) { cudaEventDestroy(x); });
    check(cudaEventRecord(e, copies_), "cudaEventRecord");
    return done;
  }

  void finish(const std::shared_ptr<void>& handle) override {
    if (handle) check(cudaEventSynchronize(static_cast<cudaEvent_t>(handle.get())), "copy");
  }

  void pin(void* host, std::size_t bytes) override {
    if (bytes == 0) return;
    check(cudaHostRegister(host, bytes, cudaHostRegisterDefault), "cudaHostRegister (pin_memory)");
  }

  void unpin(void* host) noexcept override { cudaHostUnregister(host); }

 private:
  int index_;
  cudaStream_t copies_ = nullptr;
};

}  // namespace

std::shared_ptr<DeviceMemory> deviceMemory(int index) {
  requireDevice(index, "device memory");
  return std::make_shared<CudaMemory>(index);
}

}  // namespace parascope::cuda
