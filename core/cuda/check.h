// A CUDA runtime call's failure as a CudaError naming the call and the runtime's reason.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "core/cuda/device.h"

namespace parascope::cuda {

inline void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw CudaError(std::string(call) + ": " + cudaGetErrorString(e));
}

}  // namespace parascope::cuda
