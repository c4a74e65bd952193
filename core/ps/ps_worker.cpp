#include "core/ps/ps_worker.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <numeric>

#include "core/ps/ps_checkpoint.h"
#include "core/state/checkpoint.h"
#include "core/trace/trace.h"

namespace parascope::ps {

namespace {

class Stopwatch {
 public:
  explicit Stopwatch(double* total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~Stopwatch() {
    *total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;

 private:
  double* total_;
  std::chrono::steady_clock::time_point start_;
};

// A request's posted sends and receives. Whatever ends the scope, an error while posting or
// waiting included, withdraws the ones still unmatched: the buffers they point into are freed
// as the caller unwinds, while a server may still answer.
class Posted {
 public:
  Posted() = default;
  Posted(const Posted&) = delete;
  Posted& operator=(const Posted&) = delete;
  ~Posted() {
    for (CommHandle& h : handles_) h.cancel();
  }
  void add(CommHandle h) { handles_.push_back(std::move(h)); }
  void waitAll() {
    for (CommHandle& h : handles_) h.wait();
  }

 private:
  std::vector<CommHandle> handles_;
};

}  // namespace

Worker::Worker(const PsConfig& c, PsModel& model, Communicator& world, Communicator& workers,
               int index, int firstStep, Allocator& allocator)
    : c_(c),
      model_(model),
      allocator_(allocator),
      world_(world),
      workers_(workers),
      index_(index),
      firstStep_(firstStep),
      tables_(c.tables()),
      dim_(tables_.dim),
      out_(static_cast<std::size_t>(tables_.denseRows) * dim_),
      dOut_(out_.size()),
      versions_(static_cast<std::size_t>(c.ps.servers)),
      allDense_(static_cast<std::size_t>(tables_.denseRows)) {
  load_.rank = c.ps.servers + index;
  std::iota(allDense_.begin(), allDense_.end(), std::int64_t{0});
  const PsMode mode = c.ps.mode;
  const int steps = c.trainIters - firstStep;
  finalRound_ = mode == PsMode::Geo ? (steps + c.ps.kSteps - 1) / c.ps.kSteps : steps;
  if (mode == PsMode::Geo || mode == PsMode::Collective) {
    local_ = std::make_unique<RowTable>(dim_, c.ps.sparse, c.seed, kSparseTable,
                                        initialRows(c, kSparseTable, allocator), &allocator);
    localDense_ = std::make_unique<RowTable>(dim_, c.ps.dense, c.seed, kDenseTable,
                                             initialRows(c, kDenseTable, allocator), &allocator);
    localDense_->pull(allDense_, out_.data());
  }
  if (mode == PsMode::Collective) {
    sparseGrad_.assign(static_cast<std::size_t>(tables_.sparseRows) * dim_, 0.0f);
    touched_.assign(static_cast<std::size_t>(tables_.sparseRows), 0.0f);
  }
}

void Worker::train(const RunOptions& options, PsResult* result) {
  const int steps = c_.trainIters;
  for (int t = firstStep_; t < steps; ++t) {
    if (options.progress) options.progress(world_.rank(), t);
    trace::context().step = t;
    const auto start = std::chrono::steady_clock::now();
    // Worker 0 makes a periodic save's staging directory before its push lets the servers in.
    const bool saves = index_ == 0 && !options.save.empty() &&
                       periodicSave(c_, firstStep_, options.saveInterval, t + 1);
    if (saves) prepareCheckpoint(options.save, t + 1);
    double loss = 0;
    step(t, &loss);
    if (saves && result != nullptr) result->checkpoint = commitPeriodicSave(options, t + 1);
    trace::context().step = -1;
    load_.steps = t + 1 - firstStep_;
    if (index_ == 0 && result != nullptr) {
      result->finalLoss = loss;
      if (options.onStep) {
        options.onStep(
            {t + 1, steps, loss,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
      }
    }
  }
}

// One step: this worker's part of the step's batch, its rows, forward and backward, and the
// update by the mode.
void Worker::step(int t, double* loss) {
  const trace::Span span("train_step", trace::Category::Step, trace::lane::kHost);
  {
    const trace::Span load("data_load", trace::Category::DataLoad, trace::lane::kData);
    rows_ = &model_.prepare(Split::Train, t, index_);
  }
  const std::vector<std::int64_t>& rows = *rows_;
  const std::size_t n = rows.size() * dim_;
  in_.resize(n);
  dIn_.assign(n, 0.0f);
  std::fill(dOut_.begin(), dOut_.end(), 0.0f);
  const PsMode mode = c_.ps.mode;
  if (mode == PsMode::Sync || mode == PsMode::Async) {
    load_.rowsPulled += static_cast<std::int64_t>(rows.size());
    pull(rows, t - firstStep_, kDense, in_.data());
  } else if (mode == PsMode::Geo) {
    geoStep(t);
  } else {
    local_->pull(rows, in_.data());
  }
  {
    const Stopwatch clock(&load_.computeSeconds);
    const trace::Span compute("forward_backward", trace::Category::Compute, trace::lane::kCompute);
    *loss = model_.forwardBackward(in_.data(), out_.data(), dIn_.data(), dOut_.data());
  }
  if (mode == PsMode::Sync || mode == PsMode::Async) {
    push(Op::Push, rows, dIn_.data(), dOut_.data(), t - firstStep_);
  } else if (mode == PsMode::Geo) {
    {
      const trace::Span apply("apply", trace::Category::Optimizer, trace::lane::kApply);
      local_->apply(rows, dIn_.data());
      localDense_->apply(allDense_, dOut_.data());
      localDense_->pull(allDense_, out_.data());
    }
    const int local = t - firstStep_;
    const bool roundEnds = local % c_.ps.kSteps == c_.ps.kSteps - 1 || t == c_.trainIters - 1;
    if (roundEnds) {
      std::sort(fetched_.begin(), fetched_.end());
      std::vector<float> changes(fetched_.size() * dim_);
      for (std::size_t i = 0; i < fetched_.size(); ++i) {
        const float* now = local_->find(fetched_[i]);
        const float* then = base_->find(fetched_[i]);
        for (int j = 0; j < dim_; ++j) changes[i * dim_ + j] = now[j] - then[j];
      }
      std::vector<float> denseChange(out_.size());
      for (std::size_t j = 0; j < out_.size(); ++j) denseChange[j] = out_[j] - baseDense_[j];
      push(Op::GeoPush, fetched_, changes.data(), denseChange.data(), local / c_.ps.kSteps);
    }
  } else {
    collectiveStep();
  }
}

// Geo: the rows this round has not pulled yet come from the servers (the dense table too when
// the round begins); training then runs on the local copies.
void Worker::geoStep(int t) {
  // Rounds count from this run's first step (a run continued from a checkpoint starts one).
  const int local = t - firstStep_;
  const std::int64_t round = local / c_.ps.kSteps;
  const bool begins = local % c_.ps.kSteps == 0;
  if (begins) {
    TableSpec plain;
    plain.rule = RowRule::Sgd;
    base_ = std::make_unique<RowTable>(dim_, plain, 0, 0, RowInit{}, &allocator_);
    fetched_.clear();
  }
  std::vector<std::int64_t> missing;
  for (std::int64_t row : *rows_)
    if (base_->find(row) == nullptr) missing.push_back(row);
  load_.rowsPulled += static_cast<std::int64_t>(missing.size());
  std::vector<float> values(missing.size() * dim_);
  if (!missing.empty() || begins) pull(missing, round, begins ? kDense : 0, values.data());
  for (std::size_t i = 0; i < missing.size(); ++i) {
    local_->set(missing[i], values.data() + i * dim_);
    base_->set(missing[i], values.data() + i * dim_);
    fetched_.push_back(missing[i]);
  }
  if (begins) {
    // pull() wrote the servers' dense table into out_: the local copy starts from it.
    for (int w = 0; w < tables_.denseRows; ++w)
      localDense_->set(w, out_.data() + static_cast<std::size_t>(w) * dim_);
    baseDense_ = out_;
  }
  local_->pull(*rows_, in_.data());
}

void Worker::collectiveStep() {
  const trace::Span span("allreduce_update", trace::Category::Optimizer, trace::lane::kApply);
  const double workers = c_.ps.workers;
  for (std::size_t i = 0; i < rows_->size(); ++i) {
    const auto row = static_cast<std::size_t>((*rows_)[i]);
    std::memcpy(sparseGrad_.data() + row * dim_, dIn_.data() + i * dim_, sizeof(float) * dim_);
    touched_[row] = 1.0f;
  }
  {
    const Stopwatch clock(&load_.pushSeconds);
    workers_.allReduce(sparseGrad_.data(), sparseGrad_.data(), sparseGrad_.size(), DType::F32,
                       ReduceOp::Sum);
    workers_.allReduce(touched_.data(), touched_.data(), touched_.size(), DType::F32,
                       ReduceOp::Sum);
    workers_.allReduce(dOut_.data(), dOut_.data(), dOut_.size(), DType::F32, ReduceOp::Sum);
  }
  // Rows no worker touched have a zero gradient: the per-row rules leave them as they are, as
  // the servers do, so only the touched rows are updated (and their gradients cleared).
  std::vector<std::int64_t> rows;
  std::vector<float> grads;
  for (std::size_t r = 0; r < touched_.size(); ++r) {
    if (touched_[r] == 0.0f) continue;
    rows.push_back(static_cast<std::int64_t>(r));
    float* g = sparseGrad_.data() + r * dim_;
    for (int j = 0; j < dim_; ++j) grads.push_back(g[j] / static_cast<float>(workers));
    std::fill(g, g + dim_, 0.0f);
    touched_[r] = 0.0f;
  }
  local_->apply(rows, grads.data());
  for (float& v : dOut_) v /= static_cast<float>(workers);
  localDense_->apply(allDense_, dOut_.data());
  localDense_->pull(allDense_, out_.data());
}

void Worker::pull(const std::vector<std::int64_t>& rows, std::int64_t round, std::int64_t flags,
                  float* values) {
  const bool dense = (flags & kDense) != 0;
  const Stopwatch clock(&load_.pullSeconds);
  const trace::Span span("pull", trace::Category::Communication, trace::lane::kPull);
  ++load_.pulls;
  const int servers = c_.ps.servers;
  std::vector<std::vector<std::int64_t>> ids(static_cast<std::size_t>(servers));
  std::vector<std::vector<std::size_t>> where(ids.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int s = serverOf(rows[i], servers);
    ids[s].push_back(rows[i]);
    where[s].push_back(i);
  }
  std::vector<Header> requests(ids.size()), replies(ids.size());
  std::vector<std::vector<float>> received(ids.size());
  Posted handles;
  for (int s = 0; s < servers; ++s) {
    const auto n = static_cast<std::int64_t>(ids[s].size());
    if (n == 0 && !dense) continue;
    requests[s] = Header::make(Op::Pull, round, n, flags, 0);
    handles.add(world_.sendAsync(requests[s].words.data(), requests[s].words.size(), DType::I64,
                                 serverRank(s)));
    if (n > 0)
      handles.add(world_.sendAsync(ids[s].data(), ids[s].size(), DType::I64, serverRank(s)));
    handles.add(world_.recvAsync(replies[s].words.data(), replies[s].words.size(), DType::I64,
                                 serverRank(s)));
    received[s].resize(ids[s].size() * dim_);
    if (n > 0) {
      handles.add(
          world_.recvAsync(received[s].data(), received[s].size(), DType::F32, serverRank(s)));
    }
    const WordRange slice = denseSlice(tables_.denseRows, servers, s);
    if (dense && slice.count > 0) {
      handles.add(world_.recvAsync(out_.data() + static_cast<std::size_t>(slice.first) * dim_,
                                   static_cast<std::size_t>(slice.count) * dim_, DType::F32,
                                   serverRank(s)));
    }
  }
  handles.waitAll();
  for (int s = 0; s < servers; ++s) {
    if (ids[s].empty() && !dense) continue;
    versions_[s] = replies[s].version();
    for (std::size_t i = 0; i < where[s].size(); ++i) {
      std::memcpy(values + where[s][i] * dim_, received[s].data() + i * dim_, sizeof(float) * dim_);
    }
  }
}

void Worker::push(Op op, const std::vector<std::int64_t>& rows, const float* values,
                  const float* dense, std::int64_t round) {
  const Stopwatch clock(&load_.pushSeconds);
  const trace::Span span("push", trace::Category::Communication, trace::lane::kPush);
  const int servers = c_.ps.servers;
  std::vector<std::vector<std::int64_t>> ids(static_cast<std::size_t>(servers));
  std::vector<std::vector<float>> grads(ids.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int s = serverOf(rows[i], servers);
    ids[s].push_back(rows[i]);
    grads[s].insert(grads[s].end(), values + i * dim_, values + (i + 1) * dim_);
  }
  std::vector<Header> headers(ids.size());
  Posted handles;
  for (int s = 0; s < servers; ++s) {
    const auto n = static_cast<std::int64_t>(ids[s].size());
    const WordRange slice = denseSlice(tables_.denseRows, servers, s);
    headers[s] = Header::make(op, round, n, kDense, versions_[s]);
    handles.add(world_.sendAsync(headers[s].words.data(), headers[s].words.size(), DType::I64,
                                 serverRank(s)));
    if (n > 0) {
      handles.add(world_.sendAsync(ids[s].data(), ids[s].size(), DType::I64, serverRank(s)));
      handles.add(world_.sendAsync(grads[s].data(), grads[s].size(), DType::F32, serverRank(s)));
    }
    if (slice.count > 0) {
      handles.add(world_.sendAsync(dense + static_cast<std::size_t>(slice.first) * dim_,
                                   static_cast<std::size_t>(slice.count) * dim_, DType::F32,
                                   serverRank(s)));
    }
  }
  handles.waitAll();
}

void Worker::fetch(const std::vector<std::int64_t>& rows, std::vector<float>& values,
                   std::vector<float>& dense) {
  values.resize(rows.size() * dim_);
  if (c_.ps.mode == PsMode::Collective) {
    local_->peek(rows, values.data());
  } else {
    pull(rows, finalRound_, kDense | kFinal | kPeek, values.data());
  }
  dense = out_;
}

void Worker::gatherTables(PsResult& result) {
  if (c_.ps.mode == PsMode::Collective) {
    local_->forEach(
        [&](std::int64_t row, const float* v) { result.sparseRows[row].assign(v, v + dim_); });
    result.dense = out_;
    return;
  }
  result.dense.assign(out_.size(), 0.0f);
  for (int s = 0; s < c_.ps.servers; ++s) {
    Header request = Header::make(Op::Gather, 0, 0, 0, 0), reply;
    world_.send(request.words.data(), request.words.size(), DType::I64, serverRank(s));
    world_.recv(reply.words.data(), reply.words.size(), DType::I64, serverRank(s));
    std::vector<std::int64_t> ids(static_cast<std::size_t>(reply.count()));
    std::vector<float> values(ids.size() * dim_);
    if (!ids.empty()) {
      world_.recv(ids.data(), ids.size(), DType::I64, serverRank(s));
      world_.recv(values.data(), values.size(), DType::F32, serverRank(s));
    }
    const WordRange slice = denseSlice(tables_.denseRows, c_.ps.servers, s);
    if (slice.count > 0) {
      world_.recv(result.dense.data() + static_cast<std::size_t>(slice.first) * dim_,
                  static_cast<std::size_t>(slice.count) * dim_, DType::F32, serverRank(s));
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
      result.sparseRows[ids[i]].assign(values.data() + i * dim_, values.data() + (i + 1) * dim_);
    }
  }
}

// Every server's shard of the save after `step`, as it wrote it, then the commit.
std::string Worker::commitPeriodicSave(const RunOptions& options, int step) {
  std::vector<TableShard> shards;
  for (int s = 0; s < c_.ps.servers; ++s) {
    std::array<std::int64_t, 4> words{};
    world_.recv(words.data(), words.size(), DType::I64, serverRank(s));
    TableShard shard;
    shard.file = shardFileName(serverRank(s));
    shard.crc32 = static_cast<std::uint32_t>(words[0]);
    shard.bytes = words[1];
    shard.sparseRows = words[2];
    shard.denseRows = words[3];
    shards.push_back(shard);
  }
  return commitTables(options.save, step, c_, shards, options.keep);
}

void Worker::finishTraining() {
  if (c_.ps.mode == PsMode::Collective) return;
  for (int s = 0; s < c_.ps.servers; ++s) {
    const Header trained = Header::make(Op::Trained, 0, 0, 0, 0);
    world_.send(trained.words.data(), trained.words.size(), DType::I64, serverRank(s));
  }
}

void Worker::finish() {
  if (c_.ps.mode == PsMode::Collective) return;
  for (int s = 0; s < c_.ps.servers; ++s) {
    const Header done = Header::make(Op::Done, 0, 0, 0, 0);
    world_.send(done.words.data(), done.words.size(), DType::I64, serverRank(s));
  }
}

}  // namespace parascope::ps
