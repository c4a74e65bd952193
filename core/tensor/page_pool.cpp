#include "core/tensor/page_pool.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace parascope {

namespace {

// A fresh mapping of `bytes`, kGranule-aligned: mmap aligns to pages only, so map a granule more
// and unmap the ends.
char* mapAligned(std::size_t bytes, bool hugePages) {
  const std::size_t granule = PagePool::kGranule;
  void* raw =
      mmap(nullptr, bytes + granule, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  auto* base = static_cast<char*>(raw);
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  const std::size_t head = (granule - address % granule) % granule;
  if (head > 0) munmap(base, head);
  munmap(base + head + bytes, granule - head);
  char* p = base + head;
  if (hugePages) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure is harmless
  return p;
}

}  // namespace

PagePool::~PagePool() {
  release();
}

void* PagePool::take(std::size_t bytes) {
  if (bytes == 0 || bytes % kGranule != 0) throw std::bad_alloc();
  std::lock_guard lock(mutex_);
  for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
    if (it->bytes != bytes) continue;
    char* p = it->address;
    blocks_.erase(it);
    held_ -= static_cast<std::int64_t>(bytes);
    reused_ += static_cast<std::int64_t>(bytes);
    return p;
  }
  char* p = mapAligned(bytes, hugePages_.load(std::memory_order_relaxed));
  // Fill it from the end of the newest blocks: moving a block's tail leaves its head in place.
  std::size_t filled = 0;
  while (filled < bytes && !blocks_.empty()) {
    Block& from = blocks_.back();
    const std::size_t piece = std::min(from.bytes, bytes - filled);
    char* source = from.address + from.bytes - piece;
    if (mremap(source, piece, piece, MREMAP_MAYMOVE | MREMAP_FIXED, p + filled) == MAP_FAILED) {
      break;  // (out of mappings, say) the rest stays fresh; the block is untouched
    }
    filled += piece;
    from.bytes -= piece;
    if (from.bytes == 0) blocks_.pop_back();
  }
  held_ -= static_cast<std::int64_t>(filled);
  reused_ += static_cast<std::int64_t>(filled);
  return p;
}

void PagePool::give(void* p, std::size_t bytes) noexcept {
  std::lock_guard lock(mutex_);
  try {
    blocks_.push_back({static_cast<char*>(p), bytes});
    held_ += static_cast<std::int64_t>(bytes);
  } catch (...) {  // no memory for the bookkeeping: give the pages back instead
    munmap(p, bytes);
  }
}

void PagePool::release() noexcept {
  std::lock_guard lock(mutex_);
  for (const Block& b : blocks_) munmap(b.address, b.bytes);
  blocks_.clear();
  held_ = 0;
}

std::int64_t PagePool::heldBytes() const {
  std::lock_guard lock(mutex_);
  return held_;
}

std::int64_t PagePool::reusedBytes() const {
  std::lock_guard lock(mutex_);
  return reused_;
}

}  // namespace parascope
