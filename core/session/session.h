// A training session: one run's home. Given a validated config it builds the ranks (threads of
// this process, or this process's rank of an MPI job), runs optimizer steps, evaluates, saves,
// and publishes reports (reports.h) to any number of observers. It is controlled from any
// thread: start, pause, one step, resume, stop, all acting at the next step boundary
// (step_gate.h). A failure on any rank ends the session with one error report naming the rank
// and the reason; nothing escapes to the host process, so a GUI can start another session.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/session/reports.h"
#include "core/session/run_recorder.h"
#include "core/session/step_gate.h"
#include "core/state/checkpoint.h"
#include "core/state/reshard.h"

namespace parascope {

struct MemoryEstimate;
class RankMemoryTrack;

class Trainer;
struct RankHooks;

struct SessionOptions {
  // One rank of a world its caller runs: this process's rank of an MPI job (mpiWorld()), or in
  // tests one thread of an in-process world (runInProcess); the session runs that rank only.
  // Unset: the config's world of in-process ranks, one thread each.
  std::optional<Communicator> world;
  // With `world`: the rank's tracked memory (not owned); null: one of the session's own.
  Allocator* allocator = nullptr;
  // Per-rank access to the trainer, for tests (core/session/rank_hooks.h); null: none.
  std::shared_ptr<const RankHooks> rankHooks;
  std::shared_ptr<RunRecorder> recorder;  // records the run (train --trace); null: none
  bool evaluate = true;                   // false: steps only, no validation passes (benchmarks)
  // Checkpoints (core/state/checkpoint.h): written under saveDir every saveInterval steps (0: only
  // at the end of the run) and at the end, keeping the newest `keep` (0: all); `load` starts the
  // run from a checkpoint (a step directory, or a directory whose `latest` is taken) under this
  // session's config, whatever the layout it was saved under.
  std::string saveDir;
  int saveInterval = 0;
  int keep = 0;
  std::string load;
  // Whether loading checks every byte against the checkpoint's checksums: always, but for
  // measuring what the check costs (bench switch).
  bool verifyLoad = true;
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
  // From any thread: switches the running session to `next` at the next step boundary (also
  // while paused), resharding the state in memory. Throws UserError, with the config validator's
  // words, for a config that cannot continue this run (anything but the parallel strategy,
  // pipeline, micro-batch and accumulation differs, or the global batch changes); the session is
  // untouched then. In-process the number of ranks may change; under MPI it must stay, and rank
  // 0's request is the one every process follows.
  void switchStrategy(const TrainConfig& next);
  // The checks switchStrategy makes, without asking for the switch: for front ends that validate
  // planned switches before the run starts.
  void checkSwitch(const TrainConfig& next) const;
  // What asking for `requested` (a whole config document) would switch this session to now: the
  // switch rule (switch_rule.h: the accumulation re-derived unless batchNamed) and checkSwitch's
  // checks, with their one message. Front ends ask this before offering Apply.
  TrainConfig resolveSwitch(const nlohmann::json& requested, bool batchNamed) const;
  // From any thread: writes a checkpoint under `dir` at the next step boundary (under MPI, rank
  // 0's request and directory count).
  void saveCheckpoint(const std::string& dir);

  SessionState state() const;
  // The config now running (the last switch's target once it has taken effect).
  TrainConfig config() const;
  // The failure that ended the session, once it has ended failed.
  std::optional<ErrorReport> error() const;

 private:
  // A rank of the running layout, kept across a switch until the next layout has copied its
  // state (in-process: every rank's; under MPI: this process's).
  struct RankSlot {
    // The rank's tracked memory, as a device would have: SessionOptions::allocator, or `own`.
    std::unique_ptr<Allocator> own;
    Allocator* allocator = nullptr;
    std::unique_ptr<Trainer> trainer;
  };
  enum class Ending { Done, Stopped, Switch };

  MemoryEstimate runEstimate(bool mpi) const;
  void checkBeforeStart(bool mpi) const;
  bool onGpu() const;  // the config's device is a GPU
  double gpuMemoryBytes() const;
  void measureDevicePeak();
  std::unique_ptr<Allocator> makeAllocator() const;
  std::string outOfMemoryReason(bool mpi) const;
  std::shared_ptr<RankMemoryTrack> memoryTrack(int rank);
  PagePool& pages() const;
  void runLayout(int ranks);
  void runRank(Communicator& world, RankSlot& slot);
  Ending trainRank(Communicator& world, RankSlot& slot);
  Trainer& buildTrainer(Communicator& world, RankSlot& slot, const TrainConfig& config);
  void saveState(Communicator& world, Trainer& trainer, const std::string& dir);
  void recordFailure(int rank, const std::exception& e);
  template <typename F>
  void publish(F&& report) {
    for (SessionObserver* o : observers_) report(*o);
  }

  TrainConfig config_;  // guarded by mutex_ for readers off the rank threads
  SessionOptions options_;
  std::vector<SessionObserver*> observers_;
  StepGate gate_;
  std::atomic<SessionState> state_{SessionState::Idle};
  mutable std::mutex mutex_;  // guards error_, result_, config_, pending_ and saveDir_
  std::optional<ErrorReport> error_;
  FinishedReport result_;
  std::thread thread_;

  std::vector<RankSlot> slots_;
  // A switch in progress: the previous layout's ranks, their state indexed (in-process), its
  // config, and when the boundary was reached. Set between two layouts, read-only while the new
  // one copies.
  bool switching_ = false;
  std::vector<RankSlot> retiring_;
  // Per world rank, what its trace counters count (session thread only).
  std::vector<std::shared_ptr<RankMemoryTrack>> memoryTracks_;
  std::unique_ptr<StateIndex> switchIndex_;
  TrainingCounters switchCounters_;
  TrainConfig switchFrom_;
  std::chrono::steady_clock::time_point switchStart_;
  std::atomic<std::int64_t> switchBytes_{0};
  std::int64_t switchReusedFrom_ = 0;  // pages().reusedBytes() when the switch began
  std::int64_t switchReused_ = 0;      // under MPI: the processes' reused bytes, summed
  // Every layout's large blocks, kept when a layout ends so that the next one (other sizes) takes
  // their pages touched rather than faulting fresh ones: with the session or SessionOptions'
  // allocator.
  std::shared_ptr<PagePool> pages_ = std::make_shared<PagePool>();
  std::atomic<std::int64_t> loadBytes_{0};  // read by the ranks loading a checkpoint
  // --load's checkpoint, opened once for the process before any rank starts; every rank reads
  // from it. Released when the first layout is built.
  std::shared_ptr<const CheckpointReader> loading_;
  // init_weights, its header read once for the process before any rank starts.
  std::shared_ptr<const SafetensorsReader> initWeights_;
  std::optional<TrainConfig> pending_;  // the requested switch, until it takes effect
  std::string saveDir_;                 // the requested checkpoint's directory
  // --save's directory, held for the run by rank 0's process.
  std::optional<CheckpointLock> saveLock_;
  // The save rank 0 has begun and not committed (its directory and step): discarded when the run
  // ends, all ranks done, so a failed or stopped save leaves no staging copy.
  std::optional<std::pair<std::string, int>> saving_;
  int boundary_ = 0;            // the next layout's first boundary (StepGate::next)
  std::string deviceName_;      // a GPU run's device (StartReport::deviceName)
  double devicePeakFlops_ = 0;  // and the GEMM peak of its products (cuda::productPeak)
  bool started_ = false;        // a layout has run: the next one continues the run
  std::string lastCheckpoint_;
  std::atomic<Ending> ending_{Ending::Done};
};

}  // namespace parascope
