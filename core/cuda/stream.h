// The streams a GPU run's work goes to, and what orders them.
//
// - Each rank's kernels and products run on its own compute stream (ComputeStream), so the
//   in-process ranks that share a GPU run side by side. The stream is a blocking one: the legacy
//   default stream, which the device memory's copies and memsets go to (device_memory.cpp: the
//   batch upload, zeroed gradients, state copied for a checkpoint or a switch), waits for its work
//   and it for theirs.
// - The in-process collectives copy and reduce on each calling thread's communication stream
//   (communicationStream, non-blocking), the rank's worker thread for bucket reductions, ZeRO's
//   gathers and pipeline transfers issued asynchronously. Before any rank touches a rank's
//   buffers, the operation waits for markWork taken when the rank issued it: an event after the
//   kernels the rank had launched on its compute stream, so those that produce a bucket's
//   gradients, or still read a buffer a gather or a receive overwrites, have run. Each operation
//   synchronizes its communication stream before it completes, so the kernels a rank launches
//   after waiting for it run after it; kernels launched in between overlap it.
// - NCCL's operations wait on their stream for the same mark (core/comm/nccl).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <type_traits>

namespace parascope::cuda {

using Event = std::shared_ptr<std::remove_pointer_t<cudaEvent_t>>;

class ComputeStream {
 public:
  explicit ComputeStream(int device);
  ~ComputeStream();
  ComputeStream(const ComputeStream&) = delete;
  ComputeStream& operator=(const ComputeStream&) = delete;
  int device() const { return device_; }
  cudaStream_t get() const { return stream_; }

  // While a Scope lives, markWork on its thread marks this stream's work (as PyTorch's
  // torch.cuda.stream makes a stream current); scopes nest.
  class Scope {
   public:
    explicit Scope(const ComputeStream& stream);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    const ComputeStream* previous_;
  };

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

// An event after the work the calling thread has launched on `device`: on its compute stream
// (the Scope it is in), or, outside every scope, everything launched on the device's blocking
// streams from any thread (an event on the legacy default stream waits for all of it).
Event markWork(int device);

// The calling thread's communication stream on `device`, made on first use and destroyed with
// the thread.
cudaStream_t communicationStream(int device);

}  // namespace parascope::cuda
