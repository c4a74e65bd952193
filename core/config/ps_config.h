// The config of a run trained with parameter servers, in Paddle Fleet's words: the
// `parameter_server` block (server_num, worker_num, mode, k_steps, one table block for the sparse
// embedding table and one for the dense parameters) and the model it trains: word2vec
// (model.type "word2vec"), or the GPT (model.type "gpt" with a parameter_server block), whose
// token embedding is the sparse table and whose other parameters are the dense one. Read and
// validated here, like every config (core/config/); the run itself is core/ps/. Keys and
// defaults: docs/config.md, "parameter_server".
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.h"

namespace parascope {

// sync: every step's pushes are merged (in worker order) and applied before any pull of the next
// step is answered, as data-parallel training would; async: each push is applied as it arrives
// and pulls are answered at once (workers see parameters some pushes old); geo: workers train on
// local copies and push what changed every k_steps steps; collective: no servers, the workers
// all-reduce dense gradients (the comparison run).
enum class PsMode : std::uint8_t { Sync, Async, Geo, Collective };
const char* psModeName(PsMode m);

// The per-row update rules of Paddle's sparse accessors; one per table.
enum class RowRule : std::uint8_t { Sgd, Adagrad, Adam };
const char* rowRuleName(RowRule r);

struct TableSpec {
  RowRule rule = RowRule::Adam;
  double learningRate = 0.005;
  double initialRange = 0;  // values start uniform in [-r, r] (0: all zero)
  double initialG2sum = 0;  // adagrad's accumulator at the start
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // adam
  // Floats each row keeps besides its values, for a row of `dim` values.
  int stateFloats(int dim) const;
};

// Skip-gram with negative sampling. Input vectors: a sparse table of `rows` rows, the first
// vocabSize the words themselves, the rest hashed (previous word, word) pairs; a centre word's
// vector is the mean of its word row and its pair row. Output vectors: vocabSize x dim, dense.
struct Word2VecSpec {
  int dim = 64;
  int window = 5;     // context words on each side
  int negatives = 5;  // sampled per context word, from unigram^0.75
  int vocabSize = 16384;
  int minCount = 5;
  double sample = 0;  // frequent words' subsampling threshold (word2vec's -sample); 0: off
  std::int64_t pairRows = std::int64_t{1} << 22;  // hashed pair rows after the words
  std::int64_t rows() const { return vocabSize + pairRows; }
};

struct ParameterServerSpec {
  PsMode mode = PsMode::Sync;
  int servers = 1;  // the first `servers` ranks; 0 in collective mode
  int workers = 2;
  int kSteps = 1;  // geo: local steps between pushes
  // async: a worker other than worker 0 that fails is reported and the others go on; else any
  // failing rank ends the run.
  bool continueOnWorkerFailure = false;
  TableSpec sparse;
  TableSpec dense;
  int ranks() const { return servers + workers; }
};

// Both tables as the servers hold them: rows of `dim` floats. The dense table is the model's
// dense parameters laid end to end in rows of that width (the GPT's last row padded with zeros).
struct PsTables {
  int dim = 0;
  std::int64_t sparseRows = 0;
  int denseRows = 0;
  std::int64_t denseValues = 0;  // the dense parameters (at most denseRows x dim)
};

struct PsConfig {
  enum class Model : std::uint8_t { Word2Vec, Gpt };
  Model modelType = Model::Word2Vec;
  Word2VecSpec model;  // word2vec's
  GptConfig gpt;       // the GPT's: wte is the sparse table, every other parameter dense
  DataSpec data;
  ParameterServerSpec ps;
  // train_micro_batch_size_per_gpu: centre words (word2vec) or sequences (gpt) per worker step.
  int microBatch = 256;
  int trainIters = 100;
  int logInterval = 20;
  // Validation batches per evaluation: word2vec's of microBatch x workers centres, the GPT's of
  // microBatch sequences (as the engine's evaluation).
  int evalIters = 4;
  std::uint64_t seed = 1234;
  std::string backend = "threads";
  nlohmann::json document;

  bool isGpt() const { return modelType == Model::Gpt; }
  const char* modelName() const { return isGpt() ? "gpt" : "word2vec"; }
  PsTables tables() const;
  // The GPT's dense parameters in the dense table's order (every one but wte), with their
  // shapes; empty for word2vec.
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> denseParameters() const;
  // What a worker step trains on: its micro-batch's targets (word2vec: a centre word each).
  std::int64_t targetsPerWorkerStep() const {
    return static_cast<std::int64_t>(microBatch) * (isGpt() ? gpt.contextLength : 1);
  }
};

// Whether a document trains with the parameter-server runner: model.type "word2vec", or any
// model with a parameter_server block.
bool isPsConfig(const nlohmann::json& document);
// Whether a key of the table is read only for word2vec (its model keys, parameter_server).
bool isWord2VecKey(const ConfigKey& key);

// Reads and validates; throws UserError naming the key (for a GPT, also the engine's keys that
// do not apply: the servers update by the tables' rules, on one rank per worker). worldSize > 0:
// the ranks were started from outside (mpirun) and server_num + worker_num must equal it.
PsConfig parsePsConfig(const nlohmann::json& document, int worldSize = 0);

// The most bytes a server and a worker hold when every row has been touched: what a run is
// checked against before it starts. A row costs its values and state, and up to 56 bytes of
// index (a table at most half full, just grown, and its list of rows).
struct PsMemory {
  std::int64_t perServer = 0;  // its share of the sparse rows, its slice of the dense table
  std::int64_t perWorker = 0;  // the dense table and its gradient; geo: its local copies;
                               // collective: both tables whole and the dense gradient
};
PsMemory psMemory(const PsConfig& c);

}  // namespace parascope
