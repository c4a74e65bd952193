// The schedule validator on hand-written programs: a correct one passes; each kind of mistake
// (missing receive, deadlocking order, backward before forward, duplicate, excess activations,
// crossed messages, misplaced stages, unfinished zero-bubble halves) is reported with the rank,
// the instruction index and what is wrong.
#include <QtTest>

#include <algorithm>
#include <string>
#include <vector>

#include "core/parallel/program_builder.h"
#include "core/parallel/schedule.h"
#include "core/parallel/schedule_validator.h"

using namespace parascope;

namespace {

Instruction recvAct(int stage, int mb, int peer) {
  return transferOp(Op::RecvActivation, stage, 0, mb, peer);
}
Instruction sendAct(int stage, int mb, int peer) {
  return transferOp(Op::SendActivation, stage, 0, mb, peer);
}
Instruction recvGrad(int stage, int mb, int peer) {
  return transferOp(Op::RecvGrad, stage, 0, mb, peer);
}
Instruction sendGrad(int stage, int mb, int peer) {
  return transferOp(Op::SendGrad, stage, 0, mb, peer);
}

// Two stages, one micro-batch, written out by hand.
std::vector<Program> twoStages() {
  return {{forwardOp(0, 0, 0), sendAct(0, 0, 1), recvGrad(0, 0, 1), backwardOp(0, 0, 0),
           optimizerStepOp()},
          {recvAct(1, 0, 0), forwardOp(1, 0, 0), backwardOp(1, 0, 0), sendGrad(1, 0, 0),
           optimizerStepOp()}};
}

bool has(const ValidationReport& report, const std::string& problem) {
  return std::find(report.problems.begin(), report.problems.end(), problem) !=
         report.problems.end();
}

#define EXPECT_PROBLEMS(report, ...)                                                      \
  do {                                                                                    \
    const std::vector<std::string> expected = {__VA_ARGS__};                              \
    QVERIFY2((report).problems == expected, ((report).summary() + "(reported)").c_str()); \
  } while (0)

}  // namespace

class TestScheduleValidator : public QObject {
  Q_OBJECT
 private slots:
  void handWrittenProgramPasses();
  void missingReceive();
  void swappedOrderDeadlocks();
  void backwardBeforeForward();
  void duplicateForward();
  void excessInFlightActivations();
  void crossedMessages();
  void misplacedStagesAndPeers();
  void localHandOffNeedsOrder();
  void zeroBubbleHalves();
  void optimizerStepMustBeLastAndOnce();
  void dataParallelInstructions();
  void builderPlacesDataParallelWork();
  void missingBucketReduction();
  void reductionPerMicroBatch();
  void gatherAfterItsUse();
  void wrongProgramCountAndCap();
};

void TestScheduleValidator::handWrittenProgramPasses() {
  const ValidationReport report = validatePrograms({2, 1, 1}, twoStages(), {{2, 2}, {1, 1}});
  QVERIFY2(report.ok(), report.summary().c_str());
  QCOMPARE(report.peakInFlight, (std::vector<int>{1, 1}));
  QCOMPARE(report.peakHeld, (std::vector<int>{1, 1}));
}

void TestScheduleValidator::missingReceive() {
  std::vector<Program> programs = twoStages();
  programs[1].erase(programs[1].begin());  // rank 1 forgets to receive its input
  EXPECT_PROBLEMS(validatePrograms({2, 1, 1}, programs),
                  "rank 1 instruction 0 (F s1 c0 mb0): runs before its input arrives (no "
                  "earlier RecvAct s1 mb0)",
                  "rank 0 instruction 1 (SendAct s0 mb0 ->1): rank 1 never receives it (it has "
                  "0 receives for the 1 activation messages)");
}

void TestScheduleValidator::swappedOrderDeadlocks() {
  // Rank 0 waits for the gradient before sending the activation that produces it.
  std::vector<Program> programs = twoStages();
  std::swap(programs[0][1], programs[0][2]);
  EXPECT_PROBLEMS(validatePrograms({2, 1, 1}, programs),
                  "deadlock: receives wait forever: rank 0 waits at instruction 1 (RecvGrad s0 "
                  "mb0 <-1); rank 1 waits at instruction 0 (RecvAct s1 mb0 <-0)");
}

