// The simulator against what it must reproduce: the schedules' bubble formulas with the papers'
// unit durations, the executor's own instruction order in a measured trace, and calibration
// recovering a machine from traces simulated on it. Bad system files are refused naming the key.
#include <QtTest/QtTest>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/comm/launch.h"
#include "core/offload/optimizer_swap.h"
#include "core/plan/calibrate.h"
#include "core/plan/simulator.h"
#include "core/train/param_gatherer.h"
#include "profiler/tracer.h"
#include "tests/input_probes.h"
#include "tests/parallel/pipeline_harness.h"

using namespace parascope;
using parascope::test::userErrorOf;

namespace {

// The unit model of the schedule papers: F 1, B 2 (Bi 1, W 1), nothing else costs time.
class UnitCosts final : public CostModel {
 public:
  UnitCosts(const SystemDescription& s, const StrategyPlan& p, StepDurations d)
      : CostModel(s, p), d_(d) {}
  double computeSeconds(const RankPlan&, const Instruction& in) const override {
    return d_.of(in.op);
  }
  double transferSeconds() const override { return 0; }
  IssuedCollective dataParallel(const RankPlan&, const Instruction&) const override { return {}; }
  double optimizerSeconds(const RankPlan&) const override { return 0; }

 private:
  StepDurations d_;
};

// A machine with every parameter set, for calibration to find again.
SystemDescription syntheticMachine() {
  SystemDescription s;
  s.name = "synthetic";
  s.device.kind = "cpu";
  s.device.cores = 2;
  s.device.memoryBytes = 8e9;
  s.device.matmulF32 = {4e10, 5e10, 24, 0};
  s.device.matmulBF16 = {2.5e10, 3e10, 40, 2e-9};
  s.device.matmulF16 = {2e10, 2.2e10, 16, 5e-9};
  s.device.elementwiseBandwidth = 6e9;
  s.device.optimizerBandwidth = 9e9;
  s.device.instructionOverhead = 3e-4;
  s.devicesPerNode = 2;
  s.links[0] = {{2e-5, 5e9}, {2e-5, 5e9}};
  s.links[1] = {{5e-6, 5e9}, {5e-6, 5e9}};
  s.links[2] = {{2e-5, 1e10}, {2e-5, 1e10}};
  s.stepOverhead = 0.004;
  return s;
}

bool closeTo(double got, double want, double rtol) {
  return std::abs(got - want) <= rtol * std::abs(want);
}

TrainConfig config(const std::vector<std::string>& overrides) {
  return pptest::tinyConfig(overrides);
}

// Per rank, the instructions of one step's spans in time order: (instruction index, op name).
std::map<int, std::vector<std::pair<int, std::string>>> instructionOrder(
    const std::vector<trace::Event>& events, int step) {
  std::vector<const trace::Event*> spans;
  for (const trace::Event& e : events) {
    if (e.kind == trace::EventKind::Span && e.category == trace::Category::Instruction &&
        e.step == step)
      spans.push_back(&e);
  }
  std::stable_sort(spans.begin(), spans.end(), [](const trace::Event* a, const trace::Event* b) {
    return std::tie(a->rank, a->startNs, a->instruction) <
           std::tie(b->rank, b->startNs, b->instruction);
  });
  std::map<int, std::vector<std::pair<int, std::string>>> order;
  for (const trace::Event* e : spans) order[e->rank].emplace_back(e->instruction, e->name);
  return order;
}

}  // namespace

class TestSimulator : public QObject {
  Q_OBJECT

 private slots:
  void idleEqualsTheScheduleFormulas();
  void predictedTraceHasTheMeasuredInstructionsInOrder();
  void sharedCoresSlowEveryBusyThread();
  void onePerPipelineRankIsTheFirstOfEach();
  void calibrationRecoversASyntheticMachine();
  void systemFilesAreReadStrictly();
  void swappingIsPricedOnTheDisk();
  void cleanupTestCase() { pptest::removeFixtures(); }
};

