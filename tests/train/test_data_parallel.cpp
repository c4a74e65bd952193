// Data parallelism over in-process ranks: strategy and batch keys refused with their names,
// the mesh's rank order, equivalence with one rank per step (fp32 losses and gradients; DP 2 and
// 4, accumulation 1 and 4, two bucket sizes, overlap on and off, ZeRO 0 to 3), ZeRO's per-rank
// model-state bytes,
// and a rank failing mid-step ending the run on every rank with its reason.
#include <QtTest>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <filesystem>

#include "core/comm/launch.h"
#include "core/common/error.h"
#include "core/session/rank_hooks.h"
#include "dp_harness.h"

using namespace parascope;
using dptest::tinyConfig;

class TestDataParallel : public QObject {
  Q_OBJECT
 private slots:
  void cleanupTestCase();
  void refusesInvalidStrategies_data();
  void refusesInvalidStrategies();
  void derivesBatchWithDataParallelSize();
  void meshOrdersTensorDataPipeline();
  void matchesOneRank_data();
  void matchesOneRank();
  void zeroShardsModelState_data();
  void zeroShardsModelState();
  void overlapStartsBucketsDuringBackward_data();
  void overlapStartsBucketsDuringBackward();
  void lowPrecisionGradientCommunication_data();
  void lowPrecisionGradientCommunication();
  void failingRankEndsRun();
};

namespace {

std::string userErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

// One record per rank of an in-process world.
std::vector<dptest::RunRecord> trainRanks(const TrainConfig& c, int steps) {
  std::vector<dptest::RunRecord> records(static_cast<std::size_t>(c.parallel.worldSize()));
  runInProcess(c.parallel.worldSize(), [&](Communicator& world) {
    Allocator allocator;
    records[static_cast<std::size_t>(world.rank())] = dptest::train(c, steps, world, &allocator);
  });
  return records;
}

}  // namespace

void TestDataParallel::cleanupTestCase() {
  std::filesystem::remove(dptest::textFixture());
}

void TestDataParallel::refusesInvalidStrategies_data() {
  QTest::addColumn<QStringList>("overrides");
  QTest::addColumn<int>("world");
  QTest::addColumn<QString>("message");
  QTest::newRow("degrees vs world")
      << QStringList{"data_parallel_size=3"} << 4
      << "config: tensor_model_parallel_size (1) x data_parallel_size (3) x "
         "pipeline_model_parallel_size (1) = 3 must equal the world of 4 ranks; valid: "
         "data_parallel_size = 4 or unset";
  QTest::newRow("model degrees vs world")
      << QStringList{"pipeline_model_parallel_size=3"} << 4
      << "config: tensor_model_parallel_size (1) x pipeline_model_parallel_size (3) must divide "
         "the world of 4 ranks";
  QTest::newRow("zero stage range")
      << QStringList{"zero_optimization.stage=4"} << 0
      << "config: zero_optimization.stage = 4 is out of range; allowed 0..3";
  QTest::newRow("batch not divisible")
      << QStringList{"data_parallel_size=3"} << 0
      << "config: train_batch_size (16), train_micro_batch_size_per_gpu (unset) and "
         "gradient_accumulation_steps (1) with data-parallel size 3 are inconsistent: "
         "train_batch_size must equal micro-batch x accumulation steps x data-parallel size";
  QTest::newRow("all three inconsistent")
      << QStringList{"data_parallel_size=2", "train_micro_batch_size_per_gpu=4",
                     "gradient_accumulation_steps=4"}
      << 0
      << "config: train_batch_size (16), train_micro_batch_size_per_gpu (4) and "
         "gradient_accumulation_steps (4) with data-parallel size 2 are inconsistent: "
         "train_batch_size must equal micro-batch x accumulation steps x data-parallel size";
  QTest::newRow("two precisions")
      << QStringList{"fp16.enabled=true", "bf16.enabled=true"} << 0
      << "config: fp16.enabled and bf16.enabled are both true; enable at most one";
  QTest::newRow("backend") << QStringList{"backend=nccl"} << 0
                           << "config: backend = \"nccl\" is not supported; allowed: threads, mpi";
}

