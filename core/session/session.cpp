// Session: the rank loop, its reports, and failure handling.
#include "core/session/session.h"

#include <exception>

#include "core/comm/launch.h"
#include "core/comm/mpi/mpi_backend.h"
#include "core/common/error.h"
#include "core/common/output_file.h"
#include "core/common/stop_signal.h"
#include "core/config/memory_estimate.h"
#include "core/session/run_summary.h"
#include "core/trace/trace.h"

namespace parascope {

Session::Session(TrainConfig config, SessionOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      gate_(/*shared=*/!options_.mpiWorld.has_value()) {}

Session::~Session() {
  if (thread_.joinable()) {
    gate_.stop();
    thread_.join();
  }
}

void Session::addObserver(SessionObserver& observer) {
  observers_.push_back(&observer);
}

SessionState Session::state() const {
  const SessionState s = state_.load();
  return s == SessionState::Running && gate_.paused() ? SessionState::Paused : s;
}

TrainConfig Session::config() const {
  std::lock_guard lock(mutex_);
  return config_;
}

std::optional<ErrorReport> Session::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

void Session::recordFailure(int rank, const std::exception& e) {
  {
    std::lock_guard lock(mutex_);
    if (!error_) {
      error_ = ErrorReport{rank, e.what(), dynamic_cast<const UserError*>(&e) != nullptr};
    }
  }
  // Ranks held at a step boundary by this rank's absence fail too (communication already
  // fails them through the communicator).
  gate_.fail(e.what());
}

void Session::trainRank(Communicator& world, Allocator& allocator) {
  const trace::ScopedContext traced({.rank = world.rank()});  // the rank of this thread's events
  Trainer trainer(config_, allocator, world);
  // In-process, rank 0 speaks for the world; under MPI each process reports its own rank's view
  // (the losses are global means, the same on every rank).
  const bool speaks = world.rank() == 0 || options_.mpiWorld.has_value();
  if (speaks) {
    StartReport s;
    s.config = config_;
    s.model = describeModel(config_, trainer.model());
    s.data = trainer.dataset().describe();
    s.parameters = modelParameters(config_, trainer.model());
    s.flopsPerToken = modelFlopsPerToken(config_);
    s.worldSize = world.size();
    s.firstStep = trainer.stepsDone();
    for (SessionObserver* o : observers_) o->onStart(s);
  }
  const bool canEvaluate = options_.evaluate && trainer.dataset().samples(Split::Validation) > 0;
  EvalReport last;
  bool stopped = false;
  for (int boundary = 0; trainer.stepsDone() < config_.trainIters; ++boundary) {
    // A step boundary is the safe point for SIGINT / SIGTERM (core/common/stop_signal.h): the
    // run ends as failed, so nothing half-done (weights, trace) is written.
    throwIfStopRequested();
    if (!gate_.next(world, boundary)) {
      stopped = true;
      break;
    }
    allocator.resetPeaks();  // so the report's peaks are this step's
    StepReport r = trainer.step();
    r.rank = world.rank();
    r.pipelineRank = trainer.mesh().coordinates().pipeline;
    for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
      r.peakBytes[c] = allocator.peakBytes(static_cast<MemoryCategory>(c));
    }
    for (SessionObserver* o : observers_) o->onRankStep(r);
    if (speaks) {
      for (SessionObserver* o : observers_) o->onStep(r);
    }
    const int done = trainer.stepsDone();
    const bool due = config_.evalInterval > 0 && done % config_.evalInterval == 0;
    if (canEvaluate && (due || done == config_.trainIters)) {
      last = trainer.evaluate();
      if (speaks) {
        for (SessionObserver* o : observers_) o->onEval(last);
      }
    }
  }
  trainer.saveWeights();
  if (speaks) {
    std::lock_guard lock(mutex_);
    result_.steps = trainer.stepsDone();
    result_.stopped = stopped;
    result_.lastEval = last;
    result_.weightsPath = config_.saveWeights;
  }
}

// What can be refused without any work is refused before any rank allocates: an output path
// that cannot be written, and a run that cannot fit in this machine's memory (the estimate of
// core/config/memory_estimate.h, times the ranks sharing the machine). Every rank checks the
// same config, so under MPI all refuse together.
void Session::checkBeforeStart(bool mpi) const {
  if (!config_.saveWeights.empty()) checkOutputPath(config_.saveWeights, "save_weights");
  const int sharing = mpi ? mpiRanksOnThisNode() : config_.parallel.worldSize();
  checkMemory(estimateMemory(config_, dataBytesInMemory(config_.data), sharing),
              availableMemoryBytes());
}

void Session::runRank(Communicator& world, Allocator& allocator) {
  try {
    trainRank(world, allocator);
  } catch (const std::exception& e) {
    recordFailure(world.rank(), e);
    throw;  // so the in-process world fails the peers' pending operations at once
  }
}

FinishedReport Session::run() {
  state_ = SessionState::Running;
  const bool mpi = options_.mpiWorld.has_value();
  const int ranks = mpi ? options_.mpiWorld->size() : config_.parallel.worldSize();
  std::string tracePath;
  try {
    checkBeforeStart(mpi);
    if (options_.recorder) options_.recorder->begin(mpi ? &*options_.mpiWorld : nullptr, ranks);
    if (mpi) {
      runRank(*options_.mpiWorld, defaultAllocator());
    } else if (ranks == 1) {
      Communicator single;  // the size-1 world
      runRank(single, defaultAllocator());
    } else {
      runInProcess(ranks, [&](Communicator& world) {
        Allocator allocator;  // each rank's own tracked memory, as a device would have
        runRank(world, allocator);
      });
    }
    if (options_.recorder) tracePath = options_.recorder->end(mpi ? options_.mpiWorld->rank() : -1);
  } catch (const std::exception& e) {
    recordFailure(mpi ? options_.mpiWorld->rank() : 0, e);  // kept only if no rank failed first
  }
  FinishedReport finished;
  std::optional<ErrorReport> failure;
  {
    std::lock_guard lock(mutex_);
    result_.tracePath = tracePath;
    result_.failed = error_.has_value();
    finished = result_;
    failure = error_;
  }
  state_ = failure            ? SessionState::Failed
           : finished.stopped ? SessionState::Stopped
                              : SessionState::Finished;
  if (failure) {
    for (SessionObserver* o : observers_) o->onError(*failure);
  }
  for (SessionObserver* o : observers_) o->onFinished(finished);
  return finished;
}

void Session::start(bool paused) {
  if (state_ != SessionState::Idle || thread_.joinable()) {
    throw UserError("a session runs once: this one has already been started");
  }
  if (paused) gate_.pause();
  state_ = SessionState::Running;
  thread_ = std::thread([this] { run(); });
}

FinishedReport Session::wait() {
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mutex_);
  return result_;
}

}  // namespace parascope
