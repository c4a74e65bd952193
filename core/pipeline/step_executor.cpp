// Runs a rank's step program: compute on the rank's chunks, transfers between pipeline ranks,
// data-parallel work through the trainer's hooks, one trace span per instruction, busy/idle
// timing.
#include "core/pipeline/step_executor.h"

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/parallel/program_builder.h"
#include "core/parallel/schedule_validator.h"
#include "core/trace/trace.h"

namespace parascope {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

Tensor take(std::map<std::tuple<int, int, int>, Tensor>& from, int stage, int microBatch) {
  auto node = from.extract({0, stage, microBatch});
  if (node.empty()) {
    throw std::logic_error("step executor: no tensor for stage " + std::to_string(stage) +
                           " micro-batch " + std::to_string(microBatch));
  }
  return node.mapped();
}

}  // namespace

StepExecutor::StepExecutor(Model& model, Communicator& pipeline, StepSetup setup)
    : model_(model), pipeline_(pipeline), setup_(std::move(setup)), rank_(pipeline.rank()) {
  const PipelineShape& shape = setup_.shape;
  if (pipeline.size() != shape.stages ||
      static_cast<int>(setup_.stages.size()) != shape.virtualStages()) {
    throw std::logic_error("step executor: group of " + std::to_string(pipeline.size()) +
                           " ranks and " + std::to_string(setup_.stages.size()) +
                           " stage ranges for p=" + std::to_string(shape.stages) +
                           " v=" + std::to_string(shape.chunks));
  }
  programs_ = buildSchedule(findSchedule(setup_.schedule), shape);
  program_ = addDataParallelWork(programs_[static_cast<std::size_t>(rank_)], setup_.dataParallel);
  if (!setup_.dataParallel.empty()) {
    // Other ranks' data-parallel work is theirs to place; their schedules alone are checked here.
    std::vector<Program> checked = programs_;
    std::vector<DataParallelWork> work(checked.size());
    checked[static_cast<std::size_t>(rank_)] = program_;
    work[static_cast<std::size_t>(rank_)] = setup_.dataParallel;
    const ValidationReport report = validatePrograms(shape, checked, {}, work);
    if (!report.ok()) {
      throw std::logic_error("step executor: invalid program for rank " + std::to_string(rank_) +
                             ":\n" + report.summary());
    }
  }
  // With a reduction per micro-batch a layer's gradients are final after each of its passes.
  const int passesPerRound = setup_.dataParallel.eachMicroBatch ? 1 : shape.microBatches;
  const std::vector<LayerRange> ranges = rankChunkRanges(setup_.stages, shape.stages, rank_);
  for (const LayerRange& r : ranges) {
    chunks_.push_back(
        std::make_unique<PipelineStage>(model, r.begin, r.end, setup_.recompute, passesPerRound));
  }
  if (ranges.back().end != static_cast<int>(model.layers().size())) {
    throw std::logic_error("step executor: the rank's model has " +
                           std::to_string(model.layers().size()) + " layers, its stages " +
                           std::to_string(ranges.back().end));
  }
}

void StepExecutor::begin(const std::vector<Program>& programs, const BatchSource& batches) {
  batches_ = &batches;
  batchCache_.clear();
  result_ = MicroBatchResult();
  expected_.assign(programs.size(), {});
  for (std::size_t q = 0; q < programs.size(); ++q) {
    for (const Instruction& in : programs[q]) {
      if ((in.op == Op::SendActivation || in.op == Op::SendGrad) && in.peer == rank_) {
        expected_[q].emplace_back(static_cast<int>(in.op), in.stage, in.microBatch);
      }
    }
  }
}

const Batch& StepExecutor::batch(int microBatch) {
  auto it = batchCache_.find(microBatch);
  if (it == batchCache_.end()) it = batchCache_.emplace(microBatch, (*batches_)(microBatch)).first;
  return it->second;
}

