// How a run is spread over ranks: the parallel degrees (Megatron's names), the batch split
// (DeepSpeed's names), ZeRO stage, precision, gradient bucketing and the rank backend. The keys
// are read and checked in core/config/strategy_config.h; the mesh built from it is in mesh.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/tensor/dtype.h"

namespace parascope {

enum class RankBackend : std::uint8_t { Threads, Mpi };
std::string_view rankBackendName(RankBackend b);
RankBackend parseRankBackend(const std::string& name);  // "threads" | "mpi"; UserError otherwise

struct LossScaleSpec {     // DeepSpeed's fp16 block (core/train/loss_scaler.h)
  double staticScale = 0;  // loss_scale: > 0 a fixed scale, 0 dynamic
  int initialScalePower = 16;
  int lossScaleWindow = 1000;
  int hysteresis = 2;
  bool consecutiveHysteresis = false;
  double minLossScale = 1.0;
};

// Where ZeRO keeps a state it offloads (DeepSpeed's offload_optimizer / offload_param `device`):
// none, host memory (cpu; this engine's ranks compute in host memory, so the state stays where
// it is), or files on a local disk (nvme), read and written around each use.
enum class OffloadDevice : std::uint8_t { None, Cpu, Nvme };
std::string_view offloadDeviceName(OffloadDevice d);

struct OffloadSpec {  // zero_optimization.offload_optimizer / offload_param
  OffloadDevice device = OffloadDevice::None;
  std::string nvmePath;    // the directory of the swap files (device nvme)
  int bufferCount = 4;     // sub-groups in memory at once: one updated, the rest read or written
  bool pinMemory = false;  // lock the I/O buffers in memory (mlock)
  bool operator==(const OffloadSpec&) const = default;
};

// DeepSpeed's `aio` block: how a rank's swap reads and writes reach the disk (core/offload).
struct AioSpec {
  std::int64_t blockSize = 1 << 20;  // bytes per request the kernel is given
  int queueDepth = 8;                // requests in flight at most
  int threadCount = 1;               // submission queues (kernel AIO contexts) per rank
  bool singleSubmit = false;         // one io_submit per request rather than per batch
  bool overlapEvents = true;         // submit as completions free slots, not batch by batch
  bool operator==(const AioSpec&) const = default;
};

struct ParallelStrategy {
  int tensor = 1;    // tensor_model_parallel_size
  int pipeline = 1;  // pipeline_model_parallel_size
  int data = 1;      // data_parallel_size
  // context_parallel_size: each sequence's tokens split over this many ranks, keys and values
  // exchanged in the attention core (Megatron's ring attention). Planned, not trained.
  int context = 1;
  bool sequenceParallel = false;  // sequence_parallel (Megatron's --sequence-parallel)
  int zeroStage = 0;
  // Gradient bucket capacity in elements (DeepSpeed's reduce_bucket_size counts elements);
  // default 25 MiB of f32, PyTorch DDP's bucket_cap_mb.
  std::int64_t bucketElements = 25 * 1024 * 1024 / 4;
  bool overlapComm = true;
  // ZeRO-3's gathers, in elements (DeepSpeed's stage3_prefetch_bucket_size and
  // stage3_max_live_parameters, with their defaults): while a layer runs, the next layer's
  // parameters are prefetched only if they number at most prefetchElements and the gathered
  // parameters then stay within maxLiveElements; the model's last layer stays gathered from its
  // forward to its backward only within maxLiveElements.
  std::int64_t prefetchElements = 50'000'000;
  std::int64_t maxLiveElements = 1'000'000'000;
  // The two rules, for the gatherer and the memory estimate's replay of it: `need` elements not
  // yet gathered for the next layer, `live` gathered now.
  bool mayPrefetch(std::int64_t need, std::int64_t live) const {
    return need <= prefetchElements && live + need <= maxLiveElements;
  }
  bool mayKeepGathered(std::int64_t live) const { return live <= maxLiveElements; }
  // ZeRO-Offload / ZeRO-Infinity: the optimizer's shard (AdamW's moments and the f32 master)
  // swapped to nvmePath in sub-groups of subGroupElements (DeepSpeed's sub_group_size); ZeRO-3's
  // parameter shard swapped a bucket's part at a time, each part at most
  // paramBufferElements (offload_param.buffer_size).
  OffloadSpec offloadOptimizer;
  OffloadSpec offloadParam;
  std::int64_t paramBufferElements = 100'000'000;
  std::int64_t subGroupElements = 1'000'000'000;
  AioSpec aio;
  bool swapsOptimizer() const { return offloadOptimizer.device == OffloadDevice::Nvme; }
  bool swapsParameters() const { return offloadParam.device == OffloadDevice::Nvme; }
  DType compute = DType::F32;   // fp16.enabled -> F16, bf16.enabled -> BF16
  DType gradComm = DType::F32;  // communication_data_type
  LossScaleSpec lossScale;
  RankBackend backend = RankBackend::Threads;

  // World ranks are numbered tensor fastest, then context, data and pipeline (Megatron's order).
  int worldSize() const { return tensor * context * data * pipeline; }
  // The ranks that reduce one gradient and share ZeRO's shards: data x context, consecutive in
  // steps of the tensor size (Megatron's data-parallel group with context parallelism).
  int gradientGroup() const { return data * context; }
  // The ranks of one pipeline stage: the stride between pipeline neighbours.
  int ranksPerPipelineRank() const { return tensor * context * data; }
};

}  // namespace parascope
