#include "profiler/cupti/buffer_pool.h"

#include <cstdlib>

namespace parascope::profiler {

ActivityBufferPool::ActivityBufferPool(std::size_t bufferBytes, std::size_t maxBuffers)
    : bufferBytes_(bufferBytes), maxBuffers_(maxBuffers) {
  free_.reserve(maxBuffers);  // give() then never allocates
}

ActivityBufferPool::~ActivityBufferPool() {
  for (std::uint8_t* b : free_) std::free(b);
}

std::uint8_t* ActivityBufferPool::take() noexcept {
  std::lock_guard lock(mutex_);
  if (!free_.empty()) {
    std::uint8_t* b = free_.back();
    free_.pop_back();
    return b;
  }
  // CUPTI requires 8-byte alignment.
  auto* b = allocated_ < maxBuffers_
                ? static_cast<std::uint8_t*>(std::aligned_alloc(8, bufferBytes_))
                : nullptr;
  if (b == nullptr) {
    ++refused_;
    return nullptr;
  }
  ++allocated_;
  return b;
}

void ActivityBufferPool::give(std::uint8_t* buffer) noexcept {
  if (buffer == nullptr) return;
  std::lock_guard lock(mutex_);
  free_.push_back(buffer);
}

std::size_t ActivityBufferPool::allocated() const {
  std::lock_guard lock(mutex_);
  return allocated_;
}

std::size_t ActivityBufferPool::refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

}  // namespace parascope::profiler