void TestScheduleValidator::backwardBeforeForward() {
  const std::vector<Program> programs = {
      {backwardOp(0, 0, 0), forwardOp(0, 0, 0), optimizerStepOp()}};
  EXPECT_PROBLEMS(validatePrograms({1, 1, 1}, programs),
                  "rank 0 instruction 0 (B s0 c0 mb0): backward before its forward F s0 mb0");
}

void TestScheduleValidator::duplicateForward() {
  const std::vector<Program> programs = {
      {forwardOp(0, 0, 0), forwardOp(0, 0, 0), backwardOp(0, 0, 0), optimizerStepOp()}};
  EXPECT_PROBLEMS(validatePrograms({1, 1, 1}, programs),
                  "rank 0 instruction 1 (F s0 c0 mb0): repeats the work of instruction 0 (F s0 "
                  "c0 mb0)");
}

void TestScheduleValidator::excessInFlightActivations() {
  // GPipe's rank 0 next to 1F1B's rank 1 runs fine, but holds 4 activations where 1F1B
  // promises min(p - 0, m) = 2.
  const PipelineShape shape{2, 4, 1};
  std::vector<Program> programs = buildSchedule(oneFOneBSchedule(), shape);
  programs[0] = buildSchedule(gpipeSchedule(), shape)[0];
  const std::vector<ActivationBound> promise = {oneFOneBSchedule().promisedPeak(shape, 0),
                                                oneFOneBSchedule().promisedPeak(shape, 1)};
  const ValidationReport report = validatePrograms(shape, programs, promise);
  EXPECT_PROBLEMS(report,
                  "rank 0 instruction 6 (F s0 c0 mb3): 4 forwards wait for their backward, more "
                  "than the promised 2",
                  "rank 0 instruction 6 (F s0 c0 mb3): 4 forwards wait for their weight "
                  "gradient, more than the promised 2");
  QCOMPARE(report.peakInFlight, (std::vector<int>{4, 1}));
  QVERIFY(validatePrograms(shape, programs).ok());  // without a promise the programs are fine
}

void TestScheduleValidator::crossedMessages() {
  // Rank 1 receives micro-batch 1 first, but the channel delivers micro-batch 0 first.
  const PipelineShape shape{2, 2, 1};
  std::vector<Program> programs = buildSchedule(gpipeSchedule(), shape);
  programs[1] = {recvAct(1, 1, 0),    forwardOp(1, 0, 1),  recvAct(1, 0, 0),
                 forwardOp(1, 0, 0),  backwardOp(1, 0, 0), sendGrad(1, 0, 0),
                 backwardOp(1, 0, 1), sendGrad(1, 1, 0),   optimizerStepOp()};
  EXPECT_PROBLEMS(validatePrograms(shape, programs),
                  "rank 1 instruction 0 (RecvAct s1 mb1 <-0) takes the 1st activation message "
                  "from rank 0, which is rank 0 instruction 1 (SendAct s0 mb0 ->1)",
                  "rank 1 instruction 2 (RecvAct s1 mb0 <-0) takes the 2nd activation message "
                  "from rank 0, which is rank 0 instruction 3 (SendAct s0 mb1 ->1)");
}

void TestScheduleValidator::misplacedStagesAndPeers() {
  std::vector<Program> programs = twoStages();
  programs[0][0] = forwardOp(1, 0, 0);  // stage 1 lives on rank 1
  programs[0][1] = sendAct(0, 0, 0);    // a send to itself
  programs[1][1] = forwardOp(1, 1, 0);  // wrong chunk
  programs[1][3] = sendGrad(1, 5, 0);   // micro-batch out of range
  const ValidationReport report = validatePrograms({2, 1, 1}, programs);
  QVERIFY(has(report, "rank 0 instruction 0 (F s1 c0 mb0): stage 1 belongs to rank 1"));
  QVERIFY(has(report,
              "rank 0 instruction 1 (SendAct s0 mb0 ->0): peer must be another of "
              "ranks 0..1"));
  QVERIFY(has(report, "rank 1 instruction 1 (F s1 c1 mb0): stage 1 is chunk 0 of its rank"));
  QVERIFY(has(report, "rank 1 instruction 3 (SendGrad s1 mb5 ->0): micro-batch outside 0..0"));
  QVERIFY(has(report, "rank 0: F s0 mb0 never runs"));

  std::vector<Program> wrongPeer = buildSchedule(oneFOneBSchedule(), {3, 1, 1});
  wrongPeer[0][1] = sendAct(0, 0, 2);  // stage 1 is on rank 1
  QVERIFY(has(validatePrograms({3, 1, 1}, wrongPeer),
              "rank 0 instruction 1 (SendAct s0 mb0 ->2): stage 1 is on rank 1, not rank 2"));
  std::vector<Program> lastSends = twoStages();
  lastSends[1].insert(lastSends[1].begin() + 2, sendAct(1, 0, 0));
  QVERIFY(has(validatePrograms({2, 1, 1}, lastSends),
              "rank 1 instruction 2 (SendAct s1 mb0 ->0): there is no stage 2 on the other "
              "side"));
}

