// Byte-level text: every byte is a token (vocabulary 256). Reads one file or every regular file
// of a directory tree (sorted by path; index files such as fortune's *.dat and symbolic links
// are skipped). The text is cut into 16 KiB blocks and every k-th block (k from the validation
// fraction) goes to the validation split, so both splits sample the whole corpus. Sample i of a
// split is a window of T + 1 bytes at an offset drawn from (seed, split, i).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/data/dataset.h"

namespace parascope {

// The bytes of `path`: one file, or every regular file of a directory tree as above, in path
// order; *files counts the files read. UserError for a missing path or more than the corpus
// limit.
std::vector<std::uint8_t> readTextCorpus(const std::string& path, int* files);

class TextDataset final : public Dataset {
 public:
  // Throws UserError for a missing path, empty text or a split shorter than one window.
  TextDataset(const std::string& path, int sequenceLength, double validationFraction,
              std::uint64_t seed);

  Batch batch(Split split, std::int64_t firstSample, int rows, Allocator& allocator) const override;
  int targetsPerSample() const override { return sequenceLength_; }
  std::int64_t samples(Split split) const override;
  std::string describe() const override;

  int maxByte() const { return maxByte_; }
  std::int64_t bytes(Split split) const;
  int files() const { return files_; }

 private:
  std::string path_;
  int sequenceLength_;
  std::uint64_t seed_;
  std::vector<std::uint8_t> train_, validation_;
  int maxByte_ = 0;
  int files_ = 0;
};

}  // namespace parascope
