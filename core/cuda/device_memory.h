// A CUDA device's memory for an Allocator (core/tensor/allocator.h), which caches its blocks so
// that a training step in steady state calls cudaMalloc and cudaFree not at all.
#pragma once

#include <memory>

#include "core/tensor/allocator.h"

namespace parascope::cuda {

// The memory of CUDA device `index`: cudaMalloc (std::bad_alloc when the device is full),
// cudaFree, cudaMemset and cudaMemcpy (cudaMemcpyDefault: host or device on either side), each on
// that device. Throws UserError for a device this process does not see.
std::shared_ptr<DeviceMemory> deviceMemory(int index);

}  // namespace parascope::cuda