void TestDataParallel::refusesInvalidStrategies() {
  QFETCH(QStringList, overrides);
  QFETCH(int, world);
  QFETCH(QString, message);
  std::vector<std::string> o;
  for (const QString& s : overrides) o.push_back(s.toStdString());
  QCOMPARE(QString::fromStdString(userErrorOf([&] { tinyConfig(o, world); })), message);
}

void TestDataParallel::derivesBatchWithDataParallelSize() {
  const TrainConfig a = tinyConfig({"data_parallel_size=4", "gradient_accumulation_steps=2"});
  QCOMPARE(a.microBatch, 2);
  QCOMPARE(a.parallel.data, 4);
  const TrainConfig b = tinyConfig({"gradient_accumulation_steps=2"}, 8);  // dp from the world
  QCOMPARE(b.parallel.data, 8);
  QCOMPARE(b.microBatch, 1);
  QCOMPARE(b.parallel.bucketElements, 25 * 1024 * 1024 / 4);
  QVERIFY(b.parallel.overlapComm);
}

void TestDataParallel::meshOrdersTensorDataPipeline() {
  // T=2, D=2, P=2 as coordinates; the mesh is built on an 8-rank world with those degrees.
  ParallelStrategy s;
  s.tensor = 2;
  s.data = 2;
  s.pipeline = 2;
  std::vector<std::array<std::vector<int>, 3>> members(8);
  runInProcess(8, [&](Communicator& world) {
    DeviceMesh mesh(world, s);
    Communicator* axes[3] = {&mesh.tensor(), &mesh.data(), &mesh.pipeline()};
    for (int a = 0; a < 3; ++a) {
      std::vector<int> all(2);
      int me = world.rank();
      axes[a]->allGather(&me, all.data(), 1, DType::I32);
      members[static_cast<std::size_t>(world.rank())][static_cast<std::size_t>(a)] = all;
    }
  });
  for (int r = 0; r < 8; ++r) {
    const MeshCoordinates c = meshCoordinates(r, 2, 2);
    QCOMPARE(r, c.tensor + 2 * (c.data + 2 * c.pipeline));
    const auto& m = members[static_cast<std::size_t>(r)];
    const int t0 = r - c.tensor, d0 = r - 2 * c.data, p0 = r - 4 * c.pipeline;
    QCOMPARE(m[0], (std::vector<int>{t0, t0 + 1}));
    QCOMPARE(m[1], (std::vector<int>{d0, d0 + 2}));
    QCOMPARE(m[2], (std::vector<int>{p0, p0 + 4}));
  }
}

void TestDataParallel::matchesOneRank_data() {
  QTest::addColumn<QStringList>("overrides");
  const QString small = "zero_optimization.reduce_bucket_size=3000";
  QTest::newRow("dp2 accum1 25MB") << QStringList{"data_parallel_size=2"};
  QTest::newRow("dp2 accum4 small buckets")
      << QStringList{"data_parallel_size=2", "gradient_accumulation_steps=4", small};
  QTest::newRow("dp4 accum1 small buckets") << QStringList{"data_parallel_size=4", small};
  QTest::newRow("dp4 accum4 25MB")
      << QStringList{"data_parallel_size=4", "gradient_accumulation_steps=4"};
  QTest::newRow("dp2 no overlap") << QStringList{"data_parallel_size=2", small,
                                                 "zero_optimization.overlap_comm=false"};
  QTest::newRow("dp2 zero1 accum4 small buckets") << QStringList{
      "data_parallel_size=2", "gradient_accumulation_steps=4", "zero_optimization.stage=1", small};
  QTest::newRow("dp4 zero1") << QStringList{"data_parallel_size=4", "zero_optimization.stage=1"};
  QTest::newRow("dp1 zero1") << QStringList{"zero_optimization.stage=1"};
  QTest::newRow("dp2 zero2 accum4 small buckets") << QStringList{
      "data_parallel_size=2", "gradient_accumulation_steps=4", "zero_optimization.stage=2", small};
  QTest::newRow("dp4 zero2 25MB") << QStringList{"data_parallel_size=4",
                                                 "zero_optimization.stage=2"};
  QTest::newRow("dp2 zero3 accum4 small buckets") << QStringList{
      "data_parallel_size=2", "gradient_accumulation_steps=4", "zero_optimization.stage=3", small};
  QTest::newRow("dp4 zero3 25MB") << QStringList{"data_parallel_size=4",
                                                 "zero_optimization.stage=3"};
  QTest::newRow("dp4 zero2 accum4 no overlap")
      << QStringList{"data_parallel_size=4", "gradient_accumulation_steps=4",
                     "zero_optimization.stage=2", small, "zero_optimization.overlap_comm=false"};
}