void TestScheduleValidator::localHandOffNeedsOrder() {
  // One rank, two chunks: stage 1 follows stage 0 on the same rank, without transfers.
  const PipelineShape shape{1, 1, 2};
  const std::vector<Program> good = {{forwardOp(0, 0, 0), forwardOp(1, 1, 0), backwardOp(1, 1, 0),
                                      backwardOp(0, 0, 0), optimizerStepOp()}};
  QVERIFY2(validatePrograms(shape, good).ok(), validatePrograms(shape, good).summary().c_str());
  const std::vector<Program> bad = {{forwardOp(1, 1, 0), forwardOp(0, 0, 0), backwardOp(0, 0, 0),
                                     backwardOp(1, 1, 0), optimizerStepOp()}};
  EXPECT_PROBLEMS(validatePrograms(shape, bad),
                  "rank 0 instruction 0 (F s1 c1 mb0): runs before F s0 mb0, its input on this "
                  "rank",
                  "rank 0 instruction 2 (B s0 c0 mb0): runs before the backward of s1 mb0, its "
                  "output gradient on this rank");
  const std::vector<Program> transfer = {{forwardOp(0, 0, 0), sendAct(0, 0, 0)}};
  QVERIFY(has(validatePrograms(shape, transfer),
              "rank 0 instruction 1 (SendAct s0 mb0 ->0): peer must be another of ranks 0..0"));
}

void TestScheduleValidator::zeroBubbleHalves() {
  const std::vector<Program> wBeforeB = {
      {forwardOp(0, 0, 0), backwardWeightOp(0, 0, 0), backwardInputOp(0, 0, 0), optimizerStepOp()}};
  EXPECT_PROBLEMS(validatePrograms({1, 1, 1}, wBeforeB),
                  "rank 0 instruction 1 (W s0 c0 mb0): runs before its input-gradient half Bi "
                  "s0 mb0");
  const std::vector<Program> noW = {
      {forwardOp(0, 0, 0), backwardInputOp(0, 0, 0), optimizerStepOp()}};
  EXPECT_PROBLEMS(validatePrograms({1, 1, 1}, noW),
                  "rank 0: W s0 mb0 never runs (its Bi is instruction 1)");
  const std::vector<Program> twice = {
      {forwardOp(0, 0, 0), backwardOp(0, 0, 0), backwardWeightOp(0, 0, 0), optimizerStepOp()}};
  EXPECT_PROBLEMS(validatePrograms({1, 1, 1}, twice),
                  "rank 0 instruction 2 (W s0 c0 mb0): repeats the work of instruction 1 (B s0 "
                  "c0 mb0)");
}

void TestScheduleValidator::optimizerStepMustBeLastAndOnce() {
  const std::vector<Program> early = {
      {forwardOp(0, 0, 0), optimizerStepOp(), backwardOp(0, 0, 0), optimizerStepOp()}};
  EXPECT_PROBLEMS(validatePrograms({1, 1, 1}, early),
                  "rank 0 instruction 2 (B s0 c0 mb0): comes after the optimizer step "
                  "(instruction 1), which must be last",
                  "rank 0 instruction 3 (OptStep): comes after the optimizer step (instruction "
                  "1), which must be last");
  const std::vector<Program> none = {{forwardOp(0, 0, 0), backwardOp(0, 0, 0)}};
  EXPECT_PROBLEMS(validatePrograms({1, 1, 1}, none), "rank 0: no optimizer step");
}

