// Tracked memory, of the host or of a device. Every tensor's storage comes from an Allocator,
// which keeps live and peak bytes per category (thread-safe counters) and reports each
// allocation and release to an optional hook and, while tracing, as a memory counter event
// (trace::counter, named after the category). One Allocator per rank.
// Released blocks are kept for reuse by size (a training step allocates the same shapes every
// time; returning them to the OS would cost page faults each step, and cudaMalloc synchronises
// the device). Cached blocks are not live: they are reported apart, as cachedBytes(). Host
// blocks of 2 MiB or more come from a PagePool, its own or one shared with the allocators of
// other layouts, and go back to it when released; a device's come from its DeviceMemory.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tensor/page_pool.h"

namespace parascope {

enum class MemoryCategory : std::uint8_t {
  Parameter,
  Gradient,
  OptimizerState,
  Activation,
  CommBuffer,
  Workspace,
};
inline constexpr std::size_t kMemoryCategoryCount = 6;
std::string_view memoryCategoryName(MemoryCategory c);

struct Device {
  enum class Kind : std::uint8_t { Cpu, Cuda };
  Kind kind = Kind::Cpu;
  int index = 0;
  static Device cpu() { return {}; }
  bool operator==(const Device&) const = default;
};

struct AllocationEvent {
  const void* address;
  std::int64_t bytes;  // positive for an allocation, negative for a release
  MemoryCategory category;
  std::int64_t liveInCategory;  // bytes live in this category after the event
  std::int64_t liveTotal;       // bytes live in all categories after the event
};
using AllocationHook = std::function<void(const AllocationEvent&)>;

// A rank's memory as its trace counters show it: the live bytes of every allocator holding the
// rank's state, together (across a live switch, the retiring layout's and the new one's), and
// recorded as the rank's whichever thread allocates or frees (the session's thread frees a
// layout's memory when it ends).
class RankMemoryTrack {
 public:
  explicit RankMemoryTrack(int rank) : rank_(rank) {}
  void add(MemoryCategory c, std::int64_t delta) noexcept;
  std::int64_t liveBytes(MemoryCategory c) const;
  void addDisk(std::int64_t delta) noexcept;
  std::int64_t diskBytes() const { return disk_.load(std::memory_order_relaxed); }

 private:
  int rank_;
  std::array<std::atomic<std::int64_t>, kMemoryCategoryCount> live_{};
  std::atomic<std::int64_t> disk_{0};
};

// The name of the trace's counter of the bytes a rank keeps on a disk (its swap files).
inline constexpr const char* kDiskCounterName = "nvme";

// A device's own memory calls, which an Allocator for that device caches blocks of (for a CUDA
// device cudaMalloc, cudaFree, cudaMemset and cudaMemcpy: core/cuda/device_memory.h).
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual Device device() const = 0;
  // Throws std::bad_alloc when the device has no room.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p, std::size_t bytes) noexcept = 0;
  virtual void zero(void* p, std::size_t bytes) = 0;
  // Either side may be the device's or the host's memory.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // A copy between the host's memory and the device's that runs after the kernels the calling
  // thread has launched, while the caller goes on; finish(handle) returns once it has run, and
  // until then neither side may be touched. By default a copy() done at once (null handle).
  virtual std::shared_ptr<void> copyAsync(void* dst, const void* src, std::size_t bytes) {
    copy(dst, src, bytes);
    return nullptr;
  }
  virtual void finish(const std::shared_ptr<void>& handle) { (void)handle; }
  // Page-locks host memory that copyAsync copies from and to (pin_memory), so that a copy runs
  // beside the caller rather than through a staging buffer; unpin before the memory is freed.
  // By default nothing: memory the device reaches as it is.
  virtual void pin(void* host, std::size_t bytes) {
    (void)host;
    (void)bytes;
  }
  virtual void unpin(void* host) noexcept { (void)host; }
};

