// What a run will need in memory, per rank, before anything is allocated: the allocator's
// categories (core/tensor/allocator.h) and the training data. Model state and communication
// buffers are replayed on the strategy's plan (strategy_plan.h): the trainer's flat layout with
// its padding and ZeRO shards, 16-bit values beside fp32 masters, AdamW's moments, ZeRO-2's
// gradient buckets and ZeRO-3's gathered copies, staging copies and the tied embedding's
// exchange, over the rank's own step program (not evaluation, nor saving weights). That equals the
// allocator's peaks: the trainer frees a bucket or a staging copy where the step waits for its
// collective, however soon it finished. Activations are replayed too, each layer's
// tensors as its passes allocate them (ModelKind::layerActivations) with the pipeline's transfer
// buffers; they equal the allocator's peaks when every send is found complete at the rank's next
// send (a receiver already waiting frees one sooner, a lagging one later). Workspace is an
// estimate (mixed precision's f32 working copies; kernels' scratch is not counted). A function of
// the config and the data's size, so the CLI's check and the workbench's strategy panel show the
// same numbers.
#pragma once

#include <string>
#include <vector>

#include "core/common/printable.h"  // formatBytes, which the estimate's users print with
#include "core/config/config.h"

namespace parascope {

struct MemoryItem {
  // "parameters", "gradients", "optimizer state", "activations", "communication buffers",
  // "workspace", "data"
  std::string name;
  double bytes = 0;  // per rank at its peak; double, so that absurd settings never overflow
  // Of `bytes`, what is held through the whole step (the model state the trainer allocates
  // once: the parameters, gradients and moments it keeps, its ZeRO shards; the data); the rest
  // comes and goes within the step (ZeRO-2/3's full-size gradient buckets, ZeRO-3's gathered
  // layers, activations). 0 for the categories that hold nothing between steps.
  double residentBytes = 0;
  // The peak over the steps alone, without what the trainer's construction holds for a moment
  // (ZeRO-3's first copy of each parameter): what a session switched live to this strategy
  // reaches from its next step on.
  double stepBytes = 0;
};

struct MemoryEstimate {
  // Per rank: items[c] for each MemoryCategory c, in its order, then the data.
  std::vector<MemoryItem> items;
  int ranksSharingMemory = 1;  // ranks of this job in one machine's memory
  // What the ZeRO paper calls model states: parameters, gradients and optimizer state as the
  // trainer allocates them once, before the step's transient gradient buckets and gathers.
  double modelStateBytes = 0;
  // On the disk, not in memory: the rank's swap files (offload_optimizer and offload_param
  // device nvme), and of them the parameters'.
  double swapBytes = 0;
  double parameterSwapBytes = 0;
  // In the host's memory, not the device's: ZeRO-Offload's optimizer state from a GPU, with the
  // host's copies of the shard (offload_optimizer device cpu).
  double hostBytes = 0;
  // ZeRO-3: the rank's part of its largest bucket, elements (what offload_param.buffer_size must
  // hold).
  std::int64_t largestParameterPart = 0;
  double perRankBytes() const;
  // What a rank's allocator holds at its peak: every item but the data set (memory_limit_bytes).
  double trackedBytes() const;
  double totalBytes() const { return perRankBytes() * ranksSharingMemory; }
  const MemoryItem& largest() const;
};

// `dataBytes`: what the data set holds in memory once loaded (dataBytesInMemory).
// `ranksSharingMemory`: threads backend, the world size; under mpirun, the ranks on this node.
// `activationBytes`: an activation element's size, 4 for this engine (f32 activations; under
// mixed precision what a layer keeps for its backward is stored in the compute type, which the
// estimate takes from the config), the compute type's for a plan on GPUs (cost_model.h's
// activationElementBytes).
// Per pipeline rank (its data- and tensor-parallel ranks hold the same), rank 0 first.
std::vector<MemoryEstimate> estimateRankMemory(const TrainConfig& c, double dataBytes,
                                               int ranksSharingMemory, double activationBytes = 4);
// The busiest pipeline rank's: the largest per-rank total.
MemoryEstimate estimateMemory(const TrainConfig& c, double dataBytes, int ranksSharingMemory,
                              double activationBytes = 4);

// The largest micro-batch, 1 to `limit`, whose run `estimateMemory` puts within `availableBytes`,
// everything else as in `c` (gradient accumulation and the parallel degrees kept, so the global
// batch grows with it); 0 when not even one sequence fits. The estimate grows with the
// micro-batch, so a bisection finds it.
int largestMicroBatch(const TrainConfig& c, double dataBytes, int ranksSharingMemory,
                      double availableBytes, int limit = 1 << 16, double activationBytes = 4);

// The data set's size in memory once loaded, from file sizes (text: the files under data.path;
// IDX: the sizes the gzip trailers state). 0 when the path cannot be read (loading then fails
// with its own message).
double dataBytesInMemory(const DataSpec& data);

// Memory this process may still use: the smaller of the kernel's MemAvailable and the control
// group's limit minus its usage; a negative value when neither is known.
double availableMemoryBytes();

// UserError "memory: the run needs about ... (largest: ...), more than the ... available; ..."
// when the estimate exceeds `availableBytes` (ignored when negative).
void checkMemory(const MemoryEstimate& estimate, double availableBytes);
// UserError "memory: ..." when the host memory ZeRO-Offload keeps for the ranks of a GPU run
// (hostBytes, times the ranks sharing the machine) exceeds `availableBytes` (ignored when
// negative): checked beside the device's memory, before any rank allocates.
void checkHostMemory(const MemoryEstimate& estimate, double availableBytes);

// Address space an in-process rank's thread reserves beyond its tracked memory: its stack
// (8 MiB), glibc's malloc arena and its products' buffers. Measured as VmSize per thread, 8
// threads each after three 512^3 products: 63 MiB with oneDNN (its buffers come and go with each
// product), 175 MiB with OpenBLAS (PARASCOPE_SGEMM=openblas keeps a buffer per calling thread).
// With margin, 96 MiB or 192 MiB by the library in use (core/kernels/sgemm_library.h). Reserved,
// not resident: it matters only under an address-space limit (ulimit -v).
double addressSpacePerRankThread();

// The address space this process may still map under RLIMIT_AS (its limit less VmSize);
// negative when unlimited or unknown.
double availableAddressSpaceBytes();

// UserError "address space: ..." when `estimate` plus addressSpacePerRankThread() for each of
// `threads` rank threads exceeds `availableBytes` (ignored when negative): under ulimit -v,
// ranks that could not map their buffers spun in OpenBLAS's allocator instead of failing.
void checkAddressSpace(const MemoryEstimate& estimate, int threads, double availableBytes);

// Free space for an unprivileged user on the file system holding `path`; negative if unknown.
double availableDiskBytes(const std::string& path);

// What a benchmark sized by a count (events, ...) holds at its peak: `fixedBytes` plus
// `bytesPerItem` for each of `count` items (measured for each benchmark and stated where it is
// called). UserError "<option> <count>: the benchmark needs about ... of <resource> (...), more
// than the ... available; at most <n> fit" when it exceeds `availableBytes` (ignored when
// negative), before any work.
void checkCountFits(const std::string& option, double count, double bytesPerItem, double fixedBytes,
                    const std::string& resource, double availableBytes);

}  // namespace parascope
