// Data-parallel gradient reduction, overlapped with backward as PyTorch DDP does: gradients
// live in one flat buffer (flat_layout.h) cut into buckets of about bucketElements, in reverse
// parameter order. On the last micro-step of an optimizer step, a bucket's asynchronous sum
// starts as soon as backward has finished every parameter in it (a parameter used by several
// layers, like the tied embedding, after the last of them); earlier micro-steps communicate
// nothing. Buckets start strictly in order, so every rank issues the same sequence.
// The sum over ranks is the global mean because each rank's loss weight is 1 / global targets.
#pragma once

#include <cstdint>
#include <vector>

#include "core/comm/communicator.h"
#include "core/train/flat_layout.h"

namespace parascope {

class GradientReducer {
 public:
  // Installs a backward hook on the model. `flat` is the flattened gradient buffer.
  GradientReducer(Model& model, Tensor flat, const FlatLayout& layout, Communicator& comm,
                  std::int64_t bucketElements, bool overlap);
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Arms the next backward pass: `last` on the final micro-step of an optimizer step.
  void beginMicroStep(bool last);
  // Starts every bucket not yet started and waits for all of them; the flat buffer then holds
  // the sum over ranks. Returns the seconds spent waiting (communication not hidden by
  // backward).
  double finish();

  int bucketCount() const { return static_cast<int>(buckets_.size()); }
  std::int64_t bucketBegin(int b) const { return buckets_[static_cast<std::size_t>(b)].begin; }

 private:
  struct Bucket {
    std::int64_t begin = 0, count = 0;
    int parameters = 0;  // parameters in the bucket
    int pending = 0;     // of them, not yet final in this backward pass
    CommHandle handle;
  };
  void onLayerDone(std::size_t layer);
  void startReady();

  Tensor flat_;
  Communicator& comm_;
  bool overlap_;
  bool armed_ = false;
  std::vector<Bucket> buckets_;
  std::vector<int> bucketOf_;                  // per parameter
  std::vector<int> uses_, remaining_;          // per parameter: layers using it, still to run
  std::vector<std::vector<int>> layerParams_;  // per layer: parameter indices
  std::size_t nextToStart_ = 0;
};

}  // namespace parascope