void TestSimulator::idleEqualsTheScheduleFormulas() {
  SystemDescription gpu = syntheticMachine();
  gpu.device.kind = "gpu";
  StepDurations zeroBubble;
  zeroBubble.backwardInput = 1;
  zeroBubble.backwardWeight = 1;
  for (const ScheduleInfo* schedule : scheduleTable()) {
    const int chunks = schedule->name == "interleaved" ? 2 : 1;
    for (int p : {2, 4}) {
      for (int m : {4, 8}) {
        const TrainConfig c =
            config({"model.num_layers=8", "pipeline_model_parallel_size=" + std::to_string(p),
                    "gradient_accumulation_steps=" + std::to_string(m),
                    "pipeline_schedule=" + std::string(schedule->name),
                    "virtual_pipeline_model_parallel_size=" + std::to_string(chunks)});
        const StrategyPlan plan = planStrategy(c);
        const StepDurations d = schedule->name == "zb-h1" ? zeroBubble : StepDurations{};
        const Simulation sim = simulateStep(plan, UnitCosts(gpu, plan, d));
        const double formula = schedule->idealBubble(plan.shape, d);
        for (int r = 0; r < p; ++r) {
          QVERIFY2(
              std::abs(sim.idleFraction(r) - formula) < 1e-12,
              qPrintable(QString("%1 p=%2 m=%3 rank %4: simulated %5, formula %6")
                             .arg(QString::fromUtf8(schedule->name.data(),
                                                    static_cast<qsizetype>(schedule->name.size())))
                             .arg(p)
                             .arg(m)
                             .arg(r)
                             .arg(sim.idleFraction(r))
                             .arg(formula)));
        }
      }
    }
  }
}

void TestSimulator::predictedTraceHasTheMeasuredInstructionsInOrder() {
  const std::vector<std::vector<std::string>> strategies = {
      {"pipeline_model_parallel_size=2", "gradient_accumulation_steps=4",
       "pipeline_schedule=gpipe"},
      {"pipeline_model_parallel_size=2", "gradient_accumulation_steps=4", "pipeline_schedule=1f1b",
       "data_parallel_size=2"},
      {"pipeline_model_parallel_size=2", "gradient_accumulation_steps=4",
       "pipeline_schedule=interleaved", "virtual_pipeline_model_parallel_size=2"},
      {"pipeline_model_parallel_size=2", "gradient_accumulation_steps=4", "pipeline_schedule=zb-h1",
       "data_parallel_size=2", "zero_optimization.stage=3"},
      {"data_parallel_size=2", "zero_optimization.stage=2", "gradient_accumulation_steps=2"},
  };
  for (const std::vector<std::string>& keys : strategies) {
    const TrainConfig c = config(keys);
    const int world = c.parallel.worldSize();
    profiler::Tracer tracer;
    tracer.install();
    runInProcess(world, [&](Communicator& comm) {
      const trace::ScopedContext ctx({.rank = comm.rank()});
      dptest::train(c, 1, comm);
    });
    tracer.uninstall();
    const auto measured = instructionOrder(tracer.collect().events, 1);
    const StrategyPlan plan = planStrategy(c);
    const Simulation sim = simulateStep(plan, CostModel(syntheticMachine(), plan));
    const auto predicted = instructionOrder(predictedEvents(plan, sim), 1);
    QCOMPARE(static_cast<int>(predicted.size()), world);
    for (const auto& [rank, order] : predicted) {
      QVERIFY2(measured.count(rank) == 1, qPrintable(QString("no spans of rank %1").arg(rank)));
      // Instructions that take no time (sends, issued collectives) keep program order; so do the
      // measured ones, whose spans never overlap on a rank.
      QCOMPARE(order, measured.at(rank));
    }
  }
}

void TestSimulator::sharedCoresSlowEveryBusyThread() {
  // Four data-parallel ranks on two cores, communication free: each rank's compute and update
  // run at half speed.
  SystemDescription machine = syntheticMachine();
  machine.stepOverhead = 0;
  for (auto& link : machine.links) link = {{0, 1e30}, {0, 1e30}};
  const StrategyPlan four = planStrategy(config({"data_parallel_size=4"}));
  const CostModel fourCosts(machine, four);
  const Simulation b = simulateStep(four, fourCosts);
  double compute = 0;
  for (const Instruction& in : four.ranks.front().program)
    if (in.isCompute()) compute += fourCosts.computeSeconds(four.ranks.front(), in);
  const double optimizer = fourCosts.optimizerSeconds(four.ranks.front());
  QVERIFY(closeTo(b.stepSeconds, 2 * (compute + optimizer), 1e-9));
  QVERIFY(closeTo(b.ranks.front().busy, 2 * compute, 1e-9));
}