void TestScheduleValidator::dataParallelInstructions() {
  const std::vector<Program> good = {{gatherOp(0, 0, 0, 0), forwardOp(0, 0, 0), backwardOp(0, 0, 0),
                                      reduceOp(Op::ReduceGradBucket, 0),
                                      reduceOp(Op::ReduceGradBucket, 1), optimizerStepOp()}};
  QVERIFY(validatePrograms({1, 1, 1}, good).ok());
  const std::vector<Program> bad = {
      {forwardOp(0, 0, 0), backwardOp(0, 0, 0), reduceOp(Op::ReduceGradBucket, 1),
       reduceOp(Op::ReduceGradBucket, 1), reduceOp(Op::ZeroScatter, -1), optimizerStepOp()}};
  EXPECT_PROBLEMS(validatePrograms({1, 1, 1}, bad),
                  "rank 0 instruction 3 (ReduceBucket b1): repeats instruction 2",
                  "rank 0 instruction 4 (ZeroScatter): needs a bucket index of 0 or more");
}

namespace {

// One rank, two micro-batches: F0 B0 F1 B1 OptStep.
Program twoMicroBatches() {
  return {forwardOp(0, 0, 0), backwardOp(0, 0, 0), forwardOp(0, 0, 1), backwardOp(0, 0, 1),
          optimizerStepOp()};
}

std::vector<std::string> strings(const Program& program) {
  std::vector<std::string> out;
  for (const Instruction& in : program) out.push_back(in.toString());
  return out;
}

}  // namespace

// Two buckets written by the one chunk: both reduced once, after the last backward.
void TestScheduleValidator::builderPlacesDataParallelWork() {
  DataParallelWork work;
  work.bucketChunks = {{0}, {0}};
  const Program program = addDataParallelWork(twoMicroBatches(), work);
  QCOMPARE(strings(program),
           (std::vector<std::string>{"F s0 c0 mb0", "B s0 c0 mb0", "F s0 c0 mb1", "B s0 c0 mb1",
                                     "ReduceBucket b0", "ReduceBucket b1", "OptStep"}));
  QVERIFY(validatePrograms({1, 2, 1}, {program}, {}, {work}).ok());
  // Two stages: the last stage's reductions come after its SendGrad, not between B and it.
  DataParallelWork last;
  last.bucketChunks = {{0}};
  const Program second = addDataParallelWork(twoStages()[1], last);
  QCOMPARE(strings(second),
           (std::vector<std::string>{"RecvAct s1 mb0 <-0", "F s1 c0 mb0", "B s1 c0 mb0",
                                     "SendGrad s1 mb0 ->0", "ReduceBucket b0", "OptStep"}));
}

void TestScheduleValidator::missingBucketReduction() {
  DataParallelWork work;
  work.bucketChunks = {{0}, {0}};
  Program program = addDataParallelWork(twoMicroBatches(), work);
  program.erase(program.begin() + 5);  // ReduceBucket b1
  EXPECT_PROBLEMS(validatePrograms({1, 2, 1}, {program}, {}, {work}),
                  "rank 0: bucket b1 is not reduced after instruction 1 (B s0 c0 mb0), which "
                  "writes it");
  // Reduced too early: the second micro-batch writes bucket b0 after its reduction.
  const Program early = {forwardOp(0, 0, 0), backwardOp(0, 0, 0), reduceOp(Op::ReduceGradBucket, 0),
                         forwardOp(0, 0, 1), backwardOp(0, 0, 1), reduceOp(Op::ReduceGradBucket, 1),
                         optimizerStepOp()};
  EXPECT_PROBLEMS(validatePrograms({1, 2, 1}, {early}, {}, {work}),
                  "rank 0: bucket b0 is not reduced after instruction 4 (B s0 c0 mb1), which "
                  "writes it");
  // The wrong collective, and a bucket the rank does not have.
  DataParallelWork zero2 = work;
  zero2.reduce = Op::ZeroScatter;
  Program wrong = addDataParallelWork(twoMicroBatches(), work);
  wrong.insert(wrong.end() - 1, reduceOp(Op::ZeroScatter, 2));
  EXPECT_PROBLEMS(
      validatePrograms({1, 2, 1}, {wrong}, {}, {zero2}),
      "rank 0 instruction 4 (ReduceBucket b0): this strategy reduces gradients with ZeroScatter",
      "rank 0 instruction 5 (ReduceBucket b1): this strategy reduces gradients with ZeroScatter",
      "rank 0 instruction 6 (ZeroScatter b2): bucket b2 does not exist (the rank has 2 buckets)",
      "rank 0: bucket b0 is not reduced after instruction 1 (B s0 c0 mb0), which writes it",
      "rank 0: bucket b1 is not reduced after instruction 1 (B s0 c0 mb0), which writes it");
}

