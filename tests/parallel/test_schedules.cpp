// Pipeline schedules: every schedule validated across p, m, v; exact instruction lists for small
// cases checked by hand; refused sizes; simulated bubbles against the papers' formulas.
#include <QtTest>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/parallel/program_builder.h"
#include "core/parallel/schedule.h"
#include "core/parallel/schedule_diagram.h"
#include "core/parallel/schedule_simulator.h"
#include "core/parallel/schedule_validator.h"

using namespace parascope;

namespace {

std::vector<std::string> listing(const Program& program) {
  std::vector<std::string> out;
  for (const Instruction& in : program) {
    out.push_back(in.toString());
  }
  return out;
}

// Whether the schedule's documented size rule accepts (p, m, v).
bool accepts(const ScheduleInfo& s, int p, int m, int v) {
  if (s.name == "interleaved") {
    return v >= 2 && m % p == 0;
  }
  return v == 1;
}

QString describe(const ScheduleInfo& s, const PipelineShape& shape) {
  return QString("%1 p=%2 m=%3 v=%4")
      .arg(QString::fromUtf8(s.name.data(), static_cast<int>(s.name.size())))
      .arg(shape.stages)
      .arg(shape.microBatches)
      .arg(shape.chunks);
}

std::string refusal(const ScheduleInfo& s, PipelineShape shape) {
  try {
    buildSchedule(s, shape);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

class TestSchedules : public QObject {
  Q_OBJECT
 private slots:
  void tableNamesEverySchedule();
  void everyScheduleValidatesAcrossSizes();
  void everyStepProgramValidates();
  void oneFOneBTwoStagesThreeMicroBatches();
  void gpipeTwoStagesTwoMicroBatches();
  void interleavedTwoStagesTwoChunks();
  void zeroBubbleTwoStagesTwoMicroBatches();
  void invalidSizesAreRefusedNamingThem();
  void instructionIdsAreStableAndDecode();
  void idealBubbleFormulas();
  void simulatedBubbleMatchesFormulaForGpipeAnd1f1b();
  void simulatedBubbleMatchesFormulaForInterleaved();
  void simulatedBubbleMatchesFormulaForZeroBubble();
  void simulationTimesExactly();
  void simulationTimesTheStepProgram();
  void diagramsMatchTheDocs();
};

void TestSchedules::tableNamesEverySchedule() {
  std::vector<std::string> names;
  for (const ScheduleInfo* s : scheduleTable()) {
    names.emplace_back(s->name);
  }
  QCOMPARE(names, (std::vector<std::string>{"gpipe", "1f1b", "interleaved", "zb-h1"}));
  QCOMPARE(&findSchedule("zb-h1"), &zeroBubbleH1Schedule());
  try {
    findSchedule("pipedream");
    QFAIL("an unknown schedule name was accepted");
  } catch (const UserError& e) {
    QCOMPARE(std::string(e.what()),
             std::string("unknown pipeline schedule 'pipedream'; known: gpipe, 1f1b, "
                         "interleaved, zb-h1"));
  }
}

// The validator finds nothing wrong with any schedule for p in 1..8, m in 1..32, v in 1..4;
// every size the rule refuses is refused; peaks reach the promise exactly (so the promise is
// tight, not just an upper bound); ids are unique within each rank.
void TestSchedules::everyScheduleValidatesAcrossSizes() {
  int validated = 0;
  for (const ScheduleInfo* s : scheduleTable()) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 32; ++m) {
        for (int v = 1; v <= 4; ++v) {
          const PipelineShape shape{p, m, v};
          if (!accepts(*s, p, m, v)) {
            QVERIFY2(refusal(*s, shape) != "(accepted)", qPrintable(describe(*s, shape)));
            continue;
          }
          const ValidationReport report = validateSchedule(*s, shape);
          QVERIFY2(report.ok(), qPrintable(describe(*s, shape) + "\n" +
                                           QString::fromStdString(report.summary())));
          const std::vector<Program> programs = buildSchedule(*s, shape);
          for (int r = 0; r < p; ++r) {
            const ActivationBound promise = s->promisedPeak(shape, r);
            QCOMPARE(report.peakInFlight[static_cast<std::size_t>(r)], promise.inFlight);
            QCOMPARE(report.peakHeld[static_cast<std::size_t>(r)], promise.held);
            std::set<std::uint64_t> ids;
            for (const Instruction& in : programs[static_cast<std::size_t>(r)]) {
              ids.insert(in.id());
            }
            QCOMPARE(ids.size(), programs[static_cast<std::size_t>(r)].size());
          }
          ++validated;
        }
      }
    }
  }
  // gpipe, 1f1b, zb-h1: 8 * 32 each; interleaved: v in 2..4 times the (p, m) with p | m.
  int multiples = 0;
  for (int p = 1; p <= 8; ++p) {
    multiples += 32 / p;
  }
  QCOMPARE(validated, 3 * 8 * 32 + 3 * multiples);
}