// A plan's timeline for thousands of GPUs keeps one rank per pipeline rank: exactly the events
// the whole trace has for the first data- and tensor-parallel rank of each.
void TestSimulator::onePerPipelineRankIsTheFirstOfEach() {
  const StrategyPlan plan =
      planStrategy(config({"data_parallel_size=2", "tensor_model_parallel_size=2",
                           "pipeline_model_parallel_size=2", "gradient_accumulation_steps=4"}));
  const Simulation sim = simulateStep(plan, CostModel(syntheticMachine(), plan));
  const std::vector<trace::Event> all = predictedEvents(plan, sim, 2);
  const std::vector<trace::Event> few =
      predictedEvents(plan, sim, 2, PredictedRanks::OnePerPipelineRank);
  std::vector<trace::Event> expected;
  for (const trace::Event& e : all)
    if (e.rank % 4 == 0) expected.push_back(e);
  QCOMPARE(few.size(), expected.size());
  std::set<int> ranks;
  for (std::size_t i = 0; i < few.size(); ++i) {
    ranks.insert(few[i].rank);
    QCOMPARE(few[i].rank, expected[i].rank);
    QCOMPARE(std::string(few[i].name), std::string(expected[i].name));
    QCOMPARE(few[i].startNs, expected[i].startNs);
    QCOMPARE(few[i].endNs, expected[i].endNs);
    QCOMPARE(few[i].peer, expected[i].peer);
  }
  QCOMPARE(ranks, (std::set<int>{0, 4}));
}

void TestSimulator::calibrationRecoversASyntheticMachine() {
  const SystemDescription truth = syntheticMachine();
  std::vector<TracedRun> runs;
  for (const std::vector<std::string>& keys : std::vector<std::vector<std::string>>{
           {},
           {"model.hidden_size=64", "train_micro_batch_size_per_gpu=4"},
           {"model.hidden_size=128", "model.num_attention_heads=8"},
           {"pipeline_model_parallel_size=2", "gradient_accumulation_steps=4"},
           {"bf16.enabled=true"},
           {"bf16.enabled=true", "model.hidden_size=64"},
           {"bf16.enabled=true", "train_micro_batch_size_per_gpu=4"},
           {"fp16.enabled=true"},
           {"fp16.enabled=true", "train_micro_batch_size_per_gpu=4"},
           {"fp16.enabled=true", "model.hidden_size=128", "model.num_attention_heads=8"}}) {
    TracedRun run;
    run.plan = planStrategy(config(keys));
    const Simulation sim = simulateStep(run.plan, CostModel(truth, run.plan));
    run.events = predictedEvents(run.plan, sim, 2);
    run.stepSeconds = sim.stepSeconds;
    runs.push_back(std::move(run));
  }
  std::vector<CollectiveTiming> timings;
  const StrategyPlan any = planStrategy(config({}));
  const CostModel truthCosts(truth, any);
  for (CommOp op : {CommOp::AllReduce, CommOp::AllGather, CommOp::ReduceScatter}) {
    for (double bytes : {4096.0, 65536.0, 1048576.0})
      timings.push_back({op, bytes, 2, truthCosts.collectiveSeconds(op, bytes, 2, 1)});
  }
  SystemDescription start = truth;
  start.device.matmulF32 = start.device.matmulBF16 = start.device.matmulF16 = {1, 1, 1, 1};
  start.device.elementwiseBandwidth = start.device.optimizerBandwidth = 1;
  start.device.instructionOverhead = 0;
  start.links[0] = {{1, 1}, {1, 1}};
  start.stepOverhead = 1;
  const CalibrationFit fit = calibrate(start, runs, timings);
  const DeviceDescription& got = fit.system.device;
  const DeviceDescription& want = truth.device;
  // Spans are whole nanoseconds: the recovered values carry that rounding.
  const double rtol = 2e-3;
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    const MatmulRate &g = got.matmul(t), &w = want.matmul(t);
    QVERIFY2(closeTo(g.peakFlops, w.peakFlops, rtol), qPrintable(QString::number(g.peakFlops)));
    QVERIFY(closeTo(g.backwardPeakFlops, w.backwardPeakFlops, rtol));
    QVERIFY(closeTo(g.halfDimension, w.halfDimension, 2e-2));
    QVERIFY(std::abs(g.castSeconds - w.castSeconds) <= 2e-2 * w.castSeconds + 1e-13);
  }
  QVERIFY(closeTo(got.elementwiseBandwidth, want.elementwiseBandwidth, 2e-2));
  QVERIFY(closeTo(got.instructionOverhead, want.instructionOverhead, 2e-2));
  QVERIFY(closeTo(got.optimizerBandwidth, want.optimizerBandwidth, rtol));
  const LinkAlgorithm& ring = fit.system.link(LinkClass::InProcess).ring;
  QVERIFY(closeTo(ring.latency, truth.link(LinkClass::InProcess).ring.latency, 1e-6));
  QVERIFY(closeTo(ring.bandwidth, truth.link(LinkClass::InProcess).ring.bandwidth, 1e-6));
  QVERIFY(closeTo(fit.system.stepOverhead, truth.stepOverhead, 1e-3));
  QVERIFY(fit.computeError < 1e-3);
}

