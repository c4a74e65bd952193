// Skip-gram with negative sampling, forward and backward on one batch (word2vec_corpus.h): a
// centre's vector h is the mean of its two input rows (word, hashed pair); each context word c
// and its negatives n score h . out[c], h . out[n]; the loss is -log s(h.out[c]) - sum log
// s(-h.out[n]), averaged over the batch's pairs times `scale`. CPU, no allocation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/ps/word2vec_corpus.h"

namespace parascope::ps {

// The distinct input rows of a batch, ascending, and for each of batch.inputRows its index there.
struct RowSet {
  std::vector<std::int64_t> rows;
  std::vector<std::int32_t> index;
};
void distinctRows(std::span<const std::int64_t> rows, RowSet& out);

// in: rows.rows.size() x dim (values of the distinct input rows); out: vocab x dim.
// dIn, dOut: accumulated (+=), same shapes; the gradient of the batch's loss sum times `scale`.
// Returns the loss summed over the batch's pairs (unscaled).
double skipGramForwardBackward(const Word2VecSpec& m, const Word2VecBatch& batch,
                               const RowSet& rows, const float* in, const float* out, float* dIn,
                               float* dOut, float scale);

// The loss summed over the batch's pairs, without gradients.
double skipGramLoss(const Word2VecSpec& m, const Word2VecBatch& batch, const RowSet& rows,
                    const float* in, const float* out);

}  // namespace parascope::ps