StepStats StepExecutor::run(const BatchSource& batches,
                            const std::function<void()>& optimizerStep) {
  begin(programs_, batches);
  for (auto& chunk : chunks_) chunk->beginStep();
  // Data loading stays out of the compute instructions' time.
  for (int mb = 0; mb < setup_.shape.microBatches; ++mb) batch(mb);
  StepStats stats;
  // Every pipeline rank starts the step's clock together, so that the latest finish over the
  // ranks is the step's span for each of them (the previous step's optimizer takes a different
  // time per stage).
  // (Without a pipeline there is nobody to agree with: the group of one stays silent.)
  int token = 0;
  if (pipeline_.size() > 1) pipeline_.allReduce(&token, &token, 1, DType::I32, ReduceOp::Sum);
  const Clock::time_point start = Clock::now();
  const DataParallelHooks& hooks = setup_.hooks;
  const int lastBucket = setup_.dataParallel.buckets() - 1;
  bool roundOpen = false, roundReduced = false;
  for (std::size_t i = 0; i < program_.size(); ++i) {
    const Instruction& in = program_[i];
    const bool writes =
        in.op == Op::Backward || in.op == Op::BackwardInput || in.op == Op::BackwardWeight;
    if (writes && lastBucket >= 0 && !roundOpen) {
      // The previous round's last reductions ran behind this round's forwards; they complete
      // before the reducer takes the next gradients.
      if (roundReduced) stats.reduceWaitSeconds += hooks.finishRound();
      hooks.beginRound();
      roundOpen = true;
      roundReduced = false;
    }
    // Stage tags make a pipeline (bubbles, the Pipeline view); a run without one has none.
    const trace::ScopedInstruction tags(setup_.pipeline ? in.stage : -1, in.microBatch,
                                        static_cast<std::int32_t>(i));
    const trace::Span span(
        opName(in.op), trace::Category::Instruction,
        in.isPointToPoint() ? trace::lane::kCommunication : trace::lane::kCompute);
    if (in.op == Op::OptimizerStep) {
      stats.finishSeconds = since(start);
      finishSends();
      stats.lossSum = fromLastStage(result_.lossSum);
      auto finish = static_cast<float>(stats.finishSeconds);
      if (pipeline_.size() > 1) pipeline_.allReduce(&finish, &finish, 1, DType::F32, ReduceOp::Max);
      stats.stepSeconds = finish;
      if (roundReduced) stats.reduceWaitSeconds += hooks.finishRound();
      const Clock::time_point t = Clock::now();
      optimizerStep();
      stats.optimizerSeconds = since(t);
      continue;
    }
    if (in.op == Op::ReduceGradBucket || in.op == Op::ZeroScatter) {
      hooks.reduce(in.bucket);
      if (in.bucket == lastBucket) {
        roundOpen = false;
        roundReduced = true;
      }
      continue;
    }
    if (in.op == Op::ZeroGather) {
      hooks.gather(in.bucket);
      continue;
    }
    const Clock::time_point t = Clock::now();
    execute(in, in.op == Op::Forward && backwardFollows(program_, i));
    if (in.isCompute()) stats.busySeconds += since(t);
  }
  batchCache_.clear();
  return stats;
}

MicroBatchResult StepExecutor::evaluate(const BatchSource& batches, int count) {
  PipelineShape shape = setup_.shape;
  shape.microBatches = count;
  std::vector<Program> programs;
  for (int q = 0; q < shape.stages; ++q) {
    ProgramBuilder builder(shape, q);
    for (int mb = 0; mb < count; ++mb) {
      for (int c = 0; c < shape.chunks; ++c) builder.forward(c, mb);
    }
    programs.push_back(builder.finish());
  }
  begin(programs, batches);
  evaluating_ = true;
  try {
    for (const Instruction& in : programs[static_cast<std::size_t>(rank_)]) {
      if (in.op == Op::OptimizerStep) continue;
      execute(in, false);
      // A validation set can be large: a micro-batch goes once the rank's last chunk used it.
      if (in.op == Op::Forward && in.chunk + 1 == shape.chunks) batchCache_.erase(in.microBatch);
    }
  } catch (...) {
    evaluating_ = false;
    throw;
  }
  evaluating_ = false;
  finishSends();
  batchCache_.clear();
  MicroBatchResult r;
  r.lossSum = fromLastStage(result_.lossSum);
  std::int64_t counts[2] = {result_.targets, result_.correct};
  if (pipeline_.size() > 1) pipeline_.broadcast(counts, 2, DType::I64, lastRank());
  r.targets = counts[0];
  r.correct = counts[1];
  return r;
}

double StepExecutor::fromLastStage(double value) {
  if (pipeline_.size() == 1) return value;
  std::int64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  pipeline_.broadcast(&bits, 1, DType::I64, lastRank());
  std::memcpy(&value, &bits, sizeof bits);
  return value;
}