// ZeRO-2 without a pipeline: every bucket after every micro-batch's backward.
void TestScheduleValidator::reductionPerMicroBatch() {
  DataParallelWork work;
  work.reduce = Op::ZeroScatter;
  work.bucketChunks = {{0}, {0}};
  work.eachMicroBatch = true;
  Program program = addDataParallelWork(twoMicroBatches(), work);
  QCOMPARE(strings(program),
           (std::vector<std::string>{"F s0 c0 mb0", "B s0 c0 mb0", "ZeroScatter mb0 b0",
                                     "ZeroScatter mb0 b1", "F s0 c0 mb1", "B s0 c0 mb1",
                                     "ZeroScatter mb1 b0", "ZeroScatter mb1 b1", "OptStep"}));
  QVERIFY(validatePrograms({1, 2, 1}, {program}, {}, {work}).ok());
  program.erase(program.begin() + 2, program.begin() + 4);
  EXPECT_PROBLEMS(validatePrograms({1, 2, 1}, {program}, {}, {work}),
                  "rank 0 instruction 3 (B s0 c0 mb1): writes bucket b0 again before the "
                  "gradients of instruction 1 are reduced",
                  "rank 0 instruction 3 (B s0 c0 mb1): writes bucket b1 again before the "
                  "gradients of instruction 1 are reduced");
  // Zero-bubble halves cannot be reduced per micro-batch.
  const Program halves = {forwardOp(0, 0, 0), backwardInputOp(0, 0, 0), backwardWeightOp(0, 0, 0),
                          optimizerStepOp()};
  QVERIFY_THROWS_EXCEPTION(std::logic_error, addDataParallelWork(halves, work));
}

// ZeRO-3: each forward's first group is gathered before it (and before its receive).
void TestScheduleValidator::gatherAfterItsUse() {
  DataParallelWork work;
  work.reduce = Op::ZeroScatter;
  work.bucketChunks = {{0}, {0}, {0}};
  work.forwardGroup = {2};
  const Program second = addDataParallelWork(twoStages()[1], work);
  QCOMPARE(strings(second),
           (std::vector<std::string>{"ZeroGather s1 mb0 b2", "RecvAct s1 mb0 <-0", "F s1 c0 mb0",
                                     "B s1 c0 mb0", "SendGrad s1 mb0 ->0", "ZeroScatter b0",
                                     "ZeroScatter b1", "ZeroScatter b2", "OptStep"}));
  Program late = addDataParallelWork(twoMicroBatches(), work);
  QCOMPARE(late[0].toString(), std::string("ZeroGather s0 mb0 b2"));
  std::swap(late[0], late[1]);
  EXPECT_PROBLEMS(validatePrograms({1, 2, 1}, {late}, {}, {work}),
                  "rank 0 instruction 0 (F s0 c0 mb0): runs before its parameters are gathered "
                  "(no earlier ZeroGather s0 mb0 b2)",
                  "rank 0 instruction 1 (ZeroGather s0 mb0 b2): comes after instruction 0 (F s0 "
                  "c0 mb0), which needs it");
  // Gathers where the strategy keeps whole parameters.
  DataParallelWork whole = work;
  whole.forwardGroup.clear();
  QVERIFY(
      has(validatePrograms({1, 2, 1}, {addDataParallelWork(twoMicroBatches(), work)}, {}, {whole}),
          "rank 0 instruction 0 (ZeroGather s0 mb0 b2): this strategy keeps whole parameters "
          "and gathers none"));
}

void TestScheduleValidator::wrongProgramCountAndCap() {
  EXPECT_PROBLEMS(validatePrograms({2, 1, 1}, {Program{optimizerStepOp()}}),
                  "expected 2 programs (one per pipeline rank), got 1");
  EXPECT_PROBLEMS(validatePrograms({2, 0, 1}, std::vector<Program>(2)),
                  "shape: micro-batches m=0 must be between 1 and 65536");
  // Eight empty programs for 32 micro-batches miss 8 * 32 * 2 + 8 instructions; the report
  // keeps the first 64 and counts the rest.
  const ValidationReport report = validatePrograms({8, 32, 1}, std::vector<Program>(8));
  QCOMPARE(report.problems.size(), std::size_t{65});
  QCOMPARE(report.problems.front(), std::string("rank 0: F s0 mb0 never runs"));
  QCOMPARE(report.problems.back(), std::string("... and 456 more problems"));
}

QTEST_GUILESS_MAIN(TestScheduleValidator)
#include "test_schedule_validator.moc"
