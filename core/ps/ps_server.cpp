#include "core/ps/ps_server.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <numeric>
#include <thread>

#include "core/ps/ps_checkpoint.h"
#include "core/ps/ps_model.h"
#include "core/state/checkpoint.h"
#include "core/trace/trace.h"

namespace parascope::ps {

namespace {

// A server's counters on its timeline (profiler/analysis/ps_load.h reads them back): the rows its
// table holds, and the rows it has served and taken in so far.
void countRows(const RowTable& table, const ServerLoad& load) {
  if (trace::recorder() == nullptr) return;
  trace::counter("rows_held", trace::Category::Host, table.size());
  trace::counter("rows_pulled", trace::Category::Host, load.rowsPulled);
  trace::counter("rows_pushed", trace::Category::Host, load.rowsPushed);
}

// An async push's staleness, with the worker it came from as the peer.
void countStaleness(int workerRank, std::int64_t staleness) {
  if (trace::Recorder* r = trace::recorder()) {
    trace::Event e;
    trace::stampContext(e);
    e.name = "staleness";
    e.category = trace::Category::Sync;
    e.kind = trace::EventKind::Counter;
    e.lane = trace::lane::kWait;
    e.peer = workerRank;
    e.bytes = staleness;
    e.startNs = e.endNs = trace::ticks();
    r->record(e);
  }
}

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Server::Server(const PsConfig& c, Communicator& world, int index, Allocator& allocator)
    : stalenessSum(static_cast<std::size_t>(c.ps.workers)),
      stalenessMax(static_cast<std::size_t>(c.ps.workers)),
      stalenessCount(static_cast<std::size_t>(c.ps.workers)),
      c_(c),
      world_(world),
      dim_(c.tables().dim),
      sparse_(dim_, c.ps.sparse, c.seed, kSparseTable, initialRows(c, kSparseTable, allocator),
              &allocator),
      dense_(dim_, c.ps.dense, c.seed, kDenseTable, initialRows(c, kDenseTable, allocator),
             &allocator),
      slice_(denseSlice(c.tables().denseRows, c.ps.servers, index)),
      pushes_(static_cast<std::size_t>(c.ps.workers)),
      pushed_(static_cast<std::size_t>(c.ps.workers)) {
  load_.rank = index;
  // The dense slice is held whole from the start, as a dense parameter is.
  const std::vector<std::int64_t> ids = denseIds();
  std::vector<float> scratch(ids.size() * dim_);
  dense_.pull(ids, scratch.data());
}

void Server::saveEvery(const std::string& dir, int interval, int firstStep) {
  saveDir_ = dir;
  saveInterval_ = interval;
  firstStep_ = firstStep;
}

// The global step the round just applied ends at; a save there when it is one of the interval's
// (the last step's is the end's save).
void Server::savePeriodically() {
  const std::int64_t local = c_.ps.mode == PsMode::Geo ? round_ * c_.ps.kSteps : round_;
  const auto step = static_cast<int>(std::min<std::int64_t>(firstStep_ + local, c_.trainIters));
  if (!periodicSave(c_, firstStep_, saveInterval_, step)) return;
  const trace::Span span("save_tables", trace::Category::Host, trace::lane::kApply);
  const TableShard shard =
      writeTableShard(stagingDirectory(saveDir_, step), world_.rank(), sparse_, dense_);
  const std::array<std::int64_t, 4> words = {static_cast<std::int64_t>(shard.crc32), shard.bytes,
                                             shard.sparseRows, shard.denseRows};
  world_.send(words.data(), words.size(), DType::I64, workerRank(0));
}

void Server::restore(const TablesCheckpoint& checkpoint) {
  checkpoint.load(sparse_, dense_, c_.ps.servers, load_.rank, slice_);
}

std::vector<std::int64_t> Server::denseIds() const {
  std::vector<std::int64_t> ids(static_cast<std::size_t>(slice_.count));
  std::iota(ids.begin(), ids.end(), std::int64_t{slice_.first});
  return ids;
}

void Server::run(const std::function<void(int, std::int64_t)>& progress) {
  std::vector<Header> headers(static_cast<std::size_t>(c_.ps.workers));
  std::vector<CommHandle> pending(headers.size());
  try {
    serve(progress, headers, pending);
  } catch (...) {
    // A worker may still send while this rank unwinds (its world fails only once the exception
    // has left the rank): the header receives are withdrawn before their buffers go.
    for (CommHandle& h : pending) h.cancel();
    throw;
  }
  load_.rowsHeld = sparse_.size();
  load_.tableBytes = sparse_.bytes() + dense_.bytes();
}

// Polls a posted header receive per worker, handling requests as they come, until every worker
// said it is done.
void Server::serve(const std::function<void(int, std::int64_t)>& progress,
                   std::vector<Header>& headers, std::vector<CommHandle>& pending) {
  const int workers = c_.ps.workers;
  std::vector<bool> done(static_cast<std::size_t>(workers));
  int doneCount = 0;
  std::int64_t handled = 0;
  for (int w = 0; w < workers; ++w) {
    pending[w] = world_.recvAsync(headers[w].words.data(), headers[w].words.size(), DType::I64,
                                  workerRank(w));
  }
  auto idleSince = std::chrono::steady_clock::now();
  std::int64_t idleTicks = trace::ticks();
  int idlePolls = 0;
  while (doneCount < workers) {
    bool progressed = false;
    for (int w = 0; w < workers; ++w) {
      if (done[w] || !pending[w].test()) continue;
      if (!progressed) {
        load_.waitSeconds += secondsSince(idleSince);
        trace::span("wait", trace::Category::Sync, trace::lane::kWait, idleTicks, trace::ticks(),
                    0);
      }
      progressed = true;
      const auto busy = std::chrono::steady_clock::now();
      const Header h = headers[w];
      if (h.op() == Op::Done) {
        done[w] = true;
        ++doneCount;
      } else if (h.op() == Op::Gather) {
        gather(w);
      } else if (h.op() == Op::Trained) {
        ++trained_;
        answerReady();
      } else {
        receive(w, h);
      }
      ++handled;
      if (progress) progress(world_.rank(), handled);
      load_.busySeconds += secondsSince(busy);
      if (!done[w]) {
        pending[w] = world_.recvAsync(headers[w].words.data(), headers[w].words.size(), DType::I64,
                                      workerRank(w));
      }
    }
    if (progressed) {
      idleSince = std::chrono::steady_clock::now();
      idleTicks = trace::ticks();
      idlePolls = 0;
    } else if (++idlePolls > 64) {
      // Nothing arrived: give the core to the workers (two cores may run several ranks).
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    } else {
      std::this_thread::yield();
    }
  }
}

void Server::receive(int worker, const Header& h) {
  Request r;
  r.worker = worker;
  r.header = h;
  r.ids.resize(static_cast<std::size_t>(h.count()));
  const int peer = workerRank(worker);
  if (!r.ids.empty()) world_.recv(r.ids.data(), r.ids.size(), DType::I64, peer);
  if (h.op() == Op::Pull) {
    ++load_.pulls;
    if (ready(r)) {
      answer(r);
    } else {
      deferred_.push_back(std::move(r));  // its round's pushes are not all in yet
    }
    return;
  }
  // Host, not Communication: the transfers inside are the Communicator's own events, which the
  // communication matrix counts; this span's peer and bytes are the request's (ps_load.h).
  trace::Span span("receive_push", trace::Category::Host, trace::lane::kPush);
  span.peer(peer);
  ++load_.pushes;
  load_.rowsPushed += h.count();
  r.values.resize(r.ids.size() * dim_);
  if (!r.values.empty()) world_.recv(r.values.data(), r.values.size(), DType::F32, peer);
  if (h.dense() && slice_.count > 0) {
    r.dense.resize(static_cast<std::size_t>(slice_.count) * dim_);
    world_.recv(r.dense.data(), r.dense.size(), DType::F32, peer);
  }
  const auto payload = static_cast<std::int64_t>(
      r.ids.size() * sizeof(std::int64_t) + (r.values.size() + r.dense.size()) * sizeof(float));
  load_.bytesIn += payload;
  span.bytes(payload);
  countRows(sparse_, load_);
  if (c_.ps.mode == PsMode::Async) {
    const trace::Span apply("apply", trace::Category::Optimizer, trace::lane::kApply);
    const std::int64_t staleness = version_ - h.version();
    stalenessSum[worker] += staleness;
    stalenessMax[worker] = std::max(stalenessMax[worker], staleness);
    ++stalenessCount[worker];
    countStaleness(peer, staleness);
    sparse_.apply(r.ids, r.values.data());
    if (!r.dense.empty()) dense_.apply(denseIds(), r.dense.data());
    ++version_;
    return;
  }
  pushes_[worker] = std::move(r);
  pushed_[worker] = true;
  if (++pushedCount_ == c_.ps.workers) applyRound();
}

// Sync and geo: every worker's push of this round is in. Rows are merged in worker order, so the
// sum is the same whatever order the pushes arrived in.
void Server::applyRound() {
  {
    const trace::Span apply("apply", trace::Category::Optimizer, trace::lane::kApply);
    struct Entry {
      std::int64_t row;
      const float* values;
    };
    std::vector<Entry> entries;
    for (const Request& p : pushes_) {
      for (std::size_t i = 0; i < p.ids.size(); ++i) {
        entries.push_back({p.ids[i], p.values.data() + i * dim_});
      }
    }
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) { return a.row < b.row; });
    std::vector<std::int64_t> rows;
    std::vector<float> sums;
    for (std::size_t i = 0; i < entries.size();) {
      rows.push_back(entries[i].row);
      const std::size_t at = sums.size();
      sums.resize(at + dim_, 0.0f);
      for (; i < entries.size() && entries[i].row == rows.back(); ++i) {
        for (int j = 0; j < dim_; ++j) sums[at + j] += entries[i].values[j];
      }
    }
    std::vector<float> dense(static_cast<std::size_t>(slice_.count) * dim_, 0.0f);
    const bool hasDense = !pushes_.front().dense.empty();
    for (const Request& p : pushes_) {
      for (std::size_t j = 0; j < p.dense.size(); ++j) dense[j] += p.dense[j];
    }
    const auto workers = static_cast<float>(c_.ps.workers);
    if (c_.ps.mode == PsMode::Sync) {
      // The mean of the workers' gradients, as data-parallel training averages them.
      for (float& v : sums) v /= workers;
      for (float& v : dense) v /= workers;
      sparse_.apply(rows, sums.data());
      if (hasDense) dense_.apply(denseIds(), dense.data());
    } else {
      sparse_.add(rows, sums.data(), 1.0f / workers);
      if (hasDense) dense_.add(denseIds(), dense.data(), 1.0f / workers);
    }
    ++round_;
    ++version_;
    pushedCount_ = 0;
    std::fill(pushed_.begin(), pushed_.end(), false);
    for (Request& p : pushes_) p = Request{};
  }
  // Before any pull of the next round is answered: worker 0 waits for it before its own.
  savePeriodically();
  answerReady();
}

