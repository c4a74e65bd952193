// The instruction set of a per-rank training-step program: pipeline compute (forward, backward
// and its input/weight halves), point-to-point transfers between pipeline ranks, the
// data-parallel family (gradient bucket reduce, ZeRO gather/scatter) and the optimizer step.
// Instructions are plain values; executing them is the executor's job, timing them the
// simulator's. Semantics (which sends block, what a stage is) are described in docs/schedules.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace parascope {

// Compute ops first, then point-to-point ones: isCompute and isPointToPoint compare ranges.
enum class Op : std::uint8_t {
  Forward,           // forward of (stage, micro-batch)
  Backward,          // full backward: input gradient and weight gradient together
  BackwardInput,     // zero-bubble B: input gradient only (the critical path)
  BackwardWeight,    // zero-bubble W: weight gradient, after its BackwardInput
  SendActivation,    // output of `stage` to the rank holding stage + 1 (never blocks)
  RecvActivation,    // input of `stage` from the rank holding stage - 1 (blocks until it arrives)
  SendGrad,          // input gradient of `stage` to the rank holding stage - 1 (never blocks)
  RecvGrad,          // output gradient of `stage` from the rank holding stage + 1 (blocks)
  ReduceGradBucket,  // data-parallel all-reduce of gradient bucket `bucket` is issued by here
  ZeroGather,        // ZeRO-3: all-gather of shard group `bucket` for the forward that follows
  ZeroScatter,       // ZeRO-2/3: reduce-scatter of gradient bucket `bucket` is issued by here
  OptimizerStep,     // the rank's optimizer update; the last instruction of a step
};
inline constexpr int kOpCount = 12;
const char* opName(Op op);  // static storage: tracer spans keep the pointer

// Pipeline stages are virtual: with p ranks and v chunks per rank there are p * v stages, and
// stage s lives on rank s % p as that rank's chunk s / p (Megatron's interleaved placement).
struct Instruction {
  Op op = Op::OptimizerStep;
  std::int16_t stage = -1;       // virtual pipeline stage; -1 for whole-rank instructions
  std::int16_t chunk = -1;       // model chunk on this rank holding `stage`; -1 likewise
  std::int32_t microBatch = -1;  // -1 for whole-step instructions
  std::int32_t peer = -1;        // pipeline rank at the other end of a send/recv; -1 otherwise
  std::int32_t bucket = -1;      // bucket / shard group of a data-parallel instruction
  // A reduction's micro-batch is the one whose gradients it completes when every micro-batch is
  // reduced on its own, else -1 (one reduction per step); a gather's stage and micro-batch are
  // those of the forward it serves.

  // Stable key derived from the content (op, stage, micro-batch, bucket): unique within one
  // rank's valid program, identical wherever the same program runs, so the executor's events
  // and the simulator's intervals name the same instruction. (rank, id) is globally unique.
  // Holds stages below 2^16 - 1 and micro-batches and buckets below 2^20 - 1.
  std::uint64_t id() const;
  std::string toString() const;  // "F s3 c1 mb2", "SendAct s0 mb1 ->1", "OptStep"
  bool operator==(const Instruction&) const = default;

  bool isCompute() const { return op <= Op::BackwardWeight; }
  bool isPointToPoint() const { return op >= Op::SendActivation && op <= Op::RecvGrad; }
};

using Program = std::vector<Instruction>;  // one rank's step, executed in order

Instruction forwardOp(int stage, int chunk, int microBatch);
Instruction backwardOp(int stage, int chunk, int microBatch);
Instruction backwardInputOp(int stage, int chunk, int microBatch);
Instruction backwardWeightOp(int stage, int chunk, int microBatch);
Instruction transferOp(Op op, int stage, int chunk, int microBatch, int peer);
// ReduceGradBucket or ZeroScatter of `bucket`; microBatch -1 for a step's only reduction.
Instruction reduceOp(Op op, int bucket, int microBatch = -1);
Instruction gatherOp(int stage, int chunk, int microBatch, int group);
Instruction optimizerStepOp();

// Whether the compute instruction after program[i], a Forward, is the backward (or its input
// half) of the same chunk and micro-batch: the chunk's last layer then starts its backward at
// once on what its forward left.
bool backwardFollows(const Program& program, std::size_t i);

// Decodes a key made by Instruction::id() back into op, stage, micro-batch and bucket (chunk
// and peer are not part of the key and come back as -1).
Instruction decodeInstructionId(std::uint64_t id);

}  // namespace parascope
