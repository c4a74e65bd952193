// The buffers CUPTI fills with activity records, from a bounded pool as Kineto bounds its own:
// a run that launches faster than the drain thread flushes gets no more than the pool's memory,
// and CUPTI drops (and counts) the records it has no buffer for instead of the process growing
// without limit. Buffers are reused once handed back, so a steady run allocates none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace parascope::profiler {

class ActivityBufferPool {
 public:
  // At most `maxBuffers` buffers of `bufferBytes` each (a multiple of 8) are out at once.
  ActivityBufferPool(std::size_t bufferBytes, std::size_t maxBuffers);
  ~ActivityBufferPool();
  ActivityBufferPool(const ActivityBufferPool&) = delete;
  ActivityBufferPool& operator=(const ActivityBufferPool&) = delete;

  // A free buffer, or null when all of them are out (or memory ran out); thread-safe.
  std::uint8_t* take() noexcept;
  // Returns a buffer take() gave out.
  void give(std::uint8_t* buffer) noexcept;

  std::size_t bufferBytes() const { return bufferBytes_; }
  std::size_t allocated() const;  // buffers made so far, at most maxBuffers
  std::size_t refused() const;    // take() calls that found none free

 private:
  const std::size_t bufferBytes_;
  const std::size_t maxBuffers_;
  mutable std::mutex mutex_;
  std::vector<std::uint8_t*> free_;
  std::size_t allocated_ = 0;
  std::size_t refused_ = 0;
};

}  // namespace parascope::profiler