void TestSimulator::systemFilesAreReadStrictly() {
  const nlohmann::json good = systemToJson(syntheticMachine());
  const SystemDescription back = parseSystem(good, "s.json");
  QCOMPARE(back.device.matmulBF16.peakFlops, 2.5e10);
  QCOMPARE(back.link(LinkClass::Network).ring.bandwidth, 1e10);
  QCOMPARE(back.stepOverhead, 0.004);

  nlohmann::json missing = good;
  missing["device"].erase("cores");
  QCOMPARE(userErrorOf([&] { parseSystem(missing, "s.json"); }),
           QString("system s.json: device.cores: is missing"));
  nlohmann::json negative = good;
  negative["links"]["node"]["ring"]["latency_us"] = -1;
  QCOMPARE(userErrorOf([&] { parseSystem(negative, "s.json"); }),
           QString("system s.json: links.node.ring.latency_us: must be a non-negative number, "
                   "not -1"));
  nlohmann::json zero = good;
  zero["device"]["matmul"]["fp16"]["peak_TFLOPs"] = 0;
  QCOMPARE(userErrorOf([&] { parseSystem(zero, "s.json"); }),
           QString("system s.json: device.matmul.fp16.peak_TFLOPs: must be greater than 0, not 0"));
  nlohmann::json unknown = good;
  unknown["device"]["clock_GHz"] = 3;
  QCOMPARE(userErrorOf([&] { parseSystem(unknown, "s.json"); }),
           QString("system s.json: device.clock_GHz: is not a key of a system description"));
  // The disk is optional: absent, a strategy that swaps is refused (swappingIsPricedOnTheDisk).
  QVERIFY(!back.disk.described());
  SystemDescription withDisk = syntheticMachine();
  withDisk.disk = {3e9, 2e9, 4e9};
  nlohmann::json disk = systemToJson(withDisk);
  QCOMPARE(parseSystem(disk, "s.json").disk.swapBandwidth, 4e9);
  disk["disk"]["read_write_GBps"] = 0;
  QCOMPARE(userErrorOf([&] { parseSystem(disk, "s.json"); }),
           QString("system s.json: disk.read_write_GBps: must be greater than 0, not 0"));
  disk["disk"].erase("read_write_GBps");
  QCOMPARE(userErrorOf([&] { parseSystem(disk, "s.json"); }),
           QString("system s.json: disk.read_write_GBps: is missing"));
  nlohmann::json kind = good;
  kind["device"]["kind"] = "tpu";
  QCOMPARE(userErrorOf([&] { parseSystem(kind, "s.json"); }),
           QString("system s.json: device.kind: must be one of \"cpu\", \"gpu\", not \"tpu\""));
}

