// A CUDA runtime or cuBLAS call's failure as a CudaError naming the call and the library's
// reason.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <string>

#include "core/cuda/device.h"

namespace parascope::cuda {

inline void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw CudaError(std::string(call) + ": " + cudaGetErrorString(e));
}

inline void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw CudaError(std::string(call) + ": " + cublasGetStatusString(s));
}

}  // namespace parascope::cuda
