// The run: ranks split into servers and workers, training, worker 0's evaluation (validation loss
// and nearest neighbours), and every rank's load gathered to worker 0.
#include "core/ps/ps_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <stdexcept>

#include "core/comm/launch.h"
#include "core/common/error.h"
#include "core/common/printable.h"
#include "core/plan/memory_estimate.h"
#include "core/ps/ps_checkpoint.h"
#include "core/ps/ps_model.h"
#include "core/ps/ps_server.h"
#include "core/ps/ps_worker.h"
#include "core/ps/word2vec_corpus.h"
#include "core/state/checkpoint.h"
#include "core/trace/trace.h"

namespace parascope::ps {

namespace {

// What each rank sends worker 0 at the end: kLoadWords numbers, then per worker the staleness a
// server saw (sum, max, pushes).
constexpr std::size_t kLoadWords = 12;

// A message of `bytes` bytes of text travels as this many 8-byte words.
std::size_t textWords(std::size_t bytes) {
  return (bytes + 7) / 8;
}

std::int64_t nanoseconds(double seconds) {
  return static_cast<std::int64_t>(std::llround(seconds * 1e9));
}

std::vector<std::int64_t> serverWords(const Server& s, int workers) {
  const ServerLoad& l = s.load();
  std::vector<std::int64_t> v = {1,
                                 l.rowsHeld,
                                 l.tableBytes,
                                 l.pulls,
                                 l.pushes,
                                 l.rowsPulled,
                                 l.rowsPushed,
                                 l.bytesIn,
                                 l.bytesOut,
                                 nanoseconds(l.busySeconds),
                                 nanoseconds(l.waitSeconds),
                                 0};
  for (int w = 0; w < workers; ++w) {
    v.push_back(s.stalenessSum[w]);
    v.push_back(s.stalenessMax[w]);
    v.push_back(s.stalenessCount[w]);
  }
  return v;
}

// A worker's: its load, the steps it finished, and whether (and how long a reason) it failed.
std::vector<std::int64_t> workerWords(const WorkerLoad& l, int workers,
                                      const std::string& failure) {
  std::vector<std::int64_t> v = {2,
                                 l.rowsPulled,
                                 l.pulls,
                                 nanoseconds(l.pullSeconds),
                                 nanoseconds(l.computeSeconds),
                                 nanoseconds(l.pushSeconds),
                                 l.steps,
                                 failure.empty() ? -1 : static_cast<std::int64_t>(failure.size())};
  v.resize(kLoadWords + 3 * static_cast<std::size_t>(workers), 0);
  return v;
}

// `stride`: the words each rank sent (a save adds its shard's after the load's).
void readLoads(const std::vector<std::int64_t>& all, std::size_t stride, const PsConfig& c,
               int firstStep, PsResult& r) {
  const int workers = c.ps.workers;
  std::vector<std::int64_t> sum(static_cast<std::size_t>(workers)), max(sum.size()),
      count(sum.size());
  for (int rank = 0; rank < c.ps.ranks(); ++rank) {
    const std::int64_t* v = all.data() + static_cast<std::size_t>(rank) * stride;
    if (v[0] == 1) {
      ServerLoad s;
      s.rank = rank;
      s.rowsHeld = v[1];
      s.tableBytes = v[2];
      s.pulls = v[3];
      s.pushes = v[4];
      s.rowsPulled = v[5];
      s.rowsPushed = v[6];
      s.bytesIn = v[7];
      s.bytesOut = v[8];
      s.busySeconds = static_cast<double>(v[9]) * 1e-9;
      s.waitSeconds = static_cast<double>(v[10]) * 1e-9;
      r.servers.push_back(s);
      for (int w = 0; w < workers; ++w) {
        sum[w] += v[kLoadWords + 3 * w];
        max[w] = std::max(max[w], v[kLoadWords + 3 * w + 1]);
        count[w] += v[kLoadWords + 3 * w + 2];
      }
    } else {
      WorkerLoad w;
      w.rank = rank;
      w.rowsPulled = v[1];
      w.pulls = v[2];
      w.pullSeconds = static_cast<double>(v[3]) * 1e-9;
      w.computeSeconds = static_cast<double>(v[4]) * 1e-9;
      w.pushSeconds = static_cast<double>(v[5]) * 1e-9;
      w.steps = static_cast<int>(v[6]);
      r.targets += w.steps * c.targetsPerWorkerStep();
      if (v[7] >= 0) {
        // The reason's bytes follow from that rank (runRank); sized here, read there.
        r.failures.push_back(
            {rank, firstStep + w.steps, std::string(static_cast<std::size_t>(v[7]), '\0')});
      }
      r.workers.push_back(w);
    }
  }
  for (std::size_t w = 0; w < r.workers.size(); ++w) {
    r.workers[w].stalenessMax = max[w];
    r.workers[w].stalenessMean =
        count[w] > 0 ? static_cast<double>(sum[w]) / static_cast<double>(count[w]) : 0.0;
  }
}

// The validation loss over eval_iters validation batches, with the parameters every push left.
// The rows of every batch come in one fetch with the dense table: the tables travel once, not
// once per batch.
double validationLoss(const PsConfig& c, PsModel& model, Worker& worker) {
  std::vector<std::int64_t> all;
  for (int i = 0; i < c.evalIters; ++i) {
    const std::vector<std::int64_t>& rows = model.prepare(Split::Validation, i, 0);
    all.insert(all.end(), rows.begin(), rows.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  std::vector<float> values, dense, in;
  worker.fetch(all, values, dense);
  const auto dim = static_cast<std::size_t>(c.tables().dim);
  double loss = 0;
  std::int64_t targets = 0;
  for (int i = 0; i < c.evalIters; ++i) {
    const std::vector<std::int64_t>& rows = model.prepare(Split::Validation, i, 0);
    in.resize(rows.size() * dim);
    for (std::size_t j = 0; j < rows.size(); ++j) {
      const auto it = std::lower_bound(all.begin(), all.end(), rows[j]);
      if (it == all.end() || *it != rows[j]) {
        throw std::logic_error("validation batch " + std::to_string(i) +
                               " touched other rows the second time it was drawn");
      }
      const auto at = static_cast<std::size_t>(it - all.begin());
      std::copy_n(values.data() + at * dim, dim, in.data() + j * dim);
    }
    std::int64_t n = 0;
    loss += model.lossSum(in.data(), dense.data(), &n);
    targets += n;
  }
  return targets > 0 ? loss / static_cast<double>(targets) : 0.0;
}

// The probe words' nearest words by the cosine of their input (word) rows.
std::vector<Neighbours> nearestWords(const PsConfig& c, const Word2VecCorpus& corpus,
                                     Worker& worker, const RunOptions& o) {
  const int vocab = corpus.vocabSize(), dim = c.model.dim;
  std::vector<std::int64_t> ids(static_cast<std::size_t>(vocab));
  std::iota(ids.begin(), ids.end(), std::int64_t{0});
  std::vector<float> vectors, dense;
  worker.fetch(ids, vectors, dense);
  std::vector<double> norms(ids.size());
  for (int w = 0; w < vocab; ++w) {
    double s = 0;
    const float* v = vectors.data() + static_cast<std::size_t>(w) * dim;
    for (int j = 0; j < dim; ++j) s += double{v[j]} * v[j];
    norms[w] = std::sqrt(s);
  }
  std::vector<Neighbours> result;
  for (const std::string& word : o.probeWords) {
    const int p = corpus.id(word);
    if (p < 0 || norms[p] == 0) continue;
    std::vector<std::pair<double, int>> scored;
    for (int w = 0; w < vocab; ++w) {
      if (w == p || norms[w] == 0) continue;
      double s = 0;
      const float* a = vectors.data() + static_cast<std::size_t>(p) * dim;
      const float* b = vectors.data() + static_cast<std::size_t>(w) * dim;
      for (int j = 0; j < dim; ++j) s += double{a[j]} * b[j];
      scored.emplace_back(s / (norms[p] * norms[w]), w);
    }
    const auto n = std::min<std::size_t>(scored.size(), static_cast<std::size_t>(o.neighbours));
    std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(n), scored.end(),
                      [](const auto& a, const auto& b) {
                        return a.first != b.first ? a.first > b.first : a.second < b.second;
                      });
    Neighbours nb;
    nb.word = word;
    for (std::size_t i = 0; i < n; ++i)
      nb.nearest.emplace_back(corpus.word(scored[i].second), scored[i].first);
    result.push_back(std::move(nb));
  }
  return result;
}

// What a process shares between its ranks: word2vec's corpus, the checkpoint a run continues from,
// and whether the save's staging directory is made (in-process: before any rank starts).
struct Shared {
  const Word2VecCorpus* corpus = nullptr;
  const TablesCheckpoint* checkpoint = nullptr;
  bool savePrepared = false;
};

bool runRank(const PsConfig& c, const Shared& shared, Communicator& world,
             const RunOptions& options, PsResult* result) {
  if (world.size() != c.ps.ranks()) {
    throw UserError("parameter_server: server_num + worker_num = " + std::to_string(c.ps.ranks()) +
                    " ranks, but the world has " + std::to_string(world.size()));
  }
  trace::context().rank = world.rank();
  // The rank's memory (its tables, a GPT worker's model), as its trace counters show it.
  Allocator allocator;
  const int servers = c.ps.servers, reporter = servers;
  const bool serves = world.rank() < servers;
  std::unique_ptr<TablesCheckpoint> ownCheckpoint;
  if (!options.load.empty() && shared.checkpoint == nullptr) {
    ownCheckpoint = std::make_unique<TablesCheckpoint>(options.load);
  }
  const TablesCheckpoint* checkpoint =
      shared.checkpoint != nullptr ? shared.checkpoint : ownCheckpoint.get();
  const int firstStep = checkpoint != nullptr ? checkpoint->step() : 0;
  std::unique_ptr<CheckpointLock> lock;
  if (!options.save.empty() && !shared.savePrepared && world.rank() == reporter) {
    lock = std::make_unique<CheckpointLock>(options.save);
    prepareCheckpoint(options.save, c.trainIters);
  }
  Communicator workers = world.split(serves ? 0 : 1, world.rank());
  std::int32_t one = 1, ranks = 0;
  world.allReduce(&one, &ranks, 1, DType::I32, ReduceOp::Sum);  // every rank is ready
  std::vector<std::int64_t> mine;
  PsResult local;
  std::string failure;  // a worker's that the run goes on without
  if (serves) {
    Server server(c, world, world.rank(), allocator);
    if (checkpoint != nullptr) server.restore(*checkpoint);
    if (!options.save.empty()) server.saveEvery(options.save, options.saveInterval, firstStep);
    server.run(options.progress);
    mine = serverWords(server, c.ps.workers);
    if (!options.save.empty()) {
      const TableShard shard =
          writeTableShard(stagingDirectory(options.save, c.trainIters), world.rank(),
                          server.sparseTable(), server.denseTable());
      mine.insert(mine.end(), {static_cast<std::int64_t>(shard.crc32), shard.bytes,
                               shard.sparseRows, shard.denseRows});
    }
  } else {
    std::unique_ptr<Word2VecCorpus> own;
    if (shared.corpus == nullptr && !c.isGpt()) own = std::make_unique<Word2VecCorpus>(c);
    const Word2VecCorpus* corpus = shared.corpus != nullptr ? shared.corpus : own.get();
    const std::unique_ptr<PsModel> model = makePsModel(c, corpus, allocator);
    Worker worker(c, *model, world, workers, world.rank() - servers, firstStep, allocator);
    const auto start = std::chrono::steady_clock::now();
    // A step fails between requests (a whole request is sent, or its failure is the world's):
    // the servers can drop this worker and serve the others.
    const bool survivable = c.ps.continueOnWorkerFailure && world.rank() != reporter;
    try {
      worker.train(options, &local);
    } catch (const CommError&) {
      throw;
    } catch (const std::exception& e) {
      if (!survivable) throw;
      failure = e.what();
    }
    local.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    worker.finishTraining();
    if (world.rank() == reporter) {
      local.validationLoss = validationLoss(c, *model, worker);
      if (corpus != nullptr) {
        local.vocabulary = corpus->vocabSize();
        local.corpusWords = corpus->streamWords(Split::Train);
        local.neighbours = nearestWords(c, *corpus, worker, options);
      }
      if (options.gatherTables) worker.gatherTables(local);
    }
    // A periodic save's staging replaced the end's (each save's clears the others): made again
    // before Done lets the servers write into it.
    if (world.rank() == reporter && !options.save.empty() && options.saveInterval > 0)
      prepareCheckpoint(options.save, c.trainIters);
    worker.finish();
    mine = workerWords(worker.load(), c.ps.workers, failure);
    if (!options.save.empty()) mine.resize(mine.size() + 4, 0);  // the servers' shard words
  }
  std::vector<std::int64_t> all(world.rank() == reporter ? mine.size() * world.size() : 0);
  world.gather(mine.data(), all.data(), mine.size(), DType::I64, reporter);
  // The failed workers' reasons, each to the reporter, after the gather said who failed.
  if (!failure.empty()) {
    std::vector<std::int64_t> text(textWords(failure.size()));
    std::memcpy(text.data(), failure.data(), failure.size());
    world.send(text.data(), text.size(), DType::I64, reporter);
  }
  if (world.rank() != reporter) return false;
  readLoads(all, mine.size(), c, firstStep, local);
  if (!options.save.empty()) {
    std::vector<TableShard> shards;
    for (int s = 0; s < servers; ++s) {
      const std::int64_t* v = all.data() + static_cast<std::size_t>(s + 1) * mine.size() - 4;
      TableShard shard;
      shard.file = shardFileName(s);  // as the server named it (writeTableShard)
      shard.crc32 = static_cast<std::uint32_t>(v[0]);
      shard.bytes = v[1];
      shard.sparseRows = v[2];
      shard.denseRows = v[3];
      shards.push_back(shard);
    }
    local.checkpoint = commitTables(options.save, c.trainIters, c, shards, options.keep);
  }
  for (WorkerFailure& f : local.failures) {
    std::vector<std::int64_t> text(textWords(f.reason.size()));
    world.recv(text.data(), text.size(), DType::I64, f.rank);
    std::memcpy(f.reason.data(), text.data(), f.reason.size());
  }
  *result = std::move(local);
  return true;
}

}  // namespace

void checkTableMemory(const PsConfig& c, double availableBytes, int ranksHere) {
  if (availableBytes < 0) return;
  PsMemory m = psMemory(c);
  // A GPT worker's passes: the activations and workspace the engine's estimate gives its
  // micro-batch on one rank, and the text it holds.
  double passes = 0;
  if (c.isGpt()) {
    for (const MemoryItem& item :
         estimateMemory(engineConfig(c), dataBytesInMemory(c.data), 1).items) {
      if (item.name == "activations" || item.name == "workspace" || item.name == "data")
        passes += item.bytes;
    }
    m.perWorker += static_cast<std::int64_t>(passes);
  }
  // In-process every rank is here; under mpirun, the ranks on this machine could be any.
  const bool all = ranksHere >= c.ps.ranks();
  const double need = all ? static_cast<double>(m.perServer) * c.ps.servers +
                                static_cast<double>(m.perWorker) * c.ps.workers
                          : static_cast<double>(std::max(m.perServer, m.perWorker)) * ranksHere;
  if (need <= availableBytes) return;
  const bool collective = c.ps.mode == PsMode::Collective;
  throw UserError(
      "parameter_server: with every row touched the tables need up to " +
      (collective ? formatBytes(static_cast<double>(m.perWorker)) +
                        " per worker (both tables whole, and the gradient it all-reduces)"
                  : formatBytes(static_cast<double>(m.perServer)) + " per server (its share of " +
                        std::to_string(c.tables().sparseRows) + " rows x " +
                        std::to_string(c.tables().dim) + " values with their " +
                        rowRuleName(c.ps.sparse.rule) + " state) and " +
                        formatBytes(static_cast<double>(m.perWorker)) + " per worker") +
      ", " + formatBytes(need) + " for the " + std::to_string(std::min(ranksHere, c.ps.ranks())) +
      " ranks on this machine, more than the " + formatBytes(availableBytes) + " available; " +
      (c.isGpt() ? "a worker's passes take " + formatBytes(passes) +
                       " of it: lower train_micro_batch_size_per_gpu or the model's size"
                 : std::string("lower parameter_server.sparse_table.rows or model.embedding_dim")) +
      (collective ? "" : ", or run servers on other machines (mpirun)"));
}

void checkCheckpointOptions(const PsConfig& c, const RunOptions& options) {
  if (c.ps.mode == PsMode::Collective && (!options.load.empty() || !options.save.empty())) {
    throw UserError(
        "--save and --load keep the servers' tables; mode \"collective\" has no "
        "servers (its tables are the workers')");
  }
  if (options.saveInterval > 0 && options.save.empty())
    throw UserError("--save-interval needs --save DIR (or --resume DIR)");
  if (options.saveInterval > 0 && c.ps.mode == PsMode::Async) {
    throw UserError(
        "--save-interval: mode \"async\" has no step the servers share (each applies pushes "
        "as they come); its tables are saved at the end");
  }
  if (options.saveInterval > 0 && c.ps.mode == PsMode::Geo &&
      options.saveInterval % c.ps.kSteps != 0) {
    throw UserError("--save-interval " + std::to_string(options.saveInterval) +
                    ": mode \"geo\" saves where its rounds end, every parameter_server.k_steps = " +
                    std::to_string(c.ps.kSteps) + " steps; give a multiple of " +
                    std::to_string(c.ps.kSteps));
  }
  if (options.load.empty()) return;
  const TablesCheckpoint checkpoint(options.load);
  checkpoint.checkFits(c);
  if (checkpoint.step() >= c.trainIters) {
    throw UserError("--load " + checkpoint.directory() + ": saved at step " +
                    std::to_string(checkpoint.step()) +
                    ", and train_iters = " + std::to_string(c.trainIters) +
                    " counts the saved steps too: nothing is left to train; raise train_iters");
  }
}

bool runPsRank(const PsConfig& c, Communicator& world, const RunOptions& options,
               PsResult* result) {
  return runRank(c, {}, world, options, result);
}

PsResult runPsThreads(const PsConfig& c, const RunOptions& options) {
  checkCheckpointOptions(c, options);
  // The data read once, before any rank starts: bad data fails here. A GPT's workers open their
  // text as the engine's ranks do; it is checked here.
  std::unique_ptr<Word2VecCorpus> corpus;
  if (c.isGpt()) {
    checkPsData(c);
  } else {
    corpus = std::make_unique<Word2VecCorpus>(c);
  }
  std::unique_ptr<TablesCheckpoint> checkpoint;
  if (!options.load.empty()) checkpoint = std::make_unique<TablesCheckpoint>(options.load);
  std::unique_ptr<CheckpointLock> lock;
  if (!options.save.empty()) {
    lock = std::make_unique<CheckpointLock>(options.save);
    prepareCheckpoint(options.save, c.trainIters);
  }
  const Shared shared{corpus.get(), checkpoint.get(), !options.save.empty()};
  PsResult result;
  runInProcess(c.ps.ranks(), [&](Communicator& world) {
    PsResult mine;
    if (runRank(c, shared, world, options, &mine)) result = std::move(mine);
  });
  return result;
}

}  // namespace parascope::ps
