// A CUDA device's DeviceBuffers (core/comm/device_buffers.h): the in-process ranks that share
// the GPU copy each other's buffers with cudaMemcpy and reduce them with a kernel
// (kernels.h's reduceBuffers). Everything runs on the device's legacy default stream, which the
// ranks' kernels are launched on too (core/cuda/cuda_ops.h): a collective issued after a
// rank's kernels runs after them, whichever thread issues it. Each call waits for its work.
#pragma once

#include <memory>

#include "core/comm/device_buffers.h"

namespace parascope::cuda {

std::shared_ptr<const DeviceBuffers> deviceBuffers(int index);

}  // namespace parascope::cuda
