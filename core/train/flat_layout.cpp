#include "core/train/flat_layout.h"

#include <algorithm>

namespace parascope {

FlatLayout::Part FlatLayout::partOf(int i, std::int64_t numel, int rank) const {
  const auto at = static_cast<std::size_t>(i);
  const FlatBucket& b = buckets[static_cast<std::size_t>(bucketOf[at])];
  const std::int64_t part = partSize(b), mine = b.begin + rank * part, begin = offset[at];
  const std::int64_t lo = std::max(begin, mine), hi = std::min(begin + numel, mine + part);
  if (hi <= lo) return {};
  return {lo - begin, b.shardOffset + (lo - mine), hi - lo};
}

FlatLayout makeFlatLayout(const Model& model, int shards, std::int64_t bucketElements) {
  FlatLayout l;
  l.shards = shards;
  const auto& params = model.parameters();
  l.offset.resize(params.size());
  l.bucketOf.resize(params.size());
  std::int64_t used = 0;  // of the open bucket
  auto close = [&] {
    FlatBucket& b = l.buckets.back();
    b.count = (used + shards - 1) / shards * shards;
    l.total = b.begin + b.count;
    used = 0;
  };
  for (std::size_t i = params.size(); i-- > 0;) {
    if (l.buckets.empty() || used >= bucketElements) {
      if (!l.buckets.empty()) close();
      FlatBucket& b = l.buckets.emplace_back();
      b.begin = l.total;
      b.shardOffset = l.total / shards;
    }
    l.offset[i] = l.buckets.back().begin + used;
    l.bucketOf[i] = static_cast<int>(l.buckets.size()) - 1;
    l.buckets.back().parameters.push_back(static_cast<int>(i));
    used += params[i].numel();
  }
  if (!l.buckets.empty()) close();
  return l;
}

namespace {

// The flat buffer has the parameters' storage type (f32, or the mixed-precision compute type).
Tensor flatten(Model& model, const FlatLayout& layout, bool gradients, MemoryCategory category) {
  Tensor flat = Tensor::zeros({layout.total}, model.computeType(), category, model.allocator());
  std::size_t i = 0;
  for (Parameter& p : model.parameters()) {
    Tensor& member = gradients ? p.storedGrad() : p.storedValue();
    Tensor view = flat.slice(layout.offset[i++], p.numel()).view(p.shape);
    view.copyFrom(member);
    member = view;  // releases the parameter's own storage
  }
  return flat;
}

}  // namespace

Tensor flattenValues(Model& model, const FlatLayout& layout) {
  return flatten(model, layout, false, MemoryCategory::Parameter);
}

Tensor flattenGradients(Model& model, const FlatLayout& layout) {
  Tensor flat = flatten(model, layout, true, MemoryCategory::Gradient);
  flat.zero();
  return flat;
}

void attachBucketGradients(Model& model, const FlatLayout& layout, int b, const Tensor& storage) {
  const FlatBucket& bucket = layout.buckets[static_cast<std::size_t>(b)];
  for (int i : bucket.parameters) {
    Parameter& p = model.parameters()[static_cast<std::size_t>(i)];
    p.storedGrad() =
        storage.slice(layout.offset[static_cast<std::size_t>(i)] - bucket.begin, p.numel())
            .view(p.shape);
  }
}

void detachBucketGradients(Model& model, const FlatLayout& layout, int b) {
  for (int i : layout.buckets[static_cast<std::size_t>(b)].parameters) {
    model.parameters()[static_cast<std::size_t>(i)].storedGrad() = Tensor();
  }
}

}  // namespace parascope