// Each step's loss and every reduced gradient, then the final parameters, of every rank match
// one rank's at rtol 1e-5 / atol 4e-5. Why that holds on any CPU: D ranks, accumulation and
// buckets only change the order of fp32 additions (GEMMs over fewer rows, sums across ranks),
// whatever GEMM kernels run, an error of about 1e-7 of the summands; AdamW with the
// harness's eps cannot amplify it (dp_harness.h). A wrong reduction changes whole gradients.
void TestDataParallel::matchesOneRank() {
  QFETCH(QStringList, overrides);
  std::vector<std::string> o;
  for (const QString& s : overrides) o.push_back(s.toStdString());
  const int steps = 4;
  const dptest::RunRecord want = dptest::train(tinyConfig({}), steps);
  const std::vector<dptest::RunRecord> got = trainRanks(tinyConfig(o), steps);
  for (std::size_t r = 0; r < got.size(); ++r) {
    const std::string diff = dptest::compare(want, got[r]);
    QVERIFY2(diff.empty(), qPrintable(QString("rank %1: %2").arg(r).arg(diff.c_str())));
  }
  QVERIFY(want.losses.back() < want.losses.front());  // it trains
}

void TestDataParallel::zeroShardsModelState_data() {
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("stage");
  QTest::addColumn<int>("bucket");  // reduce_bucket_size
  QTest::newRow("dp2 stage0") << 2 << 0 << 3000;
  QTest::newRow("dp2 stage1") << 2 << 1 << 3000;
  QTest::newRow("dp4 stage1") << 4 << 1 << 3000;
  QTest::newRow("dp2 stage2") << 2 << 2 << 3000;
  QTest::newRow("dp4 stage2") << 4 << 2 << 3000;
  QTest::newRow("dp2 stage3") << 2 << 3 << 3000;
  QTest::newRow("dp4 stage3") << 4 << 3 << 3000;
  // The default bucket holds the whole model; ZeRO-2/3 still cut it at every layer.
  QTest::newRow("dp4 stage2 default bucket") << 4 << 2 << 6553600;
  QTest::newRow("dp4 stage3 default bucket") << 4 << 3 << 6553600;
}