// Every schedule's programs with the data-parallel work of every ZeRO stage placed in them pass
// the validator with that work: p up to 8, accumulation up to 8, v up to 2, three buckets spread
// over the chunks (the first one over all of them, as a tied embedding's bucket is). Data and
// tensor parallelism leave a rank's program as it is (each replica and tensor rank runs the same).
void TestSchedules::everyStepProgramValidates() {
  int validated = 0;
  for (const ScheduleInfo* s : scheduleTable()) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 8; ++m) {
        for (int v = 1; v <= 2; ++v) {
          if (!accepts(*s, p, m, v)) continue;
          const PipelineShape shape{p, m, v};
          const std::vector<Program> programs = buildSchedule(*s, shape);
          for (int zero = 0; zero <= 3; ++zero) {
            DataParallelWork work;
            work.reduce = zero >= 2 ? Op::ZeroScatter : Op::ReduceGradBucket;
            work.bucketChunks = {{}, {}, {}};
            for (int c = 0; c < v; ++c) {
              work.bucketChunks[0].push_back(c);
              work.bucketChunks[static_cast<std::size_t>(1 + c % 2)].push_back(c);
              if (zero == 3) work.forwardGroup.push_back(1 + c % 2);
            }
            // As the trainer: per micro-batch only where one chunk runs whole backwards.
            work.eachMicroBatch = zero >= 2 && p == 1 && v == 1 && s->name != "zb-h1";
            std::vector<Program> placed;
            for (const Program& program : programs)
              placed.push_back(addDataParallelWork(program, work));
            const ValidationReport report =
                validatePrograms(shape, placed, {}, std::vector<DataParallelWork>(p, work));
            QVERIFY2(report.ok(),
                     qPrintable(describe(*s, shape) + " zero " + QString::number(zero) + "\n" +
                                QString::fromStdString(report.summary())));
            ++validated;
          }
        }
      }
    }
  }
  QVERIFY(validated > 4 * 3 * 8 * 8);
}

void TestSchedules::oneFOneBTwoStagesThreeMicroBatches() {
  // Rank 0 warms up with p - 0 - 1 = 1 forward, then alternates, then drains one backward.
  const std::vector<Program> programs = buildSchedule(oneFOneBSchedule(), {2, 3, 1});
  QCOMPARE(listing(programs[0]),
           (std::vector<std::string>{"F s0 c0 mb0", "SendAct s0 mb0 ->1",   //
                                     "F s0 c0 mb1", "SendAct s0 mb1 ->1",   //
                                     "RecvGrad s0 mb0 <-1", "B s0 c0 mb0",  //
                                     "F s0 c0 mb2", "SendAct s0 mb2 ->1",   //
                                     "RecvGrad s0 mb1 <-1", "B s0 c0 mb1",  //
                                     "RecvGrad s0 mb2 <-1", "B s0 c0 mb2", "OptStep"}));
  // The last rank has no warm-up: forward and backward alternate from the start.
  QCOMPARE(listing(programs[1]),
           (std::vector<std::string>{
               "RecvAct s1 mb0 <-0", "F s1 c0 mb0", "B s1 c0 mb0", "SendGrad s1 mb0 ->0",  //
               "RecvAct s1 mb1 <-0", "F s1 c0 mb1", "B s1 c0 mb1", "SendGrad s1 mb1 ->0",  //
               "RecvAct s1 mb2 <-0", "F s1 c0 mb2", "B s1 c0 mb2", "SendGrad s1 mb2 ->0",  //
               "OptStep"}));
}

