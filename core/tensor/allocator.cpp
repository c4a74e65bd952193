#include "core/tensor/allocator.h"

#include <sanitizer/asan_interface.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "core/trace/trace.h"

namespace parascope {

namespace {
constexpr std::size_t kAlignment = 64;

void raiseTo(std::atomic<std::int64_t>& peak, std::int64_t value) {
  std::int64_t seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}
}  // namespace

std::string_view memoryCategoryName(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::Parameter: return "parameter";
    case MemoryCategory::Gradient: return "gradient";
    case MemoryCategory::OptimizerState: return "optimizer_state";
    case MemoryCategory::Activation: return "activation";
    case MemoryCategory::CommBuffer: return "communication_buffer";
    case MemoryCategory::Workspace: return "workspace";
  }
  return "?";
}

namespace {
// memoryCategoryName as C strings, the names of the trace's memory counters.
constexpr const char* kCounterNames[kMemoryCategoryCount] = {
    "parameter", "gradient", "optimizer_state", "activation", "communication_buffer", "workspace"};

constexpr std::size_t kHugePage = PagePool::kGranule;

// Blocks of a huge page or more are huge-page aligned and sized (the page pool's), so the kernel
// can back them with transparent huge pages: BLAS packing walks these matrices and 4 KiB pages
// cost it TLB misses. A device's blocks are rounded the same way, which keeps the sizes a cache
// holds few (PyTorch's caching allocator rounds large blocks to 2 MiB too).
std::size_t roundedSize(std::size_t bytes) {
  if (bytes >= kHugePage) return ((bytes + kHugePage - 1) / kHugePage) * kHugePage;
  return bytes == 0 ? kAlignment : ((bytes + kAlignment - 1) / kAlignment) * kAlignment;
}

// Under AddressSanitizer (no-ops otherwise) a host block is poisoned while it waits in a cache
// and past the bytes a tensor asked for, so a use after release and a read past a tensor's end
// are reported as they would be for the system's heap, which the caches otherwise hide.
void lend(void* p, std::size_t bytes, std::size_t rounded) {
  ASAN_UNPOISON_MEMORY_REGION(p, bytes);
  const std::size_t end = (bytes + 7) / 8 * 8;  // the shadow's granule
  if (rounded > end) ASAN_POISON_MEMORY_REGION(static_cast<char*>(p) + end, rounded - end);
}
}  // namespace

void* Allocator::takeFresh(std::size_t rounded) {
  void* p = nullptr;
  if (memory_) {
    p = memory_->allocate(rounded);
  } else {
    p = rounded < kHugePage ? std::aligned_alloc(kAlignment, rounded) : pages_->take(rounded);
    if (p == nullptr) throw std::bad_alloc();
  }
  fresh_.fetch_add(1, std::memory_order_relaxed);  // taken: a refused request is not a block
  return p;
}

// Out of the caches for good: to the device, the system or the page pool, whose next owner may
// be anyone.
void Allocator::giveBack(void* p, std::size_t rounded) noexcept {
  if (memory_) return memory_->release(p, rounded);
  ASAN_UNPOISON_MEMORY_REGION(p, rounded);
  if (rounded < kHugePage) {
    std::free(p);
  } else {
    pages_->give(p, rounded);
  }
}

Allocator::~Allocator() {
  releaseCached();
}

void* Allocator::allocate(std::size_t bytes, MemoryCategory category) {
  if (limit_ > 0 && liveTotal() + static_cast<std::int64_t>(bytes) > limit_) throw std::bad_alloc();
  const std::size_t rounded = roundedSize(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(cacheMutex_);
    auto it = cache_.find(rounded);
    if (it != cache_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      cached_ -= static_cast<std::int64_t>(rounded);
    }
  }
  if (p == nullptr) {
    try {
      p = takeFresh(rounded);
    } catch (const std::bad_alloc&) {
      // Full with blocks of other sizes in the cache: give those back and ask once more, as
      // PyTorch's caching allocator does before it reports out of memory.
      if (cachedBytes() == 0) throw;
      releaseCached();
      p = takeFresh(rounded);
    }
  }
  if (!memory_) lend(p, bytes, rounded);
  account(p, static_cast<std::int64_t>(bytes), category);
  return p;
}