// ZeRO paper, fp32, per rank: parameters 4 P, or 4 P / Nd from stage 3 (plus the gathered
// layers' buckets while they run); gradients 4 P, or 4 P / Nd from stage 2; Adam
// moments 8 P, or 8 P / Nd from stage 1 (16 P in all unsharded). Every bucket is padded to a
// multiple of Nd, so the flat buffers hold up to (Nd - 1) extra elements per bucket. Stage 2's
// full-size gradient buckets exist only while backward writes them and while (at most one at a
// time) they are reduced: with 8 blocks the peak stays below shard + half the unsharded 4 P, as
// stage 3's gathered parameters do (the running layer's and the next one's), whatever the
// bucket size, since from stage 2 on no bucket holds two layers' parameters.
// Peaks count from the trainer's construction: the model is built straight into ZeRO's storage,
// never held whole beside it.
void TestDataParallel::zeroShardsModelState() {
  QFETCH(int, dp);
  QFETCH(int, stage);
  QFETCH(int, bucket);
  const TrainConfig c = tinyConfig(
      {"data_parallel_size=" + std::to_string(dp),
       "zero_optimization.stage=" + std::to_string(stage),
       "zero_optimization.reduce_bucket_size=" + std::to_string(bucket), "model.num_layers=8"});
  const dptest::ModelState m = dptest::measureModelState(c);
  const std::int64_t P = m.parameters;
  const std::int64_t padded = P + m.tensors * (dp - 1);  // at most one bucket per tensor
  auto within = [](std::int64_t got, std::int64_t lo, std::int64_t hi) {
    return got >= lo && got <= hi;
  };
  for (const dptest::StateBytes& b : m.ranks) {
    const QString all = QString("P=%1 param %2 grad %3 optim %4 grad peak %5 param peak %6")
                            .arg(P)
                            .arg(b.param)
                            .arg(b.grad)
                            .arg(b.optim)
                            .arg(b.gradPeak)
                            .arg(b.paramPeak);
    if (stage < 3) {
      QVERIFY2(within(b.param, 4 * P, 4 * padded), qPrintable(all));
      QVERIFY2(b.paramPeak <= 4 * padded, qPrintable(all));
    } else {
      QVERIFY2(within(b.param, 4 * P / dp, 4 * padded / dp), qPrintable(all));
      QVERIFY2(b.paramPeak < 4 * (P / dp + P / 2), qPrintable(all));
    }
    if (stage < 2) {
      QVERIFY2(within(b.grad, 4 * P, 4 * padded), qPrintable(all));
      QVERIFY2(b.gradPeak <= 4 * padded, qPrintable(all));
    } else {
      QVERIFY2(within(b.grad, 4 * P / dp, 4 * padded / dp), qPrintable(all));
      QVERIFY2(b.gradPeak < 4 * (P / dp + P / 2), qPrintable(all));
    }
    if (stage == 0) {
      QVERIFY2(b.optim == 8 * P, qPrintable(all));
    } else {
      QVERIFY2(within(b.optim, 8 * P / dp, 8 * padded / dp), qPrintable(all));
    }
    qInfo("%s", qPrintable(all));
  }
}

void TestDataParallel::overlapStartsBucketsDuringBackward_data() {
  QTest::addColumn<bool>("overlap");
  QTest::newRow("overlap_comm true") << true;
  QTest::newRow("overlap_comm false") << false;
}

// With overlap, buckets of the last blocks are issued before the first block's backward pass
// begins (program order, not timing); without it, only after backward.
void TestDataParallel::overlapStartsBucketsDuringBackward() {
  QFETCH(bool, overlap);
  const TrainConfig c =
      tinyConfig({"data_parallel_size=2", "zero_optimization.reduce_bucket_size=3000",
                  std::string("zero_optimization.overlap_comm=") + (overlap ? "true" : "false")});
  std::vector<std::int64_t> starts;
  std::int64_t firstBlockBegins = 0, backwardEnds = 0;
  runInProcess(2, [&](Communicator& world) {
    dptest::RunOptions run{.world = world};
    if (world.rank() == 0) {
      run.built = [&](Trainer& t) {
        t.mesh().data().setObserver([&](const CommRecord& r) {
          if (r.op == CommOp::AllReduce && r.count > 1) starts.push_back(r.startNs);
        });
        t.model().addBackwardHook([&](std::size_t layer, bool finished) {
          if (layer == 1 && !finished) firstBlockBegins = commNowNs();  // block.0
          if (layer == 0 && finished) backwardEnds = commNowNs();
        });
      };
    }
    dptest::train(c, 1, run);
  });
  QVERIFY(starts.size() > 2);
  const auto early = std::count_if(starts.begin(), starts.end(),
                                   [&](std::int64_t s) { return s < firstBlockBegins; });
  const auto late =
      std::count_if(starts.begin(), starts.end(), [&](std::int64_t s) { return s > backwardEnds; });
  if (overlap) {
    QVERIFY(early >= 1);
    QVERIFY(late < static_cast<long>(starts.size()));
  } else {
    QCOMPARE(early, 0);
    QCOMPARE(late, static_cast<long>(starts.size()));
  }
}

void TestDataParallel::lowPrecisionGradientCommunication_data() {
  QTest::addColumn<QString>("type");
  QTest::addColumn<int>("stage");
  QTest::newRow("bf16 all-reduce") << "bf16" << 0;
  QTest::newRow("fp16 all-reduce") << "fp16" << 0;
  QTest::newRow("bf16 reduce-scatter") << "bf16" << 2;
}