void StepExecutor::execute(const Instruction& in, bool backwardNext) {
  const int s = in.stage, mb = in.microBatch;
  switch (in.op) {
    case Op::Forward: forward(in, backwardNext); return;
    case Op::Backward:
    case Op::BackwardInput: backward(in); return;
    case Op::BackwardWeight:
      chunks_[static_cast<std::size_t>(in.chunk)]->backwardWeight(mb, batch(mb));
      return;
    case Op::SendActivation: send(in, take(outputs_, s, mb)); return;
    case Op::SendGrad: send(in, take(inputGrads_, s, mb)); return;
    case Op::RecvActivation: inputs_[{0, s, mb}] = receive(in); return;
    case Op::RecvGrad: outputGrads_[{0, s, mb}] = receive(in); return;
    default:
      // Data-parallel reduction runs inside the gradient reducer's backward hooks, so the
      // schedules' programs carry none of these.
      throw std::logic_error("step executor: instruction " + in.toString() +
                             " is not run by the pipeline executor");
  }
}

void StepExecutor::forward(const Instruction& in, bool backwardNext) {
  const int s = in.stage, mb = in.microBatch;
  const Batch& b = batch(mb);
  const Tensor x = s == 0 ? b.inputs : take(inputs_, s, mb);
  PipelineStage& chunk = *chunks_[static_cast<std::size_t>(in.chunk)];
  Tensor y;
  if (evaluating_) {
    Activations head;
    y = chunk.evaluate(x, b, s == lastStage() ? &head : nullptr);
    if (s == lastStage()) {
      if (const auto* loss = dynamic_cast<const LossLayer*>(model_.layers().back().get())) {
        result_.correct += loss->correct(b, head);
      }
    }
  } else {
    y = chunk.forward(mb, x, b, backwardNext);
  }
  if (s == lastStage()) {
    result_.lossSum += sumOfLosses(y);  // per micro-batch first, as Model::forwardBackward sums
    result_.targets += y.numel();
    return;
  }
  const bool local = setup_.shape.rankOf(s + 1) == rank_;
  (local ? inputs_[{0, s + 1, mb}] : outputs_[{0, s, mb}]) = y;
}

void StepExecutor::backward(const Instruction& in) {
  const int s = in.stage, mb = in.microBatch;
  const Batch& b = batch(mb);
  const Tensor dy = s == lastStage() ? Tensor() : take(outputGrads_, s, mb);
  PipelineStage& chunk = *chunks_[static_cast<std::size_t>(in.chunk)];
  Tensor dx = in.op == Op::Backward ? chunk.backward(mb, dy, b) : chunk.backwardInput(mb, dy, b);
  if (s == 0) return;
  const bool local = setup_.shape.rankOf(s - 1) == rank_;
  (local ? outputGrads_[{0, s - 1, mb}] : inputGrads_[{0, s, mb}]) = dx;
}

void StepExecutor::send(const Instruction& in, Tensor t) {
  // The send is only posted; the tensor stays referenced until the transfer completes.
  Message& m = sending_.emplace_back();
  m.handle = pipeline_.sendAsync(t.raw(), static_cast<std::size_t>(t.numel()), DType::F32, in.peer);
  m.buffer = std::move(t);
  while (!sending_.empty() && sending_.front().handle.test()) sending_.pop_front();
}

// Transfers between two ranks match in issue order, whatever they carry (activations and
// gradients share the pair when a rank holds several chunks). So receives from a peer are posted
// in the order the peer sends, which is known from its program, up to the one needed now; the
// messages posted ahead wait in their own buffers for their instruction.
Tensor StepExecutor::receive(const Instruction& in) {
  const Key want = in.op == Op::RecvActivation
                       ? Key{static_cast<int>(Op::SendActivation), in.stage - 1, in.microBatch}
                       : Key{static_cast<int>(Op::SendGrad), in.stage + 1, in.microBatch};
  std::deque<Key>& queue = expected_[static_cast<std::size_t>(in.peer)];
  while (posted_.find(want) == posted_.end()) {
    if (queue.empty()) {
      throw std::logic_error("step executor: " + in.toString() + " has no matching send");
    }
    const Key next = queue.front();
    queue.pop_front();
    Message& m = posted_[next];
    m.buffer = Tensor::empty(setup_.boundary(batch(std::get<2>(next))), DType::F32,
                             MemoryCategory::Activation, model_.allocator());
    m.handle = pipeline_.recvAsync(m.buffer.raw(), static_cast<std::size_t>(m.buffer.numel()),
                                   DType::F32, in.peer);
  }
  auto node = posted_.extract(want);
  node.mapped().handle.wait();
  return node.mapped().buffer;
}

void StepExecutor::finishSends() {
  for (Message& m : sending_) m.handle.wait();
  sending_.clear();
}

}  // namespace parascope
