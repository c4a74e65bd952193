// Image classification data in the IDX format (MNIST, Fashion-MNIST), gzip-compressed:
// <dir>/train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz,
// t10k-labels-idx1-ubyte.gz. The training split is read in a fresh permutation per epoch
// (drawn from the seed), the validation split is the test set in order. Pixels become
// (x / 255 - mean) / std with the training set's statistics.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/data/dataset.h"

namespace parascope {

// One IDX file: the dimensions and the raw unsigned bytes. Throws UserError naming the file for
// a missing file, a gzip error or truncation, a wrong magic number or a size mismatch.
struct IdxArray {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> data;
};
IdxArray readIdx(const std::string& path, int expectedRank);

class IdxDataset final : public Dataset {
 public:
  IdxDataset(const std::string& directory, std::uint64_t seed);

  Batch batch(Split split, std::int64_t firstSample, int rows, Allocator& allocator) const override;
  int targetsPerSample() const override { return 1; }
  std::int64_t samples(Split split) const override;
  std::string describe() const override;

  int features() const { return features_; }
  int classes() const { return classes_; }

 private:
  struct Part {
    std::vector<std::uint8_t> pixels;
    std::vector<std::uint8_t> labels;
    std::int64_t count = 0;
  };
  static Part load(const std::string& images, const std::string& labels);
  // Image index of a training sample; callers hold epochMutex_.
  std::int64_t trainIndex(std::int64_t sample) const;

  std::string directory_;
  std::uint64_t seed_;
  Part train_, test_;
  int features_ = 0;
  int classes_ = 0;
  float mean_ = 0, invStd_ = 1;
  // The permutation of the last epoch asked for (consecutive samples share an epoch).
  mutable std::mutex epochMutex_;
  mutable std::int64_t epoch_ = -1;
  mutable std::vector<std::int64_t> order_;
};

}  // namespace parascope
