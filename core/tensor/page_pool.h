// Memory pages kept for reuse whatever size is asked next. A live switch builds a new layout whose
// tensors have other sizes than the old one's, so a cache by size finds nothing; fresh memory
// then costs a page fault and the kernel's zeroing per 4 KiB (about 0.7 GB/s on a virtual
// machine, 20 times slower than writing memory already touched). The pool hands out mappings
// assembled from the pages of blocks given back, moved with mremap: the page tables move, the
// bytes do not (1 GiB in about 5 ms), and the pages come back touched.
// Blocks are whole 2 MiB granules, 2 MiB aligned, advised for transparent huge pages unless told
// otherwise. Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace parascope {

class PagePool {
 public:
  static constexpr std::size_t kGranule = std::size_t{2} << 20;

  PagePool() = default;
  ~PagePool();  // unmaps what it holds
  PagePool(const PagePool&) = delete;
  PagePool& operator=(const PagePool&) = delete;

  // A mapping of `bytes` (a positive multiple of kGranule) whose contents are unspecified: the
  // pages of one block given back of that size if there is one, else of as many blocks (or parts
  // of them) as it takes, and fresh pages for the rest. Throws std::bad_alloc.
  void* take(std::size_t bytes);
  // Keeps a mapping from take() for a later take. Never fails.
  void give(void* p, std::size_t bytes) noexcept;
  // Returns everything held to the system.
  void release() noexcept;

  // Whether fresh pages are advised for transparent huge pages (by default they are: the
  // products walk them with fewer TLB misses: 0.2-1.2% of a GPT-mini step). A huge page costs
  // more to fault in where the kernel must assemble 2 MiB of free memory for it: on a virtual
  // machine whose host takes back the guest's free memory (free page reporting), 0.8-1.7 GB/s
  // against 2.5 GB/s for 4 KiB pages, and a live switch waits for its faults. Mappings already
  // made keep their advice.
  void setHugePages(bool advise) noexcept { hugePages_.store(advise, std::memory_order_relaxed); }

  std::int64_t heldBytes() const;
  // Bytes handed out from pages given back (not fresh), since the pool was made.
  std::int64_t reusedBytes() const;

 private:
  struct Block {
    char* address;
    std::size_t bytes;
  };
  mutable std::mutex mutex_;
  std::vector<Block> blocks_;
  std::int64_t held_ = 0;
  std::int64_t reused_ = 0;
  std::atomic<bool> hugePages_{true};
};

}  // namespace parascope
