// The collective suite's buffers in the current GPU's memory (collective_suite.h's
// BufferMemory), for the suites that run it on a device: NCCL's and in-process ranks sharing a
// GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "tests/comm/collective_suite.h"

namespace parascope::commtest {

class CudaBufferMemory final : public BufferMemory {
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

}  // namespace parascope::commtest
