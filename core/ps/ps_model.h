// What a parameter-server run trains, as a worker sees it: each step a batch that touches some
// rows of the sparse table and the whole dense table (PsTables), a forward and backward pass over
// those values, and validation batches' losses. word2vec (skip-gram over the corpus's words) and
// the GPT (its token embedding the sparse table, every other parameter the dense one, run by the
// engine's own layers on one rank) are its two models; the servers and workers move rows
// whatever the model is.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/config/ps_config.h"
#include "core/data/dataset.h"
#include "core/ps/row_table.h"

namespace parascope::ps {

class Word2VecCorpus;

class PsModel {
 public:
  virtual ~PsModel() = default;
  // Readies worker `worker`'s part of step t's batch (Train), or validation batch t (Validation,
  // the whole of it); returns the distinct sparse rows it touches, ascending.
  virtual const std::vector<std::int64_t>& prepare(Split split, int t, int worker) = 0;
  // On the prepared batch, `in` the values of its rows (rows x dim) and `dense` the dense table
  // (denseRows x dim): accumulates (+=) the gradient of the batch's mean loss into dIn and
  // dDense, and returns that mean (nats).
  virtual double forwardBackward(const float* in, const float* dense, float* dIn,
                                 float* dDense) = 0;
  // The prepared batch's loss summed over its targets (*targets of them), without gradients.
  virtual double lossSum(const float* in, const float* dense, std::int64_t* targets) = 0;
};

// The engine's config of the same GPT on one rank (a GPT worker's): what its build, its
// initialisation and the memory estimate of its activations read.
TrainConfig engineConfig(const PsConfig& c);

// UserError for a GPT's text that its workers could not train on, before any rank starts
// (word2vec's corpus is read whole beforehand instead).
void checkPsData(const PsConfig& c);

// One worker's model. `corpus`: word2vec's, read once per process (unused for a GPT, whose
// worker opens its text as the engine's ranks do). A GPT's parameters come from `allocator`, the
// rank's, which outlives the model.
std::unique_ptr<PsModel> makePsModel(const PsConfig& c, const Word2VecCorpus* corpus,
                                     Allocator& allocator);

// A table's initial rows, the same on every server and worker: word2vec's are drawn from (seed,
// table, row) (RowTable's own, so this is empty); a GPT's are the engine's initial parameters
// for config.seed, so a run starts where a collective one does.
// The GPT it draws them from is built in `allocator`, the rank's, and freed before it returns.
RowInit initialRows(const PsConfig& c, std::uint32_t table, Allocator& allocator);

}  // namespace parascope::ps
