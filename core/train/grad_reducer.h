// Data-parallel gradient reduction, overlapped with backward as PyTorch DDP and DeepSpeed do.
// Buckets come from flat_layout.h (reverse parameter order). A bucket's asynchronous reduction
// starts as soon as backward has finished every parameter in it (a parameter used by several
// layers, like the tied embedding, after the last of them); buckets start strictly in order, so
// every rank issues the same sequence. The sum over ranks is the global mean gradient because
// each rank's loss weight is 1 / (targets in the global batch). Gradients are held in the
// parameters' storage type (f32, or bf16 / fp16 under mixed precision).
//  - AllReduce (ZeRO 0 and 1): gradients live in one flat buffer; only the last micro-step of an
//    optimizer step communicates, earlier ones accumulate locally.
//  - ReduceScatter (ZeRO 2): a rank keeps only its shard of the gradients. A bucket's storage
//    exists from the first backward pass that writes it until its reduce-scatter completes and
//    its part is added to the shard; every micro-step communicates (as DeepSpeed's stage 2).
//    Before a layer's backward, at most one started bucket may still be in flight (older ones
//    are waited for): one reducing while the next fills, as DeepSpeed's double-buffered
//    gradient buckets; with a bucket per layer (flat_layout.h) that bounds the full-size
//    gradients to two layers' whatever the scheduling. A bucket is freed only there or at the
//    micro-step's end, never on finding it done sooner, so the peak is the same on every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "core/comm/communicator.h"
#include "core/train/flat_layout.h"

namespace parascope {

class GradientReducer {
 public:
  enum class Mode : std::uint8_t { AllReduce, ReduceScatter };
  // ZeRO-2 buckets whose reduce-scatter may still run when a layer's backward begins.
  static constexpr std::size_t kMaxInFlight = 1;
  // Installs a backward hook on the model and takes over its gradient storage.
  // commType: the type gradients travel in (F32, BF16 or F16; communication_data_type). A type
  // other than the storage type goes through a staging copy per bucket (CommBuffer memory);
  // bf16 / fp16 are summed in f32 by the communication layer, rounded once per reduction.
  GradientReducer(Model& model, const FlatLayout& layout, Communicator& comm, Mode mode,
                  bool overlap, DType commType = DType::F32);
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // The step's start: all-reduce mode starts the model's gradients (Model::startGradients),
  // reduce-scatter mode zeroes this rank's shard.
  void beginStep();
  void beginMicroStep(bool last);  // `last`: the optimizer step's final micro-step
  // Bucket b's reduction, and every earlier bucket's, is issued by now (a ReduceGradBucket or
  // ZeroScatter instruction): started from the backward hooks already when overlapping, else
  // here. std::logic_error if a bucket's gradients are not final yet.
  void issue(int b);
  // After a micro-step's backward: completes its communication, if any. Returns the seconds
  // spent waiting (communication not hidden by backward).
  double endMicroStep();

  // The reduced gradients this rank holds, in the storage type: the whole flat space
  // (AllReduce) or its shard, indexed like FlatBucket::shardOffset (ReduceScatter).
  const Tensor& gradients() const { return reduced_; }
  bool sharded() const { return mode_ == Mode::ReduceScatter; }
  // Sums of squares of the reduced gradients this rank holds (its shard in ReduceScatter mode),
  // of whole and of split parameters, leaving out parameter `skip` (an index into
  // Model::parameters(), or -1); grad_norm.h sums them over the groups.
  std::pair<double, double> squaresBySplit(int skip = -1) const;
  const FlatLayout& layout() const { return layout_; }
  // Called with each bucket once its reduced gradients are final for the step, as the optimizer
  // step's last micro-step completes the bucket's reduction: during that backward pass with
  // ZeRO-2, at its end with an all-reduce. ZeRO-Offload starts their copies to the host there.
  void setOnFinal(std::function<void(int bucket)> onFinal) { onFinal_ = std::move(onFinal); }

 private:
  struct Bucket {
    int pending = 0;  // parameters not yet final in this backward pass
    Tensor storage;   // ReduceScatter: this micro-step's full bucket, until reduced
    Tensor staging;   // low-precision copy in flight (communication_data_type)
    CommHandle handle;
  };
  void onBackward(std::size_t layer, bool finished);
  void startReady();
  void start(int b);
  void complete(int b);  // after the handle finished
  void progress();

  Model& model_;
  FlatLayout layout_;
  Communicator& comm_;
  Mode mode_;
  bool overlap_;
  DType commType_;
  DType storage_;  // of gradients: f32 or the mixed-precision compute type
  bool communicating_ = false;
  bool last_ = false;  // the micro-step is the optimizer step's last
  std::function<void(int)> onFinal_;
  bool armed_ = false;  // start buckets during backward
  Tensor reduced_;      // flat gradients (AllReduce) or this rank's shard (ReduceScatter)
  std::vector<Bucket> buckets_;
  std::vector<int> uses_, remaining_;  // per parameter: layers using it, still to run
  std::size_t nextToStart_ = 0, nextToComplete_ = 0;
};

}  // namespace parascope
