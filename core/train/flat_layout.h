// One flat buffer for all of a model's parameters (or gradients), laid out in reverse
// parameter order, the order backward produces gradients in, padded to a multiple of the
// data-parallel size so that it splits into equal ZeRO shards. Each Parameter's tensor becomes
// a view into the buffer, so bucketed collectives run in place with no staging copy.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/model.h"

namespace parascope {

struct FlatLayout {
  std::vector<std::int64_t> offset;  // per parameter, in Model::parameters() order
  std::int64_t used = 0;             // sum of parameter sizes
  std::int64_t total = 0;            // used rounded up to a multiple of the shard count
  int shards = 1;
  std::int64_t shardSize() const { return total / shards; }
};

FlatLayout makeFlatLayout(const Model& model, int shards);

// Moves every parameter's value (keeping its contents) or gradient (zeroed) into one buffer of
// layout.total elements under the tensor's memory category; returns the buffer.
Tensor flattenValues(Model& model, const FlatLayout& layout);
Tensor flattenGradients(Model& model, const FlatLayout& layout);

}  // namespace parascope
