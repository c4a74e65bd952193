#include "core/cuda/stream.h"

#include <map>

#include "core/cuda/check.h"

namespace parascope::cuda {

namespace {

thread_local const ComputeStream* current = nullptr;

// A thread's communication streams, one per device it communicated on.
struct CommunicationStreams {
  CommunicationStreams() = default;
  CommunicationStreams(const CommunicationStreams&) = delete;
  CommunicationStreams& operator=(const CommunicationStreams&) = delete;
  ~CommunicationStreams() {
    // At the thread's end; for the main thread the runtime may already be unloading, and a
    // stream it no longer knows needs no destroying.
    for (const auto& [device, stream] : streams) cudaStreamDestroy(stream);
  }
  std::map<int, cudaStream_t> streams;
};

}  // namespace

ComputeStream::ComputeStream(int device) : device_(device) {
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamDefault), "cudaStreamCreate");
}

ComputeStream::~ComputeStream() {
  // Work still queued finishes first; the stream's resources go once it has.
  cudaStreamDestroy(stream_);
}

ComputeStream::Scope::Scope(const ComputeStream& stream) : previous_(current) {
  current = &stream;
}

ComputeStream::Scope::~Scope() {
  current = previous_;
}

Event markWork(int device) {
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  Event event(e, [](cudaEvent_t x) { cudaEventDestroy(x); });
  const cudaStream_t stream =
      current != nullptr && current->device() == device ? current->get() : cudaStreamLegacy;
  check(cudaEventRecord(e, stream), "cudaEventRecord");
  return event;
}

cudaStream_t communicationStream(int device) {
  thread_local CommunicationStreams mine;
  auto [it, added] = mine.streams.try_emplace(device, nullptr);
  if (added) {
    check(cudaSetDevice(device), "cudaSetDevice");
    cudaStream_t s = nullptr;
    if (const cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        e != cudaSuccess) {
      mine.streams.erase(it);
      check(e, "cudaStreamCreate (communication)");
    }
    it->second = s;
  }
  return it->second;
}

}  // namespace parascope::cuda
