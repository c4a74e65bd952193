// word2vec's data: the words of a text corpus (lower-case ASCII letters and apostrophes; any
// other byte separates words), its vocabulary (words seen at least min_count times, the
// vocab_size most frequent, ties by spelling), and the batches skip-gram trains on. Words out of
// the vocabulary are dropped from the stream. The stream is cut into blocks of 16384 words and
// every k-th block (k from data.validation_fraction) is validation. Centre i of a step's batch
// sits at a position drawn from (seed, split, step, i), and its negatives from the unigram^0.75
// distribution with the same seed: any split of a batch over workers sees the same pairs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/config/ps_config.h"
#include "core/data/dataset.h"

namespace parascope::ps {

// Centres [first, first + count) of one step's batch. Per centre: its word row and hashed pair
// row of the input table, then 2 window context slots (-1 past either end of the stream), and
// per context slot `negatives` sampled words.
struct Word2VecBatch {
  int centres = 0;
  std::vector<std::int64_t> inputRows;  // centres x 2
  std::vector<std::int32_t> contexts;   // centres x 2 window
  std::vector<std::int32_t> negatives;  // centres x 2 window x negatives
  std::int64_t pairs = 0;               // valid (centre, context) pairs
};

class Word2VecCorpus {
 public:
  // UserError when the text has fewer than 2 words kept or a split shorter than 2 window + 1.
  explicit Word2VecCorpus(const PsConfig& c);

  int vocabSize() const { return static_cast<int>(words_.size()); }
  const std::string& word(int id) const { return words_[static_cast<std::size_t>(id)]; }
  std::int64_t count(int id) const { return counts_[static_cast<std::size_t>(id)]; }
  int id(std::string_view word) const;  // -1 when not in the vocabulary
  std::int64_t streamWords(Split split) const;
  std::int64_t textBytes() const { return textBytes_; }
  int files() const { return files_; }

  void batch(Split split, std::int64_t step, std::int64_t first, int count,
             Word2VecBatch& out) const;

 private:
  Word2VecSpec model_;
  std::uint64_t seed_;
  std::vector<std::string> words_;
  std::vector<std::int64_t> counts_;
  std::unordered_map<std::string, int> ids_;
  std::vector<std::int32_t> train_, validation_;
  std::vector<double> unigram_;  // cumulative unigram^0.75, ending at 1
  std::int64_t textBytes_ = 0;
  int files_ = 0;
};

// The input table's row of the pair (previous word, word); previous = -1 at the stream's start.
std::int64_t pairRow(const Word2VecSpec& m, std::int32_t previous, std::int32_t word);

}  // namespace parascope::ps
