#include "core/train/flat_layout.h"

#include <algorithm>
#include <unordered_map>

namespace parascope {

FlatLayout::Part FlatLayout::partOf(int i, std::int64_t numel, int rank) const {
  const auto at = static_cast<std::size_t>(i);
  const FlatBucket& b = buckets[static_cast<std::size_t>(bucketOf[at])];
  const std::int64_t part = partSize(b), mine = b.begin + rank * part, begin = offset[at];
  const std::int64_t lo = std::max(begin, mine), hi = std::min(begin + numel, mine + part);
  if (hi <= lo) return {};
  return {lo - begin, b.shardOffset + (lo - mine), hi - lo};
}

FlatLayout makeFlatLayout(const Model& model, int shards, const ParallelStrategy& s) {
  FlatLayout l;
  l.shards = shards;
  const auto& params = model.parameters();
  std::unordered_map<const Parameter*, int> index;
  for (std::size_t i = 0; i < params.size(); ++i) index[&params[i]] = static_cast<int>(i);
  std::vector<int> owner(params.size(), -1);  // the first layer reading each parameter
  for (std::size_t layer = model.layers().size(); layer-- > 0;) {
    for (const Parameter* p : model.layers()[layer]->parameters())
      owner[static_cast<std::size_t>(index.at(p))] = static_cast<int>(layer);
  }
  const bool byLayer = s.zeroStage >= 2;
  l.offset.resize(params.size());
  l.bucketOf.resize(params.size());
  std::int64_t used = 0;  // of the open bucket
  int openOwner = -1;     // the layer whose parameters the open bucket holds
  auto close = [&] {
    FlatBucket& b = l.buckets.back();
    b.count = (used + shards - 1) / shards * shards;
    l.total = b.begin + b.count;
    used = 0;
  };
  for (std::size_t i = params.size(); i-- > 0;) {
    const bool newLayer = byLayer && owner[i] != openOwner;
    if (l.buckets.empty() || used >= s.bucketElements || newLayer) {
      if (!l.buckets.empty()) close();
      FlatBucket& b = l.buckets.emplace_back();
      b.begin = l.total;
      b.shardOffset = l.total / shards;
    }
    openOwner = owner[i];
    l.offset[i] = l.buckets.back().begin + used;
    l.bucketOf[i] = static_cast<int>(l.buckets.size()) - 1;
    l.buckets.back().parameters.push_back(static_cast<int>(i));
    used += params[i].numel();
  }
  if (!l.buckets.empty()) close();
  for (const auto& layer : model.layers()) {
    std::vector<int>& mine = l.layerParameters.emplace_back();
    std::vector<int>& buckets = l.layerBuckets.emplace_back();
    for (const Parameter* p : layer->parameters()) {
      mine.push_back(index.at(p));
      buckets.push_back(l.bucketOf[static_cast<std::size_t>(mine.back())]);
    }
    std::sort(buckets.begin(), buckets.end());
    buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  }
  return l;
}

// The flat buffer has the parameters' storage type (f32, or the mixed-precision compute type).
// Values the model stores are copied in, so for a moment they are held twice.
Tensor flattenValues(Model& model, const FlatLayout& layout, std::optional<std::uint64_t> seed) {
  Tensor flat = Tensor::zeros({layout.total}, model.computeType(), MemoryCategory::Parameter,
                              model.allocator());
  std::size_t i = 0;
  for (Parameter& p : model.parameters()) {
    Tensor view = flat.slice(layout.offset[i++], p.numel()).view(p.shape);
    if (p.storedValue().defined())
      view.copyFrom(p.storedValue());
    else if (seed)
      p.initialValues(*seed, view);
    p.storedValue() = view;  // releases the parameter's own storage
  }
  return flat;
}

// Gradients start from zero, so each parameter's own storage is released before the flat buffer
// is allocated: the two are never held at once (copying, as values need, would double the peak).
Tensor flattenGradients(Model& model, const FlatLayout& layout) {
  for (Parameter& p : model.parameters()) p.storedGrad() = Tensor();
  Tensor flat = Tensor::zeros({layout.total}, model.computeType(), MemoryCategory::Gradient,
                              model.allocator());
  std::size_t i = 0;
  for (Parameter& p : model.parameters())
    p.storedGrad() = flat.slice(layout.offset[i++], p.numel()).view(p.shape);
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

DataParallelWork dataParallelWork(const FlatLayout& layout, const std::vector<LayerRange>& chunks,
                                  Op reduce, bool eachMicroBatch, bool gathers) {
  DataParallelWork work;
  work.reduce = reduce;
  work.eachMicroBatch = eachMicroBatch;
  work.bucketChunks.resize(layout.buckets.size());
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    for (int layer = chunks[c].begin; layer < chunks[c].end; ++layer) {
      for (int b : layout.layerBuckets[static_cast<std::size_t>(layer)]) {
        auto& writers = work.bucketChunks[static_cast<std::size_t>(b)];
        if (std::find(writers.begin(), writers.end(), static_cast<int>(c)) == writers.end())
          writers.push_back(static_cast<int>(c));
      }
    }
    if (gathers) {
      const std::vector<int>& first =
          layout.layerBuckets[static_cast<std::size_t>(chunks[c].begin)];
      work.forwardGroup.push_back(first.empty() ? -1 : first.front());
    }
  }
  return work;
}

}  // namespace parascope
