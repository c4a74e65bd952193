// One flat index space for all of a model's parameters (and gradients), laid out in reverse
// parameter order, the order backward produces gradients in, and cut into buckets of about
// bucketElements; with ZeRO-2 and 3 also wherever one layer's parameters end and the next one's
// begin, so a layer's full-size gradients or gathered parameters never hold another layer's (as
// FSDP's one flat parameter per transformer block). Each bucket is padded to a multiple of the
// data-parallel size N and split into N equal parts: rank d owns part d of every bucket (its ZeRO
// shard), so a bucket's reduce-scatter or all-gather lands every part on its owner in place.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/model/model.h"
#include "core/parallel/pipeline_layout.h"
#include "core/parallel/program_builder.h"
#include "core/parallel/strategy.h"

namespace parascope {

struct FlatBucket {
  std::int64_t begin = 0;        // in the flat space
  std::int64_t count = 0;        // padded to a multiple of the shard count
  std::int64_t shardOffset = 0;  // where this bucket's part starts within a rank's shard
  std::vector<int> parameters;   // indices into Model::parameters()
};

struct FlatLayout {
  std::vector<std::int64_t> offset;  // per parameter, in Model::parameters() order
  std::vector<int> bucketOf;         // per parameter
  std::vector<FlatBucket> buckets;   // in flat order
  // Per model layer: the indices of the parameters it reads (a tied embedding's in two layers),
  // and the buckets holding them, ascending. What the backward hooks reduce and ZeRO-3 gathers.
  std::vector<std::vector<int>> layerParameters;
  std::vector<std::vector<int>> layerBuckets;
  std::int64_t total = 0;  // padded size of the flat space
  int shards = 1;

  std::int64_t shardSize() const { return total / shards; }
  std::int64_t partSize(const FlatBucket& b) const { return b.count / shards; }

  // The elements of parameter i (numel elements) in rank `rank`'s shard: `count` of them from
  // `local` in the parameter, at `shard` in the shard (count 0: none).
  struct Part {
    std::int64_t local = 0, shard = 0, count = 0;
  };
  Part partOf(int i, std::int64_t numel, int rank) const;
};

// A bucket closes once it holds s.bucketElements (a larger parameter gets one of its own) and,
// with s.zeroStage >= 2, at every layer boundary: a parameter belongs to the first layer that
// reads it (the tied embedding to the embedding layer).
FlatLayout makeFlatLayout(const Model& model, int shards, const ParallelStrategy& s);

// Moves every parameter's stored value (keeping its contents) or gradient (zeroed) into one
// buffer of layout.total elements of the storage type (f32, or the mixed-precision compute type)
// under the tensor's memory category; returns the buffer. A model that stores no values
// (ModelStorage) gets them initialised from `seed` in the buffer, or zero without one (a state
// is loaded into them next).
Tensor flattenValues(Model& model, const FlatLayout& layout, std::optional<std::uint64_t> seed);
Tensor flattenGradients(Model& model, const FlatLayout& layout);

// Stored gradients as views into `storage` (bucket b's count elements, zeroed), or none.
void attachBucketGradients(Model& model, const FlatLayout& layout, int b, const Tensor& storage);
void detachBucketGradients(Model& model, const FlatLayout& layout, int b);

// What a rank's step program carries besides compute, for its chunks (ranges of its model's
// layers): per gradient bucket the chunks writing it; with ZeRO-3 (`gathers`) per chunk the
// shard group its first layer needs. `reduce`: ReduceGradBucket or ZeroScatter. The trainer and
// the simulator (core/plan) place the same work.
DataParallelWork dataParallelWork(const FlatLayout& layout, const std::vector<LayerRange>& chunks,
                                  Op reduce, bool eachMicroBatch, bool gathers);

}  // namespace parascope
