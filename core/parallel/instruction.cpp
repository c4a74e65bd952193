// Instruction names, printable forms and the content-derived id.
#include "core/parallel/instruction.h"

#include <array>

namespace parascope {

namespace {

constexpr std::array<const char*, kOpCount> kOpNames = {
    "F",        "B",        "Bi",           "W",          "SendAct",     "RecvAct",
    "SendGrad", "RecvGrad", "ReduceBucket", "ZeroGather", "ZeroScatter", "OptStep"};

// id layout, low to high: bucket + 1 (20 bits), micro-batch + 1 (20 bits), stage + 1 (16 bits),
// op (8 bits). The +1 maps the "none" value -1 to 0 so every field stays non-negative.
constexpr int kBucketBits = 20;
constexpr int kMicroBatchBits = 20;
constexpr int kStageBits = 16;
constexpr std::uint64_t field(std::int64_t value, int bits) {
  return static_cast<std::uint64_t>(value + 1) & ((std::uint64_t{1} << bits) - 1);
}

}  // namespace

const char* opName(Op op) {
  return kOpNames[static_cast<std::size_t>(op)];
}

std::uint64_t Instruction::id() const {
  std::uint64_t key = static_cast<std::uint64_t>(op);
  key = (key << kStageBits) | field(stage, kStageBits);
  key = (key << kMicroBatchBits) | field(microBatch, kMicroBatchBits);
  key = (key << kBucketBits) | field(bucket, kBucketBits);
  return key;
}

Instruction decodeInstructionId(std::uint64_t id) {
  auto take = [&id](int bits) {
    const auto value = static_cast<std::int64_t>(id & ((std::uint64_t{1} << bits) - 1)) - 1;
    id >>= bits;
    return value;
  };
  Instruction in;
  in.bucket = static_cast<std::int32_t>(take(kBucketBits));
  in.microBatch = static_cast<std::int32_t>(take(kMicroBatchBits));
  in.stage = static_cast<std::int16_t>(take(kStageBits));
  in.op = static_cast<Op>(id);
  return in;
}

std::string Instruction::toString() const {
  std::string out(opName(op));
  if (stage >= 0) {
    out += " s" + std::to_string(stage);
  }
  if (chunk >= 0 && isCompute()) {
    out += " c" + std::to_string(chunk);
  }
  if (microBatch >= 0) {
    out += " mb" + std::to_string(microBatch);
  }
  if (op == Op::SendActivation || op == Op::SendGrad) {
    out += " ->" + std::to_string(peer);
  }
  if (op == Op::RecvActivation || op == Op::RecvGrad) {
    out += " <-" + std::to_string(peer);
  }
  if (bucket >= 0) {
    out += " b" + std::to_string(bucket);
  }
  return out;
}

namespace {
Instruction stageOp(Op op, int stage, int chunk, int microBatch) {
  Instruction in;
  in.op = op;
  in.stage = static_cast<std::int16_t>(stage);
  in.chunk = static_cast<std::int16_t>(chunk);
  in.microBatch = microBatch;
  return in;
}
}  // namespace

Instruction forwardOp(int stage, int chunk, int microBatch) {
  return stageOp(Op::Forward, stage, chunk, microBatch);
}
Instruction backwardOp(int stage, int chunk, int microBatch) {
  return stageOp(Op::Backward, stage, chunk, microBatch);
}
Instruction backwardInputOp(int stage, int chunk, int microBatch) {
  return stageOp(Op::BackwardInput, stage, chunk, microBatch);
}
Instruction backwardWeightOp(int stage, int chunk, int microBatch) {
  return stageOp(Op::BackwardWeight, stage, chunk, microBatch);
}
Instruction transferOp(Op op, int stage, int chunk, int microBatch, int peer) {
  Instruction in = stageOp(op, stage, chunk, microBatch);
  in.peer = peer;
  return in;
}
Instruction reduceOp(Op op, int bucket, int microBatch) {
  Instruction in;
  in.op = op;
  in.bucket = bucket;
  in.microBatch = microBatch;
  return in;
}
Instruction gatherOp(int stage, int chunk, int microBatch, int group) {
  Instruction in = stageOp(Op::ZeroGather, stage, chunk, microBatch);
  in.bucket = group;
  return in;
}
Instruction optimizerStepOp() {
  return Instruction{};
}

bool backwardFollows(const Program& program, std::size_t i) {
  const Instruction& forward = program.at(i);
  for (std::size_t j = i + 1; j < program.size(); ++j) {
    const Instruction& next = program[j];
    if (!next.isCompute()) continue;
    return (next.op == Op::Backward || next.op == Op::BackwardInput) &&
           next.chunk == forward.chunk && next.microBatch == forward.microBatch;
  }
  return false;
}

}  // namespace parascope
