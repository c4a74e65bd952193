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