void Allocator::deallocate(void* p, std::size_t bytes, MemoryCategory category) noexcept {
  if (p == nullptr) return;
  account(p, -static_cast<std::int64_t>(bytes), category);
  const std::size_t rounded = roundedSize(bytes);
  if (!memory_) ASAN_POISON_MEMORY_REGION(p, rounded);
  try {
    std::lock_guard<std::mutex> lock(cacheMutex_);
    cache_[rounded].push_back(p);
    cached_ += static_cast<std::int64_t>(rounded);
  } catch (...) {  // no memory for the cache's bookkeeping: give the block back instead
    giveBack(p, rounded);
  }
}

std::int64_t Allocator::cachedBytes() const {
  std::lock_guard<std::mutex> lock(cacheMutex_);
  return cached_;
}

void Allocator::releaseCached() {
  std::lock_guard<std::mutex> lock(cacheMutex_);
  for (auto& [size, blocks] : cache_) {
    for (void* p : blocks) giveBack(p, size);
  }
  cache_.clear();
  cached_ = 0;
}

void Allocator::zero(void* p, std::size_t bytes) const {
  if (memory_) return memory_->zero(p, bytes);
  std::memset(p, 0, bytes);
}

void Allocator::copy(void* dst, const void* src, std::size_t bytes) const {
  if (memory_) return memory_->copy(dst, src, bytes);
  std::memcpy(dst, src, bytes);
}

void Allocator::account(const void* p, std::int64_t delta, MemoryCategory c) {
  const auto i = static_cast<std::size_t>(c);
  const std::int64_t live = live_[i].fetch_add(delta, std::memory_order_relaxed) + delta;
  const std::int64_t total = liveTotal_.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (delta > 0) {
    raiseTo(peak_[i], live);
    raiseTo(peakTotal_, total);
  }
  // While tracing, every change is a counter sample, so the trace's peaks are these peaks.
  if (track_) {
    track_->add(c, delta);
  } else {
    trace::counter(kCounterNames[i], trace::Category::Memory, live);
  }
  if (hook_) hook_(AllocationEvent{p, delta, c, live, total});
}

void RankMemoryTrack::add(MemoryCategory c, std::int64_t delta) noexcept {
  const auto i = static_cast<std::size_t>(c);
  const std::int64_t live = live_[i].fetch_add(delta, std::memory_order_relaxed) + delta;
  trace::rankCounter(kCounterNames[i], trace::Category::Memory, live, rank_);
}

void RankMemoryTrack::addDisk(std::int64_t delta) noexcept {
  const std::int64_t live = disk_.fetch_add(delta, std::memory_order_relaxed) + delta;
  trace::rankCounter(kDiskCounterName, trace::Category::Memory, live, rank_);
}

void Allocator::addDiskBytes(std::int64_t delta) noexcept {
  const std::int64_t live = disk_.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (track_) {
    track_->addDisk(delta);
  } else {
    trace::counter(kDiskCounterName, trace::Category::Memory, live);
  }
}

std::int64_t RankMemoryTrack::liveBytes(MemoryCategory c) const {
  return live_[static_cast<std::size_t>(c)].load(std::memory_order_relaxed);
}

std::int64_t Allocator::liveBytes(MemoryCategory c) const {
  return live_[static_cast<std::size_t>(c)].load(std::memory_order_relaxed);
}

std::int64_t Allocator::peakBytes(MemoryCategory c) const {
  return peak_[static_cast<std::size_t>(c)].load(std::memory_order_relaxed);
}

void Allocator::resetPeaks() {
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) {
    peak_[i].store(live_[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  peakTotal_.store(liveTotal_.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

Allocator& defaultAllocator() {
  static Allocator allocator;
  return allocator;
}

}  // namespace parascope
