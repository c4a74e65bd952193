// Training with parameter servers (Paddle Fleet's mode) or collectively, word2vec or the GPT
// (ps_model.h): the first
// server_num ranks of the world serve the tables, the others work. In-process threads or an
// Open MPI world, over the one Communicator. A rank that fails ends its peers with the reason
// (runInProcess, failMpiWorld). What each rank did comes back to worker 0, which reports.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/comm/communicator.h"
#include "core/config/ps_config.h"

namespace parascope::ps {

// One server's load over the run.
struct ServerLoad {
  int rank = 0;
  std::int64_t rowsHeld = 0;    // sparse rows created (touched at least once)
  std::int64_t tableBytes = 0;  // both tables' memory on this server
  std::int64_t pulls = 0, pushes = 0;
  std::int64_t rowsPulled = 0, rowsPushed = 0;  // sparse rows, summed over requests
  // Pushes' payloads received (ids, values, dense slice) and pulls' replies sent (rows, slice).
  std::int64_t bytesIn = 0, bytesOut = 0;
  double busySeconds = 0;  // handling requests and applying updates
  double waitSeconds = 0;  // waiting for requests
};

// One worker's side; staleness (async): how many pushes a server applied between this
// worker's pull of its rows and its push of their gradients, over all its pushes.
struct WorkerLoad {
  int rank = 0;
  std::int64_t rowsPulled = 0;  // distinct rows per step, summed over steps
  std::int64_t pulls = 0;       // pulls (each asks every server holding some of the rows)
  double pullSeconds = 0, computeSeconds = 0, pushSeconds = 0;
  double stalenessMean = 0;
  std::int64_t stalenessMax = 0;
  int steps = 0;  // steps it finished in this run
};

// A worker that failed and the run went on without (parameter_server.worker_failure).
struct WorkerFailure {
  int rank = 0;
  int step = 0;  // the 0-based step it failed in
  std::string reason;
};

struct PsStepReport {
  int step = 0;  // 1-based
  int totalSteps = 0;
  double loss = 0;  // worker 0's batch: mean over its targets (word2vec: pairs), nats
  double seconds = 0;
};

struct Neighbours {
  std::string word;
  std::vector<std::pair<std::string, double>> nearest;  // cosine similarity, best first
};

struct PsResult {
  std::vector<ServerLoad> servers;
  std::vector<WorkerLoad> workers;
  double validationLoss = 0;  // mean over eval_iters validation batches' targets, nats
  double finalLoss = 0;       // the last step's training loss (worker 0)
  std::vector<Neighbours> neighbours;
  double seconds = 0;        // training, first step to last push
  std::int64_t targets = 0;  // trained, all workers: centre words (word2vec), tokens (gpt)
  std::vector<WorkerFailure> failures;
  std::string checkpoint;  // the step directory RunOptions::save wrote; empty for none
  int vocabulary = 0;
  std::int64_t corpusWords = 0;  // in the vocabulary, training split
  // With RunOptions::gatherTables: every touched sparse row and the dense table (its rows x dim).
  std::map<std::int64_t, std::vector<float>> sparseRows;
  std::vector<float> dense;
};

struct RunOptions {
  std::function<void(const PsStepReport&)> onStep;  // on worker 0's thread
  // Called on every rank's thread: by a server after each request it handled (with their
  // count), by a worker before each step (with its 0-based index). What it throws is that
  // rank's failure (the tests' way to make one fail).
  std::function<void(int rank, std::int64_t progress)> progress;
  bool gatherTables = false;
  // Checkpoints of the servers' tables (ps_checkpoint.h): continue from `load` (its step counts
  // toward train_iters), and save into `save` at the end, keeping the newest `keep` (0: all).
  std::string load, save;
  int keep = 0;
  // With `save`: also every saveInterval steps (counted from step 0, a continued run's saved ones
  // included), at the step boundary the servers share: sync mode's steps, geo's rounds (a
  // multiple of k_steps). 0: at the end only.
  int saveInterval = 0;
  std::vector<std::string> probeWords = {"love", "time", "money", "god",   "man",
                                         "life", "good", "day",   "world", "never"};
  int neighbours = 5;
};

// UserError naming the keys when the tables, every row touched, need more than `availableBytes`
// (ignored when negative) on the `ranksHere` ranks this machine runs (all of them for threads).
void checkTableMemory(const PsConfig& c, double availableBytes, int ranksHere);

// UserError for checkpoint options the run cannot take (collective mode, a checkpoint of other
// tables or at or past train_iters), before any rank starts.
void checkCheckpointOptions(const PsConfig& c, const RunOptions& options);

// The world's rank `world.rank()` of the run. Returns true on worker 0 (then *result holds the
// run's report). `world.size()` must be server_num + worker_num.
bool runPsRank(const PsConfig& c, Communicator& world, const RunOptions& options, PsResult* result);

// Every rank on threads of this process; the report.
PsResult runPsThreads(const PsConfig& c, const RunOptions& options);

}  // namespace parascope::ps
