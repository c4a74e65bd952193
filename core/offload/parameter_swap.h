// ZeRO-Infinity's parameter tier: one rank's ZeRO-3 shard of the parameters (in the stored type,
// f32 or the mixed-precision compute type) lives in the rank's swap file, one record per flat
// bucket (the rank's part of the bucket, core/train/flat_layout.h, padded to 4 KiB), and comes
// into memory a record at a time through a pool of offload_param.buffer_count buffers: the
// gatherer reads a layer's records ahead of the layer's all-gathers (param_gatherer.h), and the
// optimizer sweeps the records in order, updating each in a buffer and writing it back (a Sweep,
// while the next records are read). Checkpoints and resharding see the whole shard, read into
// memory (stageIn) until the next optimizer step writes it back (stageOut).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/offload/aio_file.h"
#include "core/tensor/tensor.h"

namespace parascope {

struct ParameterSwapLayout {
  std::vector<std::int64_t> partElements;  // per bucket: the rank's part
  std::int64_t elementBytes = 4;           // the stored type's
  int bufferCount = 1;                     // offload_param.buffer_count

  int records() const { return static_cast<int>(partElements.size()); }
  std::int64_t recordBytes(int b) const;  // the part's bytes, padded to 4 KiB
  std::int64_t recordOffset(int b) const;
  std::int64_t largestRecordBytes() const;
  std::int64_t fileBytes() const;
  int buffers() const;  // at most one per record
  // The rank's memory for the swap: its buffers, allocated as one block (Parameter memory).
  std::int64_t memoryBytes() const;
};

class ParameterSwap {
 public:
  // Creates the rank's swap file (AioFile: messages name offload_param.nvme_path) and its
  // buffers (SwapFile). The records are undefined until written.
  ParameterSwap(ParameterSwapLayout layout, const ParallelStrategy& s, Allocator& allocator);

  const ParameterSwapLayout& layout() const { return layout_; }
  AioFile& file() { return swap_.file(); }
  const AioFile& file() const { return swap_.file(); }
  char* buffer(int i) const;  // i < layout().buffers(), each largestRecordBytes()
  // Called before the swap uses every buffer itself (a sweep, stageOut): whoever else reads into
  // them (the gatherer's read-ahead) gives them back.
  void setQuiesce(std::function<void()> fn) { quiesce_ = std::move(fn); }
  AioFile::Ticket read(int record, char* buffer);
  AioFile::Ticket write(int record, const char* buffer);

  // The whole shard in memory (one tensor of `type`, bucket b's part at the sum of the earlier
  // parts), read through the first buffer; empty while not staged. Its contents are written back
  // by stageOut, which then gives the memory back.
  void stageIn(DType type);
  void stageOut();
  const Tensor& staged() const { return staged_; }

  // One pass over the records in order (record() never goes back), `ahead` reads in front of the
  // record in use; with writeBack each record asked for is written back when the sweep moves on.
  // The buffers are the swap's: no other reads may be pending while a sweep runs.
  class Sweep {
   public:
    // A sweep left unfinished (an error on the way) leaves its requests to the file, which waits
    // for them before the buffers go (the run has failed then).
    Sweep(ParameterSwap& swap, bool writeBack);
    Sweep(const Sweep&) = delete;
    Sweep& operator=(const Sweep&) = delete;
    char* record(int b);
    void finish();

   private:
    void settle(int b);
    ParameterSwap& swap_;
    bool writeBack_;
    int ahead_;
    int issued_ = 0;                        // records whose read has been started
    int current_ = -1;                      // the record in use
    std::vector<AioFile::Ticket> pending_;  // per buffer
  };

 private:
  ParameterSwapLayout layout_;
  SwapFile swap_;
  Tensor staged_;
  std::function<void()> quiesce_;
};

}  // namespace parascope
