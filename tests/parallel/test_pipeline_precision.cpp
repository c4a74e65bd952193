// Mixed precision in pipeline programs: bf16 and fp16 stages (with data parallelism, ZeRO-1,
// tensor parallelism and every schedule) train like one fp32 rank within the mixed-precision
// tolerance, store only values of the 16-bit type, and report the unscaled gradient norm.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>

#include "core/comm/launch.h"
#include "core/tensor/dtype.h"
#include "pipeline_harness.h"

using namespace parascope;

class TestPipelinePrecision : public QObject {
  Q_OBJECT
 private slots:
  void matchesFp32OneRank_data();
  void matchesFp32OneRank();
  void cleanupTestCase() { pptest::removeFixtures(); }
};

namespace {

bool representable(const std::vector<float>& v, DType t) {
  for (float x : v) {
    float r = x;
    roundTrip({&r, 1}, t);
    if (std::bit_cast<std::uint32_t>(r) != std::bit_cast<std::uint32_t>(x)) return false;
  }
  return true;
}

}  // namespace

void TestPipelinePrecision::matchesFp32OneRank_data() {
  QTest::addColumn<QString>("precision");
  QTest::addColumn<QStringList>("overrides");
  const QString p2 = "pipeline_model_parallel_size=2", m4 = "gradient_accumulation_steps=4";
  for (const char* p : {"bf16", "fp16"}) {
    const QString on = QString(p) + ".enabled=true";
    QTest::addRow("%s p2 1f1b", p) << p << QStringList{on, p2, m4};
    QTest::addRow("%s p2 d2", p) << p
                                 << QStringList{on, p2, "data_parallel_size=2",
                                                "gradient_accumulation_steps=2"};
    QTest::addRow("%s p2 zb-h1", p) << p << QStringList{on, p2, m4, "pipeline_schedule=zb-h1"};
  }
  QTest::newRow("bf16 p2 interleaved")
      << "bf16"
      << QStringList{"bf16.enabled=true", p2, m4, "pipeline_schedule=interleaved",
                     "virtual_pipeline_model_parallel_size=2"};
  QTest::newRow("bf16 p2 d2 zero1")
      << "bf16"
      << QStringList{"bf16.enabled=true", p2, "data_parallel_size=2",
                     "gradient_accumulation_steps=2", "zero_optimization.stage=1"};
  // ZeRO-2 and 3: 16-bit gradients accumulated in full-size buckets, reduce-scattered once;
  // 16-bit parameter shards gathered around every pass.
  QTest::newRow("bf16 p2 d2 zero2")
      << "bf16"
      << QStringList{"bf16.enabled=true", p2, m4, "data_parallel_size=2",
                     "zero_optimization.stage=2"};
  QTest::newRow("fp16 p2 d2 zb-h1 zero3")
      << "fp16"
      << QStringList{
             "fp16.enabled=true",        p2, m4, "data_parallel_size=2", "pipeline_schedule=zb-h1",
             "zero_optimization.stage=3"};
  QTest::newRow("bf16 p2 d2 interleaved zero3")
      << "bf16"
      << QStringList{"bf16.enabled=true",
                     p2,
                     m4,
                     "data_parallel_size=2",
                     "pipeline_schedule=interleaved",
                     "virtual_pipeline_model_parallel_size=2",
                     "zero_optimization.stage=3"};
  QTest::newRow("fp16 t2 p2 full recompute")
      << "fp16"
      << QStringList{"fp16.enabled=true", p2, m4, "tensor_model_parallel_size=2",
                     "recompute_granularity=full"};
}

void TestPipelinePrecision::matchesFp32OneRank() {
  QFETCH(QString, precision);
  QFETCH(QStringList, overrides);
  const DType low = precision == "bf16" ? DType::BF16 : DType::F16;
  // Each step's loss and the gradients this rank holds, then its parameters, against one fp32
  // rank within dptest::compareLowPrecision's tolerances (the 16-bit rounding of values, 2^-9
  // or 2^-12 of each, dwarfs fp32's summation-order and BLAS-kernel differences of ~1e-7, so
  // they hold on any CPU; parameters: atol 1e-2 = 4 steps x 2 lr / eps x the gradient
  // tolerance, as the data-parallel mixed-precision test argues).
  std::vector<std::string> o = {"optimizer.params.lr=1e-3"};
  for (const QString& s : overrides) o.push_back(s.toStdString());
  const int steps = 4;
  const pptest::RunRecord want =
      pptest::train(pptest::tinyConfig({"optimizer.params.lr=1e-3"}), steps);
  const TrainConfig config = pptest::tinyConfig(o);
  std::vector<pptest::RunRecord> got(static_cast<std::size_t>(config.parallel.worldSize()));
  runInProcess(config.parallel.worldSize(), [&](Communicator& world) {
    Allocator allocator;
    got[static_cast<std::size_t>(world.rank())] = pptest::train(config, steps, world, &allocator);
  });
  for (const pptest::RunRecord& r : got) {
    const std::string diff = dptest::compareLowPrecision(want, r, 1e-2, dptest::Held::Some);
    QVERIFY2(diff.empty(), diff.c_str());
    for (const auto& [name, v] : r.parameters) QVERIFY2(representable(v, low), name.c_str());
    for (std::size_t i = 0; i < r.reports.size(); ++i) {
      const StepReport& s = r.reports[i];
      QVERIFY(!s.skipped);
      QCOMPARE(s.lossScale, low == DType::F16 ? 65536.0 : 1.0);
      const double fp32 = want.reports[i].gradNorm;  // unscaled: the same norm as fp32
      QVERIFY2(std::fabs(s.gradNorm - fp32) <= 1.6e-2 * fp32,
               qPrintable(QString("step %1: %2 vs %3").arg(i).arg(s.gradNorm).arg(fp32)));
    }
  }
  // Really 16-bit: not the fp32 run's values, and it trains.
  QVERIFY(!pptest::compare(want, got[0]).empty());
  QVERIFY(got[0].losses.back() < got[0].losses.front());
}

QTEST_GUILESS_MAIN(TestPipelinePrecision)
#include "test_pipeline_precision.moc"
