// What a session tells its observers, besides the per-step and evaluation reports the trainer
// produces (core/train/step_report.h): how the run starts, how it ends, and why it failed. Plain
// values, copied to observers, so a GUI can queue them across threads.
#pragma once

#include <cstdint>
#include <string>

#include "core/config/config.h"
#include "core/train/step_report.h"

namespace parascope {

struct StartReport {
  TrainConfig config;
  std::string model;            // e.g. "gpt, 3.22M parameters (4 layers, width 256, ...)"
  std::string data;             // the dataset's own description
  std::int64_t parameters = 0;  // of the whole logical model, whichever part a rank holds
  double flopsPerToken = 0;     // model FLOPs per target (GPT: 6 N + 12 L T C; 0 for the MLP)
  int worldSize = 1;
  int firstStep = 0;  // steps already done when the session starts (0 for a fresh run)
  // A run on a GPU: its name, and the dense GEMM peak of the precision its products run in
  // (cuBLAS; fp32 with TF32 off, or bf16/fp16 under mixed precision), measured on the idle device
  // before the process's first run on it (cuda::productPeak), MFU's denominator there. Empty and 0
  // on the CPU, whose peak each front end knows (kernels::SgemmPeakCache).
  std::string deviceName;
  double devicePeakFlops = 0;
};

// A live strategy switch (Session::switchStrategy), published once it has taken effect.
struct SwitchReport {
  int step = 0;               // optimizer steps done when it took effect
  std::string before, after;  // describeStrategy() of the two configs
  TrainConfig from, to;
  int worldBefore = 1, worldAfter = 1;
  double milliseconds = 0;      // from the step boundary until the new layout could run
  std::int64_t bytesMoved = 0;  // state bytes copied into the new layout, all ranks together
  // Of the new layout's memory, bytes on pages the old layout (or an earlier one) gave back,
  // already touched, rather than faulted in fresh; all ranks together.
  std::int64_t bytesReused = 0;
};

// A checkpoint written (Session::saveCheckpoint, save_interval, the end of a run) or loaded.
struct CheckpointReport {
  int step = 0;
  std::string path;  // the checkpoint's step directory
  bool loaded = false;
  double milliseconds = 0;  // saving: the whole save; loading: reading into the built layout
  std::int64_t bytes = 0;   // written or read, all ranks together
};

struct ErrorReport {
  int rank = 0;            // the rank whose failure ended the session (the first to fail)
  std::string reason;      // its message, as thrown
  bool userError = false;  // a UserError: bad input the user can fix (CLI exit status 2)
};

struct FinishedReport {
  int steps = 0;            // optimizer steps done, in total
  bool stopped = false;     // ended by stop() before train_iters
  bool failed = false;      // an ErrorReport was published
  EvalReport lastEval;      // the last evaluation (targets == 0 if none ran)
  std::string weightsPath;  // save_weights, when written
  std::string tracePath;    // the trace file, when recorded
  std::string checkpoint;   // the last checkpoint written (also after a failure: resume from it)
};

// Reports arrive on the rank threads (or the calling thread under MPI), in order: start, then
// for each step its rank reports and its step report, then its evaluation if one was due, then
// the switches and checkpoints done at the boundary after it, and
// at the end exactly one of error or finished (finished also after an error, with failed set).
// Observers must return quickly: the ranks wait for them.
class SessionObserver {
 public:
  virtual ~SessionObserver() = default;
  virtual void onStart(const StartReport&) {}
  // Rank 0's view of each step (losses are global means, the same on every rank).
  virtual void onStep(const StepReport&) {}
  // Every rank's own figures of each step (rank, exposed communication, pipeline busy and idle,
  // peak memory by category), each from its own thread in-process.
  virtual void onRankStep(const StepReport&) {}
  virtual void onEval(const EvalReport&) {}
  virtual void onSwitch(const SwitchReport&) {}
  virtual void onCheckpoint(const CheckpointReport&) {}
  virtual void onError(const ErrorReport&) {}
  virtual void onFinished(const FinishedReport&) {}
};

}  // namespace parascope
