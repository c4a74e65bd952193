// The step executor, the only one: runs one rank's step program (a schedule from schedule.h with
// its data-parallel work placed by program_builder.h; without a pipeline p = 1) over the rank's
// model chunks. It sends activations and gradients to the neighbouring pipeline ranks through the
// pipeline Communicator (sends never block, receives do; docs/schedules.md), hands the
// data-parallel instructions to the trainer's reducer and gatherer (DataParallelHooks), and runs
// the optimizer step's callback. It tags what it does with the instruction: every instruction is
// one trace span named after its op, with the stage, micro-batch and program index in
// trace::Context, the same index the simulator's timings use. It measures per step the rank's
// busy time (compute instructions) and the step's span until the last pipeline rank finished
// computing, so idle = span - busy as in the simulator.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "core/comm/communicator.h"
#include "core/parallel/pipeline_layout.h"
#include "core/parallel/program_builder.h"
#include "core/parallel/schedule.h"
#include "core/pipeline/pipeline_stage.h"

namespace parascope {

// Where the data-parallel instructions go (core/train: the gradient reducer and ZeRO-3's
// gatherer). A reduction round is the backward passes between two sets of reductions: every
// pass of a round writes gradients the round's reductions then carry.
struct DataParallelHooks {
  std::function<void()> beginRound;     // before the round's first gradient-writing pass
  std::function<void(int)> reduce;      // bucket b's reduction is issued (buckets in order)
  std::function<double()> finishRound;  // waits for the round's reductions; seconds waited
  std::function<void(int)> gather;      // ZeRO-3: start gathering shard group g
};

struct StepSetup {
  PipelineShape shape;             // p, m (micro-batches per step), v
  std::string schedule = "1f1b";   // a name from scheduleTable()
  std::vector<LayerRange> stages;  // per virtual stage: whole-model layer indices
  Recompute recompute = Recompute::None;
  // Shape of the activation (and gradient) passed between stages for a micro-batch, e.g.
  // (rows, T, C) for the GPT.
  std::function<Shape(const Batch&)> boundary;
  bool pipeline = true;           // a pipeline's program (false: p = 1 as the only layout)
  DataParallelWork dataParallel;  // this rank's; empty without data parallelism or ZeRO
  DataParallelHooks hooks;        // set when dataParallel is not empty
};

struct StepStats {
  double lossSum = 0;           // the step's per-target losses summed (same on every pipeline rank)
  double busySeconds = 0;       // in compute instructions (F, B, Bi, W)
  double finishSeconds = 0;     // when this rank finished its last compute instruction
  double stepSeconds = 0;       // the latest finish over the pipeline ranks (the step's makespan)
  double optimizerSeconds = 0;  // the OptStep callback
  double reduceWaitSeconds = 0;  // waiting for gradient reductions not hidden by compute
  double idleSeconds() const { return stepSeconds - busySeconds; }
  double idleFraction() const { return stepSeconds > 0 ? idleSeconds() / stepSeconds : 0; }
};

class StepExecutor {
 public:
  using BatchSource = std::function<Batch(int microBatch)>;

  // model: this rank's layers only, in rankLayers() order. pipeline: the pipeline group (its
  // rank is the pipeline rank). UserError if the schedule cannot run the shape. The program is
  // validated with its data-parallel work: std::logic_error if a builder placed it wrongly.
  StepExecutor(Model& model, Communicator& pipeline, StepSetup setup);

  // One step: this rank's program. Every rank loads the step's micro-batches through `batches`
  // before the step's clock starts (inputs for the first stage, targets for the last, the row
  // count for the boundary shape). optimizerStep runs inside the OptStep instruction, after every
  // pipeline rank finished computing and the last reductions completed.
  StepStats run(const BatchSource& batches, const std::function<void()>& optimizerStep);
  // Forward only over `count` micro-batches; the result is the same on every pipeline rank.
  MicroBatchResult evaluate(const BatchSource& batches, int count);

  const Program& program() const { return program_; }
  const StepSetup& setup() const { return setup_; }
  bool holdsFirstStage() const { return rank_ == 0; }
  bool holdsLastStage() const { return rank_ == lastRank(); }

 private:
  using Key = std::tuple<int, int, int>;  // (op, stage, micro-batch) of a message or a tensor
  struct Message {
    Tensor buffer;
    CommHandle handle;
  };
  int lastStage() const { return setup_.shape.virtualStages() - 1; }
  int lastRank() const { return setup_.shape.rankOf(lastStage()); }
  void begin(const std::vector<Program>& programs, const BatchSource& batches);
  void finishSends();
  // backwardNext: for a Forward, backwardFollows in the program being run.
  void execute(const Instruction& in, bool backwardNext);
  void forward(const Instruction& in, bool backwardNext);
  void backward(const Instruction& in);
  void send(const Instruction& in, Tensor t);
  Tensor receive(const Instruction& in);
  const Batch& batch(int microBatch);
  // Collective over the pipeline group: the last stage's value, bit for bit.
  double fromLastStage(double value);

  Model& model_;
  Communicator& pipeline_;
  StepSetup setup_;
  int rank_;
  // Every pipeline rank's schedule, for the order of their sends; this rank's with its
  // data-parallel work in program_.
  std::vector<Program> programs_;
  Program program_;
  std::vector<std::unique_ptr<PipelineStage>> chunks_;

  // Per step.
  const BatchSource* batches_ = nullptr;
  std::map<int, Batch> batchCache_;
  std::vector<std::deque<Key>> expected_;  // per peer: its sends to this rank, in its order
  std::map<Key, Message> posted_;          // receives posted, by the send they match
  std::deque<Message> sending_;            // sends in flight (their tensors stay alive)
  std::map<Key, Tensor> inputs_, outputs_, outputGrads_, inputGrads_;  // keyed (0, stage, mb)
  bool evaluating_ = false;
  MicroBatchResult result_;  // losses (and in evaluation, correct predictions) of the last stage
};

}  // namespace parascope
