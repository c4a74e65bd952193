// ZeRO stages 1 to 3: AdamW whose moments exist only for this rank's shard of the flat
// parameter space (part `rank` of every bucket, flat_layout.h). Each rank updates its shard from
// the reduced gradients (all of them after an all-reduce, or just its shard after ZeRO-2's
// reduce-scatter), then in-place all-gathers, one per bucket, give every rank the whole updated
// model. Optimizer state per rank: 8 bytes x padded parameters / N, against 8 per parameter.
// Mixed precision adds the f32 master copy of the shard (12 bytes in all): the update reads the
// bf16 / fp16 gradients, updates the master and stores it rounded into the 16-bit parameters.
#pragma once

#include "core/comm/communicator.h"
#include "core/kernels/adamw.h"
#include "core/train/flat_layout.h"

namespace parascope {

class ShardedAdamW {
 public:
  // Flattens the model's values into the layout (Parameter memory; flattenValues, with `seed`),
  // or with ZeRO-3 updates `valueShard` (this rank's parameter shard, param_gatherer.h) and
  // gathers nothing.
  ShardedAdamW(Model& model, const FlatLayout& layout, Communicator& comm,
               const kernels::AdamWHyper& hyper, std::optional<std::uint64_t> seed,
               const Tensor& valueShard = Tensor());

  // grads (storage type): the whole flat space, or (gradsAreShard) this rank's shard. Returns the
  // seconds spent waiting for the parameter all-gathers.
  double step(double lr, double gradScale, const Tensor& grads, bool gradsAreShard);
  int steps() const { return steps_; }
  void setSteps(int steps) { steps_ = steps; }  // a restored run's updates so far (bias correction)

  struct Segment {  // one parameter's part of this rank's shard
    std::int64_t flatBegin = 0, count = 0, shardBegin = 0;
    bool decay = true;
    int parameter = 0;  // index into Model::parameters()
  };
  // For resharding and checkpoints: this rank's segments; its moments and (mixed precision) f32
  // master, indexed by Segment::shardBegin; the parameters in the storage type, the whole flat
  // space (indexed by flatBegin) or with ZeRO-3 the shard (valuesSharded).
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
  void update(const Segment& s, const kernels::AdamWHyper& h, double gradScale, const Tensor& grads,
              bool gradsAreShard);

  Tensor values_;  // flat, or this rank's shard; storage type
  bool valuesSharded_ = false;
  Tensor master_;  // mixed precision: f32 copy of this rank's shard
  Tensor m_, v_;   // shard-sized
  std::vector<Segment> segments_;
  int steps_ = 0;
};

}  // namespace parascope
