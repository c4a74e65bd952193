// ZeRO stages 1 to 3: AdamW whose moments exist only for this rank's shard of the flat
// parameter space (part `rank` of every bucket, flat_layout.h). Each rank updates its shard from
// the reduced gradients (all of them after an all-reduce, or just its shard after ZeRO-2's
// reduce-scatter), then in-place all-gathers, one per bucket, give every rank the whole updated
// model. Optimizer state per rank: 8 bytes x padded parameters / N, against 8 per parameter.
// Mixed precision adds the f32 master copy of the shard (12 bytes in all): the update reads the
// bf16 / fp16 gradients, updates the master and stores it rounded into the 16-bit parameters.
// With zero_optimization.offload_optimizer.device nvme that state lives in the rank's swap file
// instead (core/offload/optimizer_swap.h) and each step streams it through a few sub-group
// buffers; AdamW is element-wise, so the updates are the same to the bit. With ZeRO-3's
// parameter shard swapped too (offload_param nvme, core/offload/parameter_swap.h) the update
// sweeps its records in order alongside, each read ahead, updated in a buffer and written back.
//
// ZeRO-Offload (offload_optimizer cpu, ZeRO 1 to 3, a model in a device's memory): the state,
// and host copies of the shard's gradients and stored values, live in host memory, and the CPU's
// AdamW updates them, as DeepSpeed's CPU Adam. Each bucket's part of the reduced gradients
// starts for the host when the step begins or, into pinned memory, as soon as it is final
// (GradientReducer::setOnFinal: during the last backward pass with ZeRO-2), each copy running
// beside the GPU's work and the updates of the buckets before it; each bucket's updated part goes
// back to the device as soon as it is done, while the next is updated, and is all-gathered there.
// The same kernel on the same values: the updates are the device's to the bit (test_offload). On
// the host the state is where the model is, and the option changes nothing.
#pragma once

#include <memory>

#include "core/comm/communicator.h"
#include "core/kernels/adamw.h"
#include "core/kernels/ops.h"
#include "core/offload/optimizer_swap.h"
#include "core/offload/parameter_swap.h"
#include "core/train/flat_layout.h"

namespace parascope {

class ShardedAdamW {
 public:
  // Flattens the model's values into the layout (Parameter memory; flattenValues, with `seed`),
  // or with ZeRO-3 updates `valueShard` (this rank's parameter shard, param_gatherer.h), or the
  // shard in `valueSwap` when it is swapped, and gathers nothing.
  // The strategy says whether the state is swapped (ParallelStrategy::swapsOptimizer).
  ShardedAdamW(Model& model, const FlatLayout& layout, Communicator& comm,
               const kernels::AdamWHyper& hyper, const ParallelStrategy& strategy,
               std::optional<std::uint64_t> seed, const Tensor& valueShard = Tensor(),
               ParameterSwap* valueSwap = nullptr);
  ~ShardedAdamW();

  // grads (storage type): the whole flat space, or (gradsAreShard) this rank's shard. Returns the
  // seconds spent waiting for the parameter all-gathers.
  double step(double lr, double gradScale, const Tensor& grads, bool gradsAreShard);
  int steps() const { return steps_; }
  // A swapped state: starts reading what the next update reads first, so the disk works during
  // the step's passes (nothing, while a checkpoint's load has the state staged in memory).
  void prefetchState() {
    if (swap_ && !m_.defined()) swap_->prefetch();
  }
  // Bytes read from and written to the optimizer's swap file so far (0 without one).
  std::int64_t swapBytes() const {
    return swap_ ? swap_->file().bytesRead() + swap_->file().bytesWritten() : 0;
  }
  void setSteps(int steps) { steps_ = steps; }  // a restored run's updates so far (bias correction)
  // ZeRO-Offload: whether the state is on the host; bucket b's reduced gradients (`grads` as
  // step() takes them) are final, and their part starts for the host (GradientReducer::
  // setOnFinal).
  bool offloaded() const { return device_ != nullptr; }
  void gradientsFinal(int b, const Tensor& grads, bool gradsAreShard);

