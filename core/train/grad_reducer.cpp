#include "core/train/grad_reducer.h"

#include <chrono>
#include <unordered_map>

#include "core/trace/trace.h"

namespace parascope {

GradientReducer::GradientReducer(Model& model, Tensor flat, const FlatLayout& layout,
                                 Communicator& comm, std::int64_t bucketElements, bool overlap)
    : flat_(std::move(flat)), comm_(comm), overlap_(overlap) {
  auto& params = model.parameters();
  const int n = static_cast<int>(params.size());
  bucketOf_.assign(static_cast<std::size_t>(n), 0);
  // Flat order is reverse parameter order; a bucket closes once it holds bucketElements.
  for (int i = n - 1; i >= 0; --i) {
    const auto ui = static_cast<std::size_t>(i);
    if (buckets_.empty() || buckets_.back().count >= bucketElements) {
      buckets_.push_back({layout.offset[ui], 0, 0, 0, {}});
    }
    buckets_.back().count += params[ui].numel();
    buckets_.back().parameters += 1;
    bucketOf_[ui] = static_cast<int>(buckets_.size()) - 1;
  }
  if (!buckets_.empty()) buckets_.back().count += layout.total - layout.used;  // the padding
  std::unordered_map<const Parameter*, int> index;
  for (int i = 0; i < n; ++i) index[&params[static_cast<std::size_t>(i)]] = i;
  uses_.assign(static_cast<std::size_t>(n), 0);
  for (const auto& layer : model.layers()) {
    std::vector<int>& mine = layerParams_.emplace_back();
    for (Parameter* p : layer->parameters()) {
      mine.push_back(index.at(p));
      uses_[static_cast<std::size_t>(index.at(p))] += 1;
    }
  }
  model.addBackwardHook([this](std::size_t layer) { onLayerDone(layer); });
}

void GradientReducer::beginMicroStep(bool last) {
  armed_ = last && overlap_;
  remaining_ = uses_;
  for (Bucket& b : buckets_) b.pending = b.parameters;
  // A parameter no layer uses has its final (zero) gradient already.
  for (std::size_t i = 0; i < uses_.size(); ++i) {
    if (uses_[i] == 0) buckets_[static_cast<std::size_t>(bucketOf_[i])].pending -= 1;
  }
  nextToStart_ = 0;
  if (armed_) startReady();
}

void GradientReducer::onLayerDone(std::size_t layer) {
  if (!armed_) return;
  for (int i : layerParams_[layer]) {
    if (--remaining_[static_cast<std::size_t>(i)] == 0) {
      buckets_[static_cast<std::size_t>(bucketOf_[static_cast<std::size_t>(i)])].pending -= 1;
    }
  }
  startReady();
}

void GradientReducer::startReady() {
  while (nextToStart_ < buckets_.size() && buckets_[nextToStart_].pending == 0) {
    Bucket& b = buckets_[nextToStart_++];
    float* data = flat_.data<float>() + b.begin;
    b.handle = comm_.allReduceAsync(data, data, static_cast<std::size_t>(b.count), DType::F32,
                                    ReduceOp::Sum);
  }
}

double GradientReducer::finish() {
  const trace::Span span("gradient_reduce_wait", trace::Category::Sync);
  const auto start = std::chrono::steady_clock::now();
  armed_ = false;
  for (Bucket& b : buckets_) b.pending = 0;
  startReady();
  for (Bucket& b : buckets_) {
    b.handle.wait();
    b.handle = CommHandle();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace parascope
