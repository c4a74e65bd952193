// A training session: one run's home. Given a validated config it builds the ranks (threads of
// this process, or this process's rank of an MPI job), runs optimizer steps, evaluates, saves,
// and publishes reports (reports.h) to any number of observers. It is controlled from any
// thread: start, pause, one step, resume, stop, all acting at the next step boundary
// (step_gate.h). A failure on any rank ends the session with one error report naming the rank
// and the reason; nothing escapes to the host process, so a GUI can start another session.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/session/reports.h"
#include "core/session/run_recorder.h"
#include "core/session/step_gate.h"

namespace parascope {

struct SessionOptions {
  // This process's rank of an MPI job (mpiWorld()); unset: the config's world of in-process
  // ranks, one thread each.
  std::optional<Communicator> mpiWorld;
  std::shared_ptr<RunRecorder> recorder;  // records the run (train --trace); null: none
  bool evaluate = true;                   // false: steps only, no validation passes (benchmarks)
};

enum class SessionState { Idle, Running, Paused, Finished, Stopped, Failed };

class Session {
 public:
  explicit Session(TrainConfig config, SessionOptions options = {});
  ~Session();  // stops a session still running and waits for it
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Before start() or run(); not owned. onRankStep is called from every rank's thread at once,
  // the other reports from one thread at a time.
  void addObserver(SessionObserver& observer);

  // Runs the whole session on the calling thread (in-process ranks 1.. on threads of their
  // own) and returns how it ended.
  FinishedReport run();
  // run() on a thread of its own; returns at once. paused: hold before the first step.
  void start(bool paused = false);
  // Blocks until a started session has ended.
  FinishedReport wait();

  void pause() { gate_.pause(); }
  void resume() { gate_.resume(); }
  void stepOnce() { gate_.stepOnce(); }
  void stop() { gate_.stop(); }

  SessionState state() const;
  const TrainConfig& config() const { return config_; }
  // The failure that ended the session, once it has ended failed.
  std::optional<ErrorReport> error() const;

 private:
  void checkBeforeStart(bool mpi) const;
  void runRank(Communicator& world, Allocator& allocator);
  void trainRank(Communicator& world, Allocator& allocator);
  void recordFailure(int rank, const std::exception& e);

  const TrainConfig config_;
  SessionOptions options_;
  std::vector<SessionObserver*> observers_;
  StepGate gate_;
  std::atomic<SessionState> state_{SessionState::Idle};
  mutable std::mutex mutex_;  // guards error_ and result_
  std::optional<ErrorReport> error_;
  FinishedReport result_;
  std::thread thread_;
};

}  // namespace parascope