void TestSchedules::gpipeTwoStagesTwoMicroBatches() {
  const std::vector<Program> programs = buildSchedule(gpipeSchedule(), {2, 2, 1});
  QCOMPARE(listing(programs[0]),
           (std::vector<std::string>{"F s0 c0 mb0", "SendAct s0 mb0 ->1", "F s0 c0 mb1",
                                     "SendAct s0 mb1 ->1", "RecvGrad s0 mb0 <-1", "B s0 c0 mb0",
                                     "RecvGrad s0 mb1 <-1", "B s0 c0 mb1", "OptStep"}));
  QCOMPARE(listing(programs[1]),
           (std::vector<std::string>{"RecvAct s1 mb0 <-0", "F s1 c0 mb0", "RecvAct s1 mb1 <-0",
                                     "F s1 c0 mb1", "B s1 c0 mb0", "SendGrad s1 mb0 ->0",
                                     "B s1 c0 mb1", "SendGrad s1 mb1 ->0", "OptStep"}));
}

void TestSchedules::interleavedTwoStagesTwoChunks() {
  // Stages 0 and 2 on rank 0, 1 and 3 on rank 1. Rank 0 warms up with 2(2-0-1) + (2-1)2 = 4
  // forwards, i.e. all of them; rank 1 with 2 (chunk 0 for both micro-batches).
  const std::vector<Program> programs = buildSchedule(interleavedSchedule(), {2, 2, 2});
  QCOMPARE(listing(programs[0]), (std::vector<std::string>{"F s0 c0 mb0",
                                                           "SendAct s0 mb0 ->1",
                                                           "F s0 c0 mb1",
                                                           "SendAct s0 mb1 ->1",
                                                           "RecvAct s2 mb0 <-1",
                                                           "F s2 c1 mb0",
                                                           "SendAct s2 mb0 ->1",  //
                                                           "RecvAct s2 mb1 <-1",
                                                           "F s2 c1 mb1",
                                                           "SendAct s2 mb1 ->1",  //
                                                           "RecvGrad s2 mb0 <-1",
                                                           "B s2 c1 mb0",
                                                           "SendGrad s2 mb0 ->1",  //
                                                           "RecvGrad s2 mb1 <-1",
                                                           "B s2 c1 mb1",
                                                           "SendGrad s2 mb1 ->1",  //
                                                           "RecvGrad s0 mb0 <-1",
                                                           "B s0 c0 mb0",
                                                           "RecvGrad s0 mb1 <-1",
                                                           "B s0 c0 mb1",
                                                           "OptStep"}));
  QCOMPARE(listing(programs[1]),
           (std::vector<std::string>{
               "RecvAct s1 mb0 <-0",  "F s1 c0 mb0", "SendAct s1 mb0 ->0",  //
               "RecvAct s1 mb1 <-0",  "F s1 c0 mb1", "SendAct s1 mb1 ->0",  //
               "RecvAct s3 mb0 <-0",  "F s3 c1 mb0", "B s3 c1 mb0",         "SendGrad s3 mb0 ->0",
               "RecvAct s3 mb1 <-0",  "F s3 c1 mb1", "B s3 c1 mb1",         "SendGrad s3 mb1 ->0",
               "RecvGrad s1 mb0 <-0", "B s1 c0 mb0", "SendGrad s1 mb0 ->0",  //
               "RecvGrad s1 mb1 <-0", "B s1 c0 mb1", "SendGrad s1 mb1 ->0", "OptStep"}));
}

void TestSchedules::zeroBubbleTwoStagesTwoMicroBatches() {
  // Rank 0 runs each W right after its B; rank 1 runs each W one micro-batch late.
  const std::vector<Program> programs = buildSchedule(zeroBubbleH1Schedule(), {2, 2, 1});
  QCOMPARE(listing(programs[0]),
           (std::vector<std::string>{"F s0 c0 mb0", "SendAct s0 mb0 ->1", "F s0 c0 mb1",
                                     "SendAct s0 mb1 ->1", "RecvGrad s0 mb0 <-1", "Bi s0 c0 mb0",
                                     "W s0 c0 mb0", "RecvGrad s0 mb1 <-1", "Bi s0 c0 mb1",
                                     "W s0 c0 mb1", "OptStep"}));
  QCOMPARE(listing(programs[1]),
           (std::vector<std::string>{"RecvAct s1 mb0 <-0", "F s1 c0 mb0", "Bi s1 c0 mb0",
                                     "SendGrad s1 mb0 ->0", "RecvAct s1 mb1 <-0", "F s1 c0 mb1",
                                     "Bi s1 c0 mb1", "SendGrad s1 mb1 ->0", "W s1 c0 mb0",
                                     "W s1 c0 mb1", "OptStep"}));
}

