// Buffers in a GPU's memory for the in-process backend. Ranks that share one device (NCCL refuses
// two ranks on one GPU) pass their device pointers to collectives, and the threads backend copies
// and reduces them there through this interface (cudaMemcpy and a reduction kernel,
// core/cuda/device_buffers.h), as it copies and reduces host memory with memcpy and
// reduceBuffers. Set in CommOptions::deviceBuffers; without it every buffer is host memory.
//
// A rank's kernels run asynchronously on its compute stream. An operation over device buffers
// therefore takes a mark of the device work the issuing thread has launched so far (mark(), at
// issue), and the rank's part of the operation waits for it (waitFor) before any rank may read or
// write the rank's buffers: before the first barrier of a collective, before a send or receive is
// matched. Results need no mark: an operation's copies and reductions complete before it does,
// and the rank's later kernels are launched after it has.
#pragma once

#include <cstddef>
#include <memory>

#include "core/comm/comm_types.h"

namespace parascope {

class DeviceBuffers {
 public:
  virtual ~DeviceBuffers() = default;
  // Whether p points into the device's memory rather than the host's.
  virtual bool holds(const void* p) const = 0;
  // Each completes before it returns, so that the barrier after it publishes the result. A copy
  // may go either way between host and device; a reduction's buffers are all the device's.
  virtual void copy(void* dst, const void* src, std::size_t bytes) const = 0;
  virtual void zero(void* p, std::size_t bytes) const = 0;
  // reduceBuffers' contract (core/comm/reduce_kernels.h): sources combined in the order given,
  // bf16 / fp16 in f32 and rounded once, the same result written to every destination.
  virtual void reduce(void* const* dsts, int ndst, const void* const* srcs, int nsrc,
                      std::size_t count, DType type, ReduceOp op, int divisor) const = 0;
  // Device memory for a scratch copy of an in-place operation's input, which peers read.
  virtual std::shared_ptr<void> allocate(std::size_t bytes) const = 0;
  // The device work the calling thread has launched so far; waitFor(mark), on any thread,
  // returns once it has run.
  virtual std::shared_ptr<const void> mark() const = 0;
  virtual void waitFor(const std::shared_ptr<const void>& mark) const = 0;
};

}  // namespace parascope
