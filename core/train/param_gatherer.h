// ZeRO stage 3: a rank keeps only its shard of the parameters (part `rank` of every bucket,
// flat_layout.h). Around each of a layer's forward and backward passes (every micro-batch's,
// however a pipeline interleaves them) the buckets holding its parameters are all-gathered into
// full-size storage (the parameters' stored values, f32 or the mixed-precision compute type, become
// views into it) and freed when no running layer needs them. With ZeRO-3 a bucket holds one
// layer's parameters (flat_layout.h), so a layer's gather brings back that layer alone. The next
// layer's buckets are prefetched asynchronously while the current one computes, and the rank's
// last layer stays gathered after its forward until the next layer pass begins (usually its own
// backward, which then needs no second gather), both within the strategy's bounds
// (ParallelStrategy::prefetchElements, maxLiveElements); a layer's own gather is never refused.
// Every rank runs the same layers in the same order and sees the same bounds, so every rank
// issues the same gathers.
//
// With zero_optimization.offload_param.device nvme the shard lives in the rank's swap file
// (core/offload/parameter_swap.h), a record per bucket. A gather starts where it would in
// memory, at the same point of the rank's program (the data-parallel group's collectives must
// be issued in the same order on every rank, whatever the disk does), and takes the rank's part
// from a swap buffer: read ahead while earlier layers computed, or read then and waited for.
// Each layer pass reads ahead the parts of the layers after the one being prefetched, in the
// pass's direction, into the free buffers (one is always kept for a read nobody foresaw); what
// was read ahead and not gathered is dropped before the optimizer's sweep, which rewrites the
// records.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "core/comm/communicator.h"
#include "core/offload/parameter_swap.h"
#include "core/parallel/strategy.h"
#include "core/train/flat_layout.h"

namespace parascope {

// The parameter swap of a rank's ZeRO-3 shard under `layout` in the stored type: what the
// gatherer creates and the memory estimate counts, so they agree to the byte.
ParameterSwapLayout parameterSwapLayout(const FlatLayout& layout, DType stored,
                                        const ParallelStrategy& s);

class ParameterGatherer {
 public:
  // Takes the model's (initialised, replicated) values, keeps this rank's shard and frees the
  // rest; installs forward and backward hooks. A model that stores no values (ModelStorage) has
  // its shard initialised from `seed`, one parameter at a time, or zero without one (a state is
  // loaded into it next): the whole model is never held.
  ParameterGatherer(Model& model, const FlatLayout& layout, Communicator& comm,
                    const ParallelStrategy& strategy, std::optional<std::uint64_t> seed);
  ParameterGatherer(const ParameterGatherer&) = delete;
  ParameterGatherer& operator=(const ParameterGatherer&) = delete;

  // This rank's shard in the storage type, indexed like FlatBucket::shardOffset (Parameter
  // memory); empty when it is swapped (swap()).
  const Tensor& shard() const { return shard_; }
  // The shard's swap file with offload_param nvme, else null.
  ParameterSwap* swap() const { return swap_.get(); }
  // Collective: gathers every bucket and keeps it (e.g. to save or compare weights) until
  // releaseAll().
  void gatherAll();
  // Frees what gatherAll() and the last layer's forward kept (before the parameters change); a
  // swapped shard's read-ahead is dropped (the records are about to change).
  void releaseAll();
  // Starts gathering bucket b ahead of the layer that needs it (a ZeroGather instruction); the
  // layer's own gather then finds it on its way.
  void prefetch(int b) { startGather(b); }
  // Swapped: reads ahead the first layers' parts, for a step's forward.
  void readAheadForward() {
    if (swap_) readAhead(0, 1);
  }
  // Seconds spent waiting for gathers since the last call (not for a swapped part's read: that
  // is the disk's, a `parameter_read_wait` span in the trace).
  double takeWaitSeconds();

 private:
  struct Bucket {
    Tensor storage;     // full bucket while gathered
    CommHandle handle;  // pending gather
    int users = 0;      // running layers (or gatherAll) that need it
    int buffer = -1;    // swapped: the swap buffer its part is being read into
    AioFile::Ticket read = 0;
  };
  void writeShard(std::optional<std::uint64_t> seed);
  void allGather(int b);
  void readPart(int b);  // into a free swap buffer
  // From `layer` on in steps of `direction`, while a buffer beyond the kept one is free.
  void readAhead(int layer, int direction);
  void dropReadAhead();
  void onLayer(std::size_t layer, bool finished, int next);
  // Elements of `layer`'s buckets that are not gathered or on their way.
  std::int64_t missingElements(std::size_t layer) const;
  void startGather(int b);
  void acquire(int b);
  void release(int b);
  void releaseKept();

  Model& model_;
  FlatLayout layout_;
  Communicator& comm_;
  Tensor shard_;
  std::unique_ptr<ParameterSwap> swap_;
  std::vector<int> freeBuffers_;  // swap buffers no read holds
  std::vector<Bucket> buckets_;
  std::vector<int> kept_;      // buckets of the last layer's forward, until the next pass begins
  ParallelStrategy strategy_;  // its ZeRO-3 bounds
  std::int64_t liveElements_ = 0;  // gathered or on their way
  bool pinned_ = false;
  double waited_ = 0;
};

}  // namespace parascope
