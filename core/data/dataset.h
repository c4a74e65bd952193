// Datasets hand out micro-batches by sample number: sample i of a split is the same whatever
// batch, micro-batch or rank asks for it, so every parallel layout sees the same global batch.
#pragma once

#include <cstdint>
#include <string>

#include "core/model/layer.h"

namespace parascope {

enum class Split : std::uint8_t { Train, Validation };

class Dataset {
 public:
  virtual ~Dataset() = default;
  // Samples [firstSample, firstSample + rows) of the split as one batch (lossWeight left 1).
  virtual Batch batch(Split split, std::int64_t firstSample, int rows,
                      Allocator& allocator) const = 0;
  // Targets (positions or labels) per sample: T for text, 1 for classification.
  virtual int targetsPerSample() const = 0;
  // Distinct samples in a split; a full pass over the validation split is this many samples.
  virtual std::int64_t samples(Split split) const = 0;
  virtual std::string describe() const = 0;
};

}  // namespace parascope