void TestSchedules::invalidSizesAreRefusedNamingThem() {
  QCOMPARE(refusal(interleavedSchedule(), {4, 6, 2}),
           std::string("schedule interleaved needs micro-batches m to be a multiple of pipeline "
                       "stages p, got m=6 and p=4"));
  QCOMPARE(refusal(interleavedSchedule(), {4, 8, 1}),
           std::string("schedule interleaved needs at least 2 model chunks per rank, got v=1; "
                       "with one chunk use '1f1b'"));
  QCOMPARE(refusal(gpipeSchedule(), {2, 4, 3}),
           std::string("schedule gpipe places one model chunk per rank, got v=3; virtual chunks "
                       "need 'interleaved'"));
  QCOMPARE(refusal(zeroBubbleH1Schedule(), {2, 4, 2}),
           std::string("schedule zb-h1 places one model chunk per rank, got v=2; virtual chunks "
                       "need 'interleaved'"));
  QCOMPARE(refusal(oneFOneBSchedule(), {0, 4, 1}),
           std::string("schedule 1f1b: pipeline stages p=0 must be at least 1"));
  QCOMPARE(refusal(oneFOneBSchedule(), {2, 0, 1}),
           std::string("schedule 1f1b: micro-batches m=0 must be between 1 and 65536"));
  QCOMPARE(refusal(oneFOneBSchedule(), {2, 4, 0}),
           std::string("schedule 1f1b: virtual chunks v=0 must be at least 1"));
  QCOMPARE(refusal(interleavedSchedule(), {1024, 1024, 8}),
           std::string("schedule interleaved: p=1024 times v=8 virtual stages exceed the limit "
                       "of 4096"));
}

void TestSchedules::instructionIdsAreStableAndDecode() {
  const Instruction f = forwardOp(5, 1, 17);
  QCOMPARE(f.toString(), std::string("F s5 c1 mb17"));
  const Instruction decoded = decodeInstructionId(f.id());
  QCOMPARE(decoded.op, Op::Forward);
  QCOMPARE(int(decoded.stage), 5);
  QCOMPARE(decoded.microBatch, 17);
  QCOMPARE(decoded.bucket, -1);
  // The id is the content: the same instruction built twice has the same id; it is independent
  // of where in a program the instruction sits and of its peer (fixed by the stage).
  QCOMPARE(forwardOp(5, 1, 17).id(), f.id());
  QVERIFY(backwardOp(5, 1, 17).id() != f.id());
  QVERIFY(forwardOp(5, 1, 18).id() != f.id());
  const Instruction reduce = reduceOp(Op::ReduceGradBucket, 3);
  QCOMPARE(reduce.toString(), std::string("ReduceBucket b3"));
  QCOMPARE(decodeInstructionId(reduce.id()).bucket, 3);
  QCOMPARE(decodeInstructionId(reduce.id()).op, Op::ReduceGradBucket);
  QCOMPARE(optimizerStepOp().toString(), std::string("OptStep"));
  QCOMPARE(decodeInstructionId(optimizerStepOp().id()), optimizerStepOp());
}

void TestSchedules::idealBubbleFormulas() {
  const StepDurations unit;
  QCOMPARE(gpipeSchedule().idealBubble({4, 8, 1}, unit), 3.0 / 11.0);
  QCOMPARE(oneFOneBSchedule().idealBubble({4, 8, 1}, unit), 3.0 / 11.0);
  QCOMPARE(oneFOneBSchedule().idealBubble({1, 8, 1}, unit), 0.0);
  QCOMPARE(interleavedSchedule().idealBubble({4, 8, 2}, unit), 3.0 / 19.0);
  QCOMPARE(zeroBubbleH1Schedule().idealBubble({4, 8, 1}, unit), 3.0 / 27.0);
  StepDurations uneven;
  uneven.forward = 2;
  uneven.backwardInput = 3;
  uneven.backwardWeight = 1;  // bubble 3 * (2 + 3 - 1) = 12 over 8 * 6 = 48 of work
  QCOMPARE(zeroBubbleH1Schedule().idealBubble({4, 8, 1}, uneven), 12.0 / 60.0);
}