class Allocator {
 public:
  explicit Allocator(Device device = Device::cpu(),
                     std::shared_ptr<PagePool> pages = std::make_shared<PagePool>())
      : device_(device), pages_(std::move(pages)) {}
  // A device's memory. Its blocks are reused in the order the rank's work frees them, which the
  // rank's one compute stream runs in: a tensor another stream still uses (a collective's
  // buffer) stays alive, and so out of the cache, until that stream's work on it is waited for.
  explicit Allocator(std::shared_ptr<DeviceMemory> memory)
      : device_(memory->device()),
        pages_(std::make_shared<PagePool>()),
        memory_(std::move(memory)) {}
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // 64-byte aligned; zero bytes yields a valid unique pointer. Throws std::bad_alloc.
  void* allocate(std::size_t bytes, MemoryCategory category);
  void deallocate(void* p, std::size_t bytes, MemoryCategory category) noexcept;

  std::int64_t liveBytes(MemoryCategory c) const;
  std::int64_t peakBytes(MemoryCategory c) const;
  // The rank's bytes on a disk (ZeRO-Infinity's swap files), counted apart from memory: neither
  // liveTotal nor the limit includes them. While tracing, the kDiskCounterName counter.
  void addDiskBytes(std::int64_t delta) noexcept;
  std::int64_t diskBytes() const { return disk_.load(std::memory_order_relaxed); }
  std::int64_t liveTotal() const { return liveTotal_.load(std::memory_order_relaxed); }
  std::int64_t peakTotal() const { return peakTotal_.load(std::memory_order_relaxed); }
  // Peaks restart from the current live bytes (e.g. at a step boundary).
  void resetPeaks();
  // Bytes held for reuse, not in any tensor.
  std::int64_t cachedBytes() const;
  // Returns every cached block: the small ones to the system, the others to the page pool, a
  // device's to the device.
  void releaseCached();
  // Blocks taken from the system, the page pool or the device (not the cache) so far: a training
  // step in steady state takes none.
  std::int64_t freshBlocks() const { return fresh_.load(std::memory_order_relaxed); }

  // Zeroes, and copies into, memory of this allocator (a copy's source may be the host's).
  void zero(void* p, std::size_t bytes) const;
  void copy(void* dst, const void* src, std::size_t bytes) const;

  // Set before the allocator is shared between threads; called on the allocating thread.
  void setHook(AllocationHook hook) { hook_ = std::move(hook); }
  // Set before the allocator is shared between threads: its counters go to the rank's track
  // (without one, each change is a counter sample of the allocating thread's rank).
  void setTrack(std::shared_ptr<RankMemoryTrack> track) { track_ = std::move(track); }
  // Set before the allocator is shared between threads: the most bytes it may have live at once
  // (memory_limit_bytes); an allocation past it throws std::bad_alloc. 0: no limit.
  void setLimit(std::int64_t bytes) { limit_ = bytes; }
  std::int64_t limit() const { return limit_; }
  Device device() const { return device_; }
  PagePool& pages() const { return *pages_; }
  // The device's memory calls; null for the host's memory.
  DeviceMemory* deviceMemory() const { return memory_.get(); }

 private:
  void account(const void* p, std::int64_t delta, MemoryCategory c);
  void* takeFresh(std::size_t rounded);
  void giveBack(void* p, std::size_t rounded) noexcept;

  Device device_;
  std::shared_ptr<PagePool> pages_;
  std::shared_ptr<DeviceMemory> memory_;  // null for the host
  std::atomic<std::int64_t> fresh_{0};
  std::array<std::atomic<std::int64_t>, kMemoryCategoryCount> live_{};
  std::array<std::atomic<std::int64_t>, kMemoryCategoryCount> peak_{};
  std::atomic<std::int64_t> liveTotal_{0};
  std::atomic<std::int64_t> peakTotal_{0};
  std::atomic<std::int64_t> disk_{0};
  AllocationHook hook_;
  std::shared_ptr<RankMemoryTrack> track_;
  std::int64_t limit_ = 0;
  mutable std::mutex cacheMutex_;
  std::unordered_map<std::size_t, std::vector<void*>> cache_;  // rounded size -> free blocks
  std::int64_t cached_ = 0;
};

// The process-wide allocator used when none is given (single-rank tools and tests).
Allocator& defaultAllocator();

}  // namespace parascope
