// Compute instructions wrapped in the transfers their stage boundaries need.
#include "core/parallel/program_builder.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace parascope {

void ProgramBuilder::forward(int chunk, int microBatch) {
  const int stage = shape_.stageOf(rank_, chunk);
  const int previous = stage - 1;
  const int next = stage + 1;
  if (previous >= 0 && shape_.rankOf(previous) != rank_) {
    program_.push_back(
        transferOp(Op::RecvActivation, stage, chunk, microBatch, shape_.rankOf(previous)));
  }
  program_.push_back(forwardOp(stage, chunk, microBatch));
  if (next < shape_.virtualStages() && shape_.rankOf(next) != rank_) {
    program_.push_back(
        transferOp(Op::SendActivation, stage, chunk, microBatch, shape_.rankOf(next)));
  }
}

void ProgramBuilder::backwardWith(Op op, int chunk, int microBatch) {
  const int stage = shape_.stageOf(rank_, chunk);
  const int previous = stage - 1;
  const int next = stage + 1;
  if (next < shape_.virtualStages() && shape_.rankOf(next) != rank_) {
    program_.push_back(transferOp(Op::RecvGrad, stage, chunk, microBatch, shape_.rankOf(next)));
  }
  program_.push_back(op == Op::Backward ? backwardOp(stage, chunk, microBatch)
                                        : backwardInputOp(stage, chunk, microBatch));
  if (previous >= 0 && shape_.rankOf(previous) != rank_) {
    program_.push_back(transferOp(Op::SendGrad, stage, chunk, microBatch, shape_.rankOf(previous)));
  }
}

void ProgramBuilder::backward(int chunk, int microBatch) {
  backwardWith(Op::Backward, chunk, microBatch);
}

void ProgramBuilder::backwardInput(int chunk, int microBatch) {
  backwardWith(Op::BackwardInput, chunk, microBatch);
}

void ProgramBuilder::backwardWeight(int chunk, int microBatch) {
  program_.push_back(backwardWeightOp(shape_.stageOf(rank_, chunk), chunk, microBatch));
}

Program ProgramBuilder::finish() {
  program_.push_back(optimizerStepOp());
  return std::move(program_);
}

namespace {

bool writesGradients(Op op) {
  return op == Op::Backward || op == Op::BackwardInput || op == Op::BackwardWeight;
}

// Whether program[i + 1] is the transfer that hands program[i]'s result on.
bool followedBy(const Program& program, std::size_t i, Op transfer) {
  return i + 1 < program.size() && program[i + 1].op == transfer &&
         program[i + 1].stage == program[i].stage &&
         program[i + 1].microBatch == program[i].microBatch;
}

}  // namespace

Program addDataParallelWork(const Program& program, const DataParallelWork& work) {
  if (program.empty() || work.empty()) return program;
  // What goes in before and after each instruction of `program`.
  std::vector<Program> before(program.size()), after(program.size());
  // A backward's reductions wait for its SendGrad: the neighbour needs the gradient first.
  auto end = [&](std::size_t i) { return followedBy(program, i, Op::SendGrad) ? i + 1 : i; };
  if (!work.forwardGroup.empty()) {
    for (std::size_t i = 0; i < program.size(); ++i) {
      const Instruction& in = program[i];
      if (in.op != Op::Forward) continue;
      const bool received = i > 0 && program[i - 1].op == Op::RecvActivation &&
                            program[i - 1].stage == in.stage &&
                            program[i - 1].microBatch == in.microBatch;
      before[received ? i - 1 : i].push_back(
          gatherOp(in.stage, in.chunk, in.microBatch,
                   work.forwardGroup.at(static_cast<std::size_t>(in.chunk))));
    }
  }
  if (work.eachMicroBatch) {
    for (std::size_t i = 0; i < program.size(); ++i) {
      const Instruction& in = program[i];
      if (!writesGradients(in.op)) continue;
      if (in.op != Op::Backward || in.chunk != 0) {
        throw std::logic_error("data-parallel work: " + in.toString() +
                               " does not fit a reduction per micro-batch, which needs one chunk "
                               "and whole backwards");
      }
      for (int b = 0; b < work.buckets(); ++b)
        after[end(i)].push_back(reduceOp(work.reduce, b, in.microBatch));
    }
  } else if (work.buckets() > 0) {
    // Per chunk, its last instruction writing gradients; the first such instruction of the
    // program bounds every reduction from below (a bucket no layer writes is reduced there).
    std::vector<std::size_t> last;
    std::size_t first = program.size();
    for (std::size_t i = 0; i < program.size(); ++i) {
      const Instruction& in = program[i];
      if (!writesGradients(in.op)) continue;
      const auto c = static_cast<std::size_t>(in.chunk);
      if (last.size() <= c) last.resize(c + 1, 0);
      last[c] = i;
      first = std::min(first, i);
    }
    if (first == program.size()) {
      throw std::logic_error("data-parallel work: the program writes no gradients to reduce");
    }
    std::size_t at = first;
    for (int b = 0; b < work.buckets(); ++b) {
      for (int c : work.bucketChunks[static_cast<std::size_t>(b)]) {
        at = std::max(at, last.at(static_cast<std::size_t>(c)));
      }
      after[end(at)].push_back(reduceOp(work.reduce, b));
    }
  }
  Program out;
  out.reserve(program.size() * 2);
  for (std::size_t i = 0; i < program.size(); ++i) {
    out.insert(out.end(), before[i].begin(), before[i].end());
    out.push_back(program[i]);
    out.insert(out.end(), after[i].begin(), after[i].end());
  }
  return out;
}

}  // namespace parascope