  struct Segment {  // one parameter's part of this rank's shard
    std::int64_t flatBegin = 0, count = 0, shardBegin = 0;
    bool decay = true;
    int parameter = 0;  // index into Model::parameters()
    int bucket = 0;     // the flat bucket holding it
  };
  // For resharding and checkpoints: this rank's segments; its moments and (mixed precision) f32
  // master, indexed by Segment::shardBegin; the parameters in the storage type, the whole flat
  // space (indexed by flatBegin) or with ZeRO-3 the shard (valuesSharded). A swapped state (and
  // parameter shard) is read into memory first (stageIn), and what a load wrote there goes back
  // to the swap file at the next step, after which the memory is given back.
  void stageIn();
  const std::vector<Segment>& segments() const { return segments_; }
  const FlatLayout& layout() const { return layout_; }
  const Tensor& expAvg() const { return m_; }
  const Tensor& expAvgSq() const { return v_; }
  const Tensor& master() const { return master_; }
  const Tensor& values() const { return values_; }
  bool valuesSharded() const { return valuesSharded_; }

 private:
  FlatLayout layout_;
  Communicator& comm_;
  kernels::AdamWHyper hyper_;
  void update(const Segment& s, std::int64_t from, std::int64_t count, float* master, float* m,
              float* v, const kernels::AdamWHyper& h, double gradScale, const Tensor& grads,
              bool gradsAreShard, ParameterSwap::Sweep* sweep);
  kernels::AdamWHyper hyperFor(const Segment& s, double lr) const;
  // Bucket b's part of the stored values: in memory, in the sweep's buffer, or under ZeRO-Offload
  // the host's copy.
  char* valuesPart(int b, ParameterSwap::Sweep* sweep) const;
  void widenMaster(std::int64_t begin, std::int64_t count, float* out,
                   ParameterSwap::Sweep* sweep) const;

  Tensor values_;  // flat, or this rank's shard; storage type; empty while swapped
  DType stored_ = DType::F32;
  bool valuesSharded_ = false;
  ParameterSwap* valueSwap_ = nullptr;  // the gatherer's
  Tensor master_;                       // mixed precision: f32 copy of this rank's shard
  Tensor m_, v_;                        // shard-sized
  std::vector<Segment> segments_;
  // Swapped: m_, v_ and master_ exist only while staged in.
  std::unique_ptr<OptimizerSwap> swap_;
  Allocator* allocator_;
  const kernels::KernelOps* ops_;  // the model's: AdamW and the masters on its device
  void allocateState();
  void stageOut();
  // ZeRO-Offload's step: the updates on the host, then the parts back to the device.
  void stepOnHost(double lr, double gradScale, const Tensor& grads, bool gradsAreShard);
  // Bucket b's part of the shard in `all` (flat, or with `sharded` the shard), in the model's
  // memory.
  char* devicePart(const Tensor& all, bool sharded, int b) const;
  void readHostValues();  // the device's values into hostValues_, if stale
  int steps_ = 0;
  // ZeRO-Offload: the device's memory calls, the host's copies of the shard (storage type,
  // indexed like FlatBucket::shardOffset), and whether the host's values must be read again
  // from the device (a load or a switch wrote the device's).
  DeviceMemory* device_ = nullptr;
  Tensor hostBlock_, hostValues_, hostGrads_;  // the two copies are views of the block
  bool hostValuesStale_ = false;
  // This step's copies of the gradients' parts to the host, by bucket, and which are started.
  std::vector<std::shared_ptr<void>> down_;
  std::vector<char> started_;
  void finishCopies() noexcept;  // waits for every started copy, for unwinding
  void* pinned_ = nullptr;       // pin_memory: the pages to unpin before the block goes
};

}  // namespace parascope