// Gradients travelling in bf16/fp16 (compute stays fp32) stay within the low-precision tolerance
// of one fp32 rank (dptest::compareLowPrecision: each rank's part and the sum are rounded once,
// 2^-9 of the values each, far beyond any CPU's fp32 rounding), and really are rounded: the
// parameters differ from fp32 communication. Parameters: atol 1e-3 = 4 steps x 2 lr / eps
// (0.02 at lr 1e-4) x the gradient tolerance (2^-5 x the largest gradient, about 0.4) is loose.
void TestDataParallel::lowPrecisionGradientCommunication() {
  QFETCH(QString, type);
  QFETCH(int, stage);
  const std::vector<std::string> base = {"data_parallel_size=2", "optimizer.params.lr=1e-4",
                                         "zero_optimization.reduce_bucket_size=3000",
                                         "zero_optimization.stage=" + std::to_string(stage)};
  std::vector<std::string> low = base;
  low.push_back("communication_data_type=" + type.toStdString());
  const int steps = 4;
  const dptest::RunRecord want = dptest::train(tinyConfig({"optimizer.params.lr=1e-4"}), steps);
  const dptest::RunRecord exact = trainRanks(tinyConfig(base), steps)[0];
  const std::vector<dptest::RunRecord> got = trainRanks(tinyConfig(low), steps);
  for (const dptest::RunRecord& r : got) {
    const std::string diff = dptest::compareLowPrecision(want, r, 1e-3);
    QVERIFY2(diff.empty(), diff.c_str());
    QVERIFY(r.parameters == got[0].parameters);  // every rank applied the same update
  }
  QVERIFY(!dptest::compare(exact, got[0]).empty());
  // Rounding changes the update by far less than the update itself (a wrong reduction would
  // not): L1 distance to fp32 communication under 5% of the L1 distance travelled.
  const dptest::RunRecord start = dptest::train(tinyConfig({}), 0);
  double rounding = 0, travelled = 0;
  for (const auto& [name, v] : exact.parameters) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      rounding += std::fabs(got[0].parameters.at(name)[i] - v[i]);
      travelled += std::fabs(v[i] - start.parameters.at(name)[i]);
    }
  }
  QVERIFY2(rounding < 0.05 * travelled,
           qPrintable(QString("%1 vs %2").arg(rounding).arg(travelled)));
  qInfo("L1 change from rounding %.4g, L1 distance travelled %.4g", rounding, travelled);
}

// A rank that throws in the middle of the second step's backward pass, after some of its buckets
// started, ends the session with its reason; nobody finishes that step.
void TestDataParallel::failingRankEndsRun() {
  SessionOptions options;
  RankHooks hooks;
  hooks.built = [](Trainer& t) {
    if (t.mesh().world().rank() != 2) return;
    t.model().addBackwardHook([&t](std::size_t layer, bool finished) {
      if (t.stepsDone() == 1 && layer == 1 && finished) throw std::runtime_error("disk on fire");
    });
  };
  options.rankHooks = std::make_shared<RankHooks>(std::move(hooks));
  Session session(tinyConfig({"data_parallel_size=4", "train_iters=3"}), std::move(options));
  struct Steps : SessionObserver {
    std::array<std::atomic<int>, 4> done{};
    void onRankStep(const StepReport& r) override {
      done[static_cast<std::size_t>(r.rank)] = r.step;
    }
  } steps;
  session.addObserver(steps);
  const FinishedReport finished = session.run();
  QVERIFY(finished.failed);
  const std::optional<ErrorReport> error = session.error();
  QVERIFY(error.has_value());
  QCOMPARE(error->rank, 2);
  QCOMPARE(QString::fromStdString(error->reason), QString("disk on fire"));
  for (const std::atomic<int>& done : steps.done) QCOMPARE(done.load(), 1);
}

QTEST_GUILESS_MAIN(TestDataParallel)
#include "test_data_parallel.moc"
