// A CUDA device's DeviceBuffers (core/comm/device_buffers.h): the in-process ranks that share
// the GPU copy each other's buffers with cudaMemcpyAsync and reduce them with a kernel
// (kernels.h's reduceBuffers), on the calling thread's communication stream; each call waits
// for its work. A mark is an event after the calling thread's compute-stream work; what orders
// which stream is in core/cuda/stream.h.
#pragma once

#include <memory>

#include "core/comm/device_buffers.h"

namespace parascope::cuda {

std::shared_ptr<const DeviceBuffers> deviceBuffers(int index);

}  // namespace parascope::cuda
