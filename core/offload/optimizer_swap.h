// ZeRO-Infinity's optimizer tier: one rank's shard of AdamW's state (the two f32 moments and,
// under mixed precision, the f32 master) lives in the rank's swap file (aio_file.h) and is
// streamed through memory a sub-group at a time (DeepSpeed's sub_group_size). Of the
// buffer_count buffers, one holds the sub-group being updated while the next ones are read and
// the last one is written back, so the disk works while the rank computes.
//
// File layout: sub-group g at g x recordBytes; within it each array (master, m, v, in that
// order; no master in full precision) starts on a 4 KiB boundary.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/offload/aio_file.h"

namespace parascope {

struct SwapLayout {
  std::int64_t elements = 0;       // the shard's
  std::int64_t groupElements = 0;  // sub_group_size, at most the shard
  int arrays = 2;                  // m and v, and the master under mixed precision
  int bufferCount = 1;             // offload_optimizer.buffer_count

  int groups() const;
  std::int64_t groupBegin(int g) const { return groupElements * g; }
  std::int64_t groupCount(int g) const;
  std::int64_t arrayBytes() const;   // one array of a full sub-group, padded to 4 KiB
  std::int64_t recordBytes() const;  // a sub-group's arrays together
  std::int64_t fileBytes() const;
  int buffers() const;  // buffers in memory: at most one per sub-group
  // Sub-groups read in front of the one being updated.
  int ahead() const { return swapReadAhead(buffers()); }
  // What OptimizerSwap::prefetch reads before the update: its first ahead() + 1 sub-groups.
  std::int64_t prefetchBytes() const { return recordBytes() * std::min(ahead() + 1, groups()); }
  // The rank's memory for the swap: its buffers, allocated as one block (optimizer state).
  std::int64_t memoryBytes() const;
};

// What the memory estimate and the optimizer both use, so they agree to the byte.
SwapLayout optimizerSwapLayout(std::int64_t shardElements, bool mixed, const ParallelStrategy& s);

class OptimizerSwap {
 public:
  // Creates the rank's swap file (AioFile: messages name offload_optimizer.nvme_path) and its
  // buffers. The file's contents are undefined until written (forEach with Mode::Write).
  // The file's bytes count as the allocator's disk bytes while it exists (SwapFile).
  OptimizerSwap(const SwapLayout& layout, const ParallelStrategy& s, Allocator& allocator);

  struct Group {
    int index = 0;
    std::int64_t begin = 0, count = 0;  // elements of the shard
    float* master = nullptr;            // null in full precision
    float* m = nullptr;
    float* v = nullptr;
  };
  enum class Mode {
    Update,  // read each sub-group, let fn change it, write it back
    Read,    // read each sub-group for fn to look at
    Write,   // fn fills each sub-group (its buffer's contents are undefined), written out
  };
  // Every sub-group in order, through the buffers; returns when all reads and writes are done.
  // Reads prefetch() started are the first ones it would issue.
  void forEach(Mode mode, const std::function<void(const Group&)>& fn);
  // Starts reading the sub-groups the next forEach reads first, into their buffers, so that the
  // disk works through the forward and backward passes before the update. The file must hold
  // the state (nothing staged in memory newer than it) until that forEach.
  void prefetch();
  // Lets queued I/O proceed; call between pieces of a long fn.
  void progress() { swap_.file().progress(); }

  const SwapLayout& layout() const { return layout_; }
  const AioFile& file() const { return swap_.file(); }

 private:
  SwapLayout layout_;
  SwapFile swap_;  // no buffers for an empty shard
  // Reads prefetch() started: sub-groups [0, prefetched_.size()), sub-group g in buffer g.
  std::vector<AioFile::Ticket> prefetched_;
};

}  // namespace parascope