void TestSchedules::simulatedBubbleMatchesFormulaForGpipeAnd1f1b() {
  StepDurations slowBackward;
  slowBackward.backward = 3;
  for (const StepDurations& d : {StepDurations{}, slowBackward}) {
    for (const ScheduleInfo* s : {&gpipeSchedule(), &oneFOneBSchedule()}) {
      for (int p = 1; p <= 8; ++p) {
        for (int m = 1; m <= 32; ++m) {
          const PipelineShape shape{p, m, 1};
          const SimulationResult run = simulatePrograms(buildSchedule(*s, shape), d);
          QVERIFY(!run.deadlocked());
          QCOMPARE(run.makespan, (m + p - 1) * (d.forward + d.backward));
          for (int r = 0; r < p; ++r) {
            QCOMPARE(run.ranks[static_cast<std::size_t>(r)].busy, m * (d.forward + d.backward));
            QVERIFY(qAbs(run.idleFraction(r) - s->idealBubble(shape, d)) < 1e-12);
          }
        }
      }
    }
  }
}

void TestSchedules::simulatedBubbleMatchesFormulaForInterleaved() {
  // Per-chunk forward 1, backward 1, 2 or 3: every rank idles (p - 1)(tF + tB) out of
  // (v m + p - 1)(tF + tB), the bubble of 1F1B divided by v (Narayanan et al. 2021).
  for (const double backward : {1.0, 2.0, 3.0}) {
    StepDurations d;
    d.backward = backward;
    for (int v = 2; v <= 4; ++v) {
      for (int p = 1; p <= 8; ++p) {
        for (int m = p; m <= 32; m += p) {
          const PipelineShape shape{p, m, v};
          const SimulationResult run =
              simulatePrograms(buildSchedule(interleavedSchedule(), shape), d);
          QCOMPARE(run.makespan, (1 + backward) * (v * m + p - 1));
          const double ideal = interleavedSchedule().idealBubble(shape, d);
          for (int r = 0; r < p; ++r) {
            QVERIFY(qAbs(run.idleFraction(r) - ideal) < 1e-12);
          }
        }
      }
    }
  }
}

void TestSchedules::simulatedBubbleMatchesFormulaForZeroBubble() {
  // F = B = W = 1: the paper's (p - 1)(tF + tB - tW) bubble holds once m >= p. With fewer
  // micro-batches the pipeline never fills, and the critical path of micro-batch 0 alone
  // (p forwards, p input gradients, one W) is already longer than 3m + p - 1.
  StepDurations d;
  d.backwardInput = 1;
  d.backwardWeight = 1;
  StepDurations lightWeight = d;
  lightWeight.forward = 2;
  lightWeight.backwardInput = 2;  // tW = 1 <= min(tF, tB): the formula still holds
  for (const StepDurations& durations : {d, lightWeight}) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = p; m <= 32; ++m) {
        const PipelineShape shape{p, m, 1};
        const SimulationResult run =
            simulatePrograms(buildSchedule(zeroBubbleH1Schedule(), shape), durations);
        const double ideal = zeroBubbleH1Schedule().idealBubble(shape, durations);
        for (int r = 0; r < p; ++r) {
          QVERIFY(qAbs(run.idleFraction(r) - ideal) < 1e-12);
        }
      }
    }
  }
  QCOMPARE(simulatePrograms(buildSchedule(zeroBubbleH1Schedule(), {4, 8, 1}), d).makespan, 27.0);
  QCOMPARE(simulatePrograms(buildSchedule(oneFOneBSchedule(), {4, 8, 1}), d).makespan, 33.0);
  for (int p = 2; p <= 8; ++p) {
    const SimulationResult one =
        simulatePrograms(buildSchedule(zeroBubbleH1Schedule(), {p, 1, 1}), d);
    QCOMPARE(one.makespan, 2.0 * p + 1);
  }
}