bool Server::ready(const Request& pull) const {
  if (pull.header.final() && trained_ < c_.ps.workers) return false;
  return c_.ps.mode == PsMode::Async || pull.header.round() <= round_;
}

// Pulls that waited (for their round's pushes, or for every worker's last), in the order they
// came.
void Server::answerReady() {
  std::vector<Request> waiting;
  waiting.swap(deferred_);
  for (Request& r : waiting) {
    if (ready(r)) {
      answer(r);
    } else {
      deferred_.push_back(std::move(r));
    }
  }
}

void Server::answer(const Request& pull) {
  const int peer = workerRank(pull.worker);
  trace::Span span("serve_pull", trace::Category::Host, trace::lane::kPull);  // as receive_push
  span.peer(peer);
  std::vector<float> rows(pull.ids.size() * dim_);
  if (pull.header.peek()) {
    sparse_.peek(pull.ids, rows.data());
  } else {
    sparse_.pull(pull.ids, rows.data());
  }
  load_.rowsPulled += static_cast<std::int64_t>(pull.ids.size());
  const Header reply = Header::make(Op::Pull, round_, pull.header.count(),
                                    pull.header.dense() ? kDense : 0, version_);
  world_.send(reply.words.data(), reply.words.size(), DType::I64, peer);
  if (!rows.empty()) world_.send(rows.data(), rows.size(), DType::F32, peer);
  std::int64_t bytes = static_cast<std::int64_t>(rows.size() * sizeof(float));
  if (pull.header.dense() && slice_.count > 0) {
    std::vector<float> dense(static_cast<std::size_t>(slice_.count) * dim_);
    dense_.pull(denseIds(), dense.data());
    world_.send(dense.data(), dense.size(), DType::F32, peer);
    bytes += static_cast<std::int64_t>(dense.size() * sizeof(float));
  }
  load_.bytesOut += bytes;
  span.bytes(bytes);
  countRows(sparse_, load_);
}

void Server::gather(int worker) {
  std::vector<std::int64_t> ids;
  std::vector<float> values;
  sparse_.forEach([&](std::int64_t row, const float* v) {
    ids.push_back(row);
    values.insert(values.end(), v, v + dim_);
  });
  std::vector<float> dense(static_cast<std::size_t>(slice_.count) * dim_);
  dense_.pull(denseIds(), dense.data());
  const int peer = workerRank(worker);
  const Header reply =
      Header::make(Op::Gather, round_, static_cast<std::int64_t>(ids.size()), kDense, version_);
  world_.send(reply.words.data(), reply.words.size(), DType::I64, peer);
  if (!ids.empty()) {
    world_.send(ids.data(), ids.size(), DType::I64, peer);
    world_.send(values.data(), values.size(), DType::F32, peer);
  }
  if (!dense.empty()) world_.send(dense.data(), dense.size(), DType::F32, peer);
}

}  // namespace parascope::ps