// ZeRO-Infinity's swap files on the node's disk: the optimizer's sweep reads and writes back the
// rank's swap files while every rank of the node does the same, and takes as long as the slower
// of its arithmetic and the disk; a gather of swapped parameters first reads the rank's parts.
// A system without a disk refuses a strategy that swaps, naming the block.
void TestSimulator::swappingIsPricedOnTheDisk() {
  SystemDescription machine = syntheticMachine();
  const std::vector<std::string> swapOptimizer = {
      "data_parallel_size=2", "zero_optimization.stage=2",
      "zero_optimization.offload_optimizer.device=nvme",
      "zero_optimization.offload_optimizer.nvme_path=/tmp"};
  const StrategyPlan swapped = planStrategy(config(swapOptimizer));
  QCOMPARE(userErrorOf([&] { CostModel(machine, swapped); }),
           QString("system synthetic describes no disk, and this strategy swaps to one "
                   "(zero_optimization.offload_optimizer.device \"nvme\"): add \"disk\": "
                   "{\"read_GBps\", \"write_GBps\", \"read_write_GBps\"} to the system file, or "
                   "calibrate this machine (plan calibrate)"));

  machine.disk = {2e9, 1e9, 1e6};  // a disk far slower than the update's arithmetic
  const RankPlan& rank = swapped.ranks.front();
  const double file = static_cast<double>(
      optimizerSwapLayout(rank.layout.shardSize(), false, swapped.config.parallel).fileBytes());
  const StrategyPlan inMemory =
      planStrategy(config({"data_parallel_size=2", "zero_optimization.stage=2"}));
  const double memoryUpdate = CostModel(machine, inMemory).optimizerSeconds(inMemory.ranks.front());
  const double swappedUpdate = CostModel(machine, swapped).optimizerSeconds(rank);
  // Both ranks on the one disk, each reading and writing back its file.
  const double disk = 2 * (2 * file) / 1e6;
  QVERIFY(disk > memoryUpdate);
  const double update =
      static_cast<double>(rank.flatElements) / 2 * 28 / machine.device.optimizerBandwidth;
  QVERIFY2(
      closeTo(swappedUpdate, memoryUpdate - update + disk, 1e-9),
      qPrintable(QString("%1 against %2").arg(swappedUpdate).arg(memoryUpdate - update + disk)));
  // A fast disk leaves the update as it was in memory.
  machine.disk = {1e15, 1e15, 1e15};
  QVERIFY(closeTo(CostModel(machine, swapped).optimizerSeconds(rank), memoryUpdate, 1e-9));

  // ZeRO-3's parameters swapped: each gather reads its chunk's parts first, at the read rate.
  machine.disk = {2e9, 1e9, 4e9};
  const StrategyPlan three =
      planStrategy(config({"data_parallel_size=2", "zero_optimization.stage=3",
                           "zero_optimization.offload_param.device=nvme",
                           "zero_optimization.offload_param.nvme_path=/tmp"}));
  const StrategyPlan threeInMemory =
      planStrategy(config({"data_parallel_size=2", "zero_optimization.stage=3"}));
  const ParameterSwapLayout parts =
      parameterSwapLayout(three.ranks.front().layout, DType::F32, three.config.parallel);
  int gathers = 0;
  for (const Instruction& in : three.ranks.front().program) {
    if (in.op != Op::ZeroGather) continue;
    double read = 0;
    for (int b : three.ranks.front().chunkBuckets.at(static_cast<std::size_t>(in.chunk)))
      read += static_cast<double>(parts.recordBytes(b));
    const double withRead = CostModel(machine, three).dataParallel(three.ranks.front(), in).seconds;
    const double alone =
        CostModel(machine, threeInMemory).dataParallel(threeInMemory.ranks.front(), in).seconds;
    QVERIFY(closeTo(withRead, alone + 2 * read / 2e9, 1e-12));
    ++gathers;
  }
  QVERIFY(gathers > 0);
}

QTEST_GUILESS_MAIN(TestSimulator)
#include "test_simulator.moc"