void TestSchedules::simulationTimesExactly() {
  // 1F1B, p = 2, m = 1, forward 1, backward 2, a transfer takes 0.5.
  StepDurations d;
  d.transfer = 0.5;
  const SimulationResult run = simulatePrograms(buildSchedule(oneFOneBSchedule(), {2, 1, 1}), d);
  // rank 1: RecvAct [0, 1.5), F [1.5, 2.5), B [2.5, 4.5), SendGrad at 4.5.
  const std::vector<InstructionTiming>& r1 = run.ranks[1].timings;
  QCOMPARE(r1[0].start, 0.0);
  QCOMPARE(r1[0].end, 1.5);
  QCOMPARE(r1[1].start, 1.5);
  QCOMPARE(r1[2].end, 4.5);
  // rank 0: F [0, 1), SendAct at 1, RecvGrad waits [1, 5), B [5, 7).
  const std::vector<InstructionTiming>& r0 = run.ranks[0].timings;
  QCOMPARE(r0[2].start, 1.0);
  QCOMPARE(r0[2].end, 5.0);
  QCOMPARE(r0[3].end, 7.0);
  QCOMPARE(run.makespan, 7.0);
  QCOMPARE(run.ranks[0].busy, 3.0);
  QCOMPARE(run.idle(0), 4.0);
  QCOMPARE(run.ranks[1].finish, 4.5);
  QCOMPARE(run.idle(1), 4.0);
}

// The simulator runs the executor's programs, data-parallel work included: 1F1B, p = 2, m = 1,
// with each rank's two buckets reduced after its backward (0.25 each) and an optimizer step (1).
void TestSchedules::simulationTimesTheStepProgram() {
  StepDurations d;
  d.transfer = 0.5;
  d.dataParallel = 0.25;
  d.optimizerStep = 1;
  DataParallelWork work;
  work.bucketChunks = {{0}, {0}};
  std::vector<Program> programs;
  for (const Program& p : buildSchedule(oneFOneBSchedule(), {2, 1, 1}))
    programs.push_back(addDataParallelWork(p, work));
  const SimulationResult run = simulatePrograms(programs, d);
  // rank 1: RecvAct [0, 1.5), F [1.5, 2.5), B [2.5, 4.5), SendGrad, reductions [4.5, 5),
  // OptStep [5, 6).
  QCOMPARE(programs[1][4].toString(), std::string("ReduceBucket b0"));
  QCOMPARE(run.ranks[1].timings[5].end, 5.0);
  QCOMPARE(run.ranks[1].finish, 6.0);
  // rank 0: F [0, 1), RecvGrad waits [1, 5), B [5, 7), reductions [7, 7.5), OptStep [7.5, 8.5).
  QCOMPARE(run.ranks[0].timings[4].start, 7.0);
  QCOMPARE(run.makespan, 8.5);
  QCOMPARE(run.ranks[0].busy, 4.5);
}

void TestSchedules::diagramsMatchTheDocs() {
  // By hand: rank 1 runs F0 [1,2) B0 [2,4); rank 0 gets the gradient at 4, B0 [4,6), F2 [6,7);
  // rank 1 F1 [4,5) B1 [5,7) F2 [7,8) B2 [8,10); rank 0 B1 [7,9), B2 [10,12).
  const PipelineShape shape{2, 3, 1};
  const std::vector<Program> programs = buildSchedule(oneFOneBSchedule(), shape);
  QCOMPARE(renderTimeline(shape, programs, simulatePrograms(programs)),
           std::string("rank 0 |01..aa2bb.cc|\n"
                       "rank 1 |.0aa1bb2cc..|\n"));
  // Every diagram in docs/schedules.md is what the simulator draws today.
  std::ifstream file(std::string(PARASCOPE_SOURCE_DIR) + "/docs/schedules.md");
  QVERIFY(file.good());
  std::stringstream doc;
  doc << file.rdbuf();
  struct Case {
    const char* schedule;
    PipelineShape shape;
  };
  for (const Case& c : {Case{"gpipe", {3, 4, 1}}, Case{"1f1b", {3, 4, 1}},
                        Case{"interleaved", {2, 4, 2}}, Case{"zb-h1", {3, 4, 1}}}) {
    const std::vector<Program> p = buildSchedule(findSchedule(c.schedule), c.shape);
    const std::string drawn = renderTimeline(c.shape, p, simulatePrograms(p));
    QVERIFY2(doc.str().find(drawn) != std::string::npos, drawn.c_str());
  }
}

QTEST_GUILESS_MAIN(TestSchedules)
#include "test_schedules.moc"
