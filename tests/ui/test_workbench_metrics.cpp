// The workbench's run metrics are core/session/run_metrics.h's, exactly: the Compare table's MFU
// has no value until a peak is known and is then the definition's; a window whose machine has a
// cached peak charts every step's MFU against it; a cached peak below what a rank achieved is
// stale and raised to it, in the window and in the cache. The cache is a temporary
// XDG_CACHE_HOME, never the user's.
#include <QAbstractItemModelTester>
#include <QChart>
#include <QChartView>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QXYSeries>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/config/config.h"
#include "core/kernels/sgemm_peak.h"
#include "core/session/run_metrics.h"
#include "core/session/run_summary.h"
#include "ui/views/segment_model.h"
#include "ui/workbench/live_charts.h"
#include "ui/workbench/workbench_window.h"

using parascope::kernels::SgemmPeakCache;
using parascope::ui::LiveCharts;
using parascope::ui::SegmentModel;
using parascope::ui::WorkbenchWindow;

// QCOMPARE on doubles is fuzzy: these must be exact.
#define EXACT(actual, expected) \
  QVERIFY2((actual) == (expected), qPrintable(QString::number(actual, 'g', 17)))

namespace {

constexpr int kRanks = 2;

// A GPT small enough that a step takes milliseconds, on two data-parallel ranks.
nlohmann::json tinyDocument() {
  return nlohmann::json::parse(R"({
    "model": {"type": "gpt", "vocab_size": 256, "context_length": 16, "hidden_size": 32,
              "num_attention_heads": 4, "num_layers": 2, "mlp_ratio": 2},
    "data": {"type": "text", "path": "/usr/share/games/fortunes", "validation_fraction": 0.1},
    "train_micro_batch_size_per_gpu": 2, "train_iters": 6, "eval_interval": 0,
    "data_parallel_size": 2, "seed": 7,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.002}}
  })");
}

// Runs the tiny session in `window` to its end.
void runToTheEnd(WorkbenchWindow& window) {
  window.setDocument(tinyDocument());
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QSignalSpy ended(&window, &WorkbenchWindow::sessionEnded);
  window.start();
  QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 120000);
  QCOMPARE(ended.at(0).at(0).toBool(), false);
  QCOMPARE(window.stepsSeen(), 6);
  QCOMPARE(window.worldSize(), kRanks);
}

// A cache holding exactly `peak` for this machine.
SgemmPeakCache cacheWith(double peak) {
  const SgemmPeakCache cache = SgemmPeakCache::thisMachine();
  std::filesystem::remove(cache.path);
  cache.raise(peak);
  return cache;
}

}  // namespace

class TestWorkbenchMetrics : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void compareMfuIsTheDefinition();
  void aFinishedRowTakesNoLiveSteps();
  void aGpuRowIsAgainstItsOwnPeak();
  void chartsMfuAgainstTheCachedPeak();
  void stalePeakIsRaised();
  void aBatchOfStepsIsOneChangePerSeries();

 private:
  QTemporaryDir cacheHome_;
};

void TestWorkbenchMetrics::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("ParaScopeTests"));
  QCoreApplication::setApplicationName(QStringLiteral("test_ui_workbench_metrics"));
  QVERIFY(cacheHome_.isValid());
  qputenv("XDG_CACHE_HOME", cacheHome_.path().toUtf8());
  QCOMPARE(QString::fromStdString(parascope::kernels::sgemmPeakCachePath()),
           cacheHome_.path() + QStringLiteral("/parascope/sgemm_peak.json"));
}

void TestWorkbenchMetrics::compareMfuIsTheDefinition() {
  SegmentModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.begin("D2", kRanks, 3e6);
  parascope::StepReport r;
  r.step = 1;
  r.tokens = 1000;
  r.seconds = 0.5;
  r.exposedCommSeconds = 0.125;
  for (int rank = 0; rank < kRanks; ++rank) model.addRankStep(r);
  model.addStep(r);
  // No peak yet: no MFU, and nothing shown rather than a wrong number.
  QVERIFY(std::isnan(model.value(0, SegmentModel::Mfu)));
  QCOMPARE(model.index(0, SegmentModel::Mfu).data().toString(), QString());
  QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
  model.setPeakFlops(1.5e9);
  QCOMPARE(changed.count(), 1);
  EXACT(model.value(0, SegmentModel::TokensPerSecond), parascope::tokensPerSecond(1000, 0.5));
  EXACT(model.value(0, SegmentModel::Mfu),
        parascope::modelFlopsUtilization(2000, 3e6, 1.5e9, kRanks));
  EXACT(model.value(0, SegmentModel::Mfu), 2.0);  // 6 GFLOP/s on 2 x 1.5 GFLOP/s
  QCOMPARE(model.index(0, SegmentModel::Mfu).data().toString(), QStringLiteral("200.0%"));
  EXACT(model.value(0, SegmentModel::ExposedComm), parascope::exposedCommFraction(0.125, 0.5));
  EXACT(model.value(0, SegmentModel::Bubble), 0.0);
}

// A recorded run's row (a trace opened while a session runs) comes after the session's own: the
// session's later steps still go to its row, and the trace's row keeps what it was given.
void TestWorkbenchMetrics::aFinishedRowTakesNoLiveSteps() {
  SegmentModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  parascope::StepReport r;
  r.step = 1;
  r.tokens = 1000;
  r.seconds = 0.5;
  model.addStep(r);  // before any session: no row to take it
  QCOMPARE(model.rowCount(), 0);
  model.begin("D2", kRanks, 3e6);
  model.addStep(r);
  parascope::StepReport traced = r;
  traced.seconds = 0.25;
  model.addFinished("Trace a.json: D1", 1, 3e6, {}, {traced, traced});
  r.step = 2;
  model.addStep(r);
  QCOMPARE(model.rowCount(), 2);
  EXACT(model.value(0, SegmentModel::Steps), 2.0);
  EXACT(model.value(0, SegmentModel::TokensPerSecond), parascope::tokensPerSecond(2000, 1.0));
  EXACT(model.value(1, SegmentModel::Steps), 2.0);
  EXACT(model.value(1, SegmentModel::TokensPerSecond), parascope::tokensPerSecond(2000, 0.5));
  QVERIFY(std::isnan(model.value(1, SegmentModel::PeakMemory)));  // no rank reports given
}

// A GPU run's row (StartReport::devicePeakFlops) is measured against its GPU's peak from the
// start; the CPU's peak, known later, goes to the CPU run's row only.
void TestWorkbenchMetrics::aGpuRowIsAgainstItsOwnPeak() {
  SegmentModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  parascope::StepReport r;
  r.step = 1;
  r.tokens = 1000;
  r.seconds = 0.5;
  model.begin("1 rank", 1, 3e6, 4e9);
  model.addStep(r);
  EXACT(model.value(0, SegmentModel::Mfu), parascope::modelFlopsUtilization(2000, 3e6, 4e9, 1));
  EXACT(model.value(0, SegmentModel::Mfu), 1.5);  // 6 GFLOP/s on 4 GFLOP/s
  model.begin("D2", kRanks, 3e6);
  model.addStep(r);
  QVERIFY(std::isnan(model.value(1, SegmentModel::Mfu)));
  model.setPeakFlops(1.5e9);
  EXACT(model.value(0, SegmentModel::Mfu), 1.5);
  EXACT(model.value(1, SegmentModel::Mfu), 2.0);
}

// Each step's MFU point is 100 x the definition of that step's tokens/s point, against the
// cached peak; the Compare row's is the definition of its own tokens/s.
void TestWorkbenchMetrics::chartsMfuAgainstTheCachedPeak() {
  constexpr double kPeak = 1e15;  // far above any step: nothing raises it
  const SgemmPeakCache cache = cacheWith(kPeak);
  WorkbenchWindow window;
  runToTheEnd(window);
  const double flopsPerToken =
      parascope::modelFlopsPerToken(parascope::parseTrainConfig(tinyDocument()));
  QVERIFY(flopsPerToken > 0);
  const QList<QPointF> rates = window.charts()->points(LiveCharts::TokensPerSecond);
  const QList<QPointF> mfu = window.charts()->points(LiveCharts::Mfu);
  QCOMPARE(rates.size(), 6);
  QCOMPARE(mfu.size(), rates.size());
  for (int i = 0; i < rates.size(); ++i) {
    QCOMPARE(mfu[i].x(), rates[i].x());
    EXACT(mfu[i].y(),
          100.0 * parascope::modelFlopsUtilization(rates[i].y(), flopsPerToken, kPeak, kRanks));
  }
  const SegmentModel* segments = window.segmentModel();
  QCOMPARE(segments->rowCount(), 1);
  EXACT(segments->value(0, SegmentModel::Mfu),
        parascope::modelFlopsUtilization(segments->value(0, SegmentModel::TokensPerSecond),
                                         flopsPerToken, kPeak, kRanks));
  QVERIFY(cache.read() == kPeak);
}

// A cached peak of 1 kFLOP/s is below every step's rate: the first step raises it to what a rank
// achieved (MFU 100%), each faster step raises it again, and the cache ends at the fastest step's.
void TestWorkbenchMetrics::stalePeakIsRaised() {
  const SgemmPeakCache cache = cacheWith(1e3);
  WorkbenchWindow window;
  runToTheEnd(window);
  const double flopsPerToken =
      parascope::modelFlopsPerToken(parascope::parseTrainConfig(tinyDocument()));
  const QList<QPointF> rates = window.charts()->points(LiveCharts::TokensPerSecond);
  const QList<QPointF> mfu = window.charts()->points(LiveCharts::Mfu);
  QCOMPARE(mfu.size(), rates.size());
  double fastest = 0;
  for (const QPointF& p : rates) {
    fastest = std::max(fastest, parascope::modelFlopsPerSecond(p.y(), flopsPerToken) / kRanks);
  }
  QVERIFY(cache.read() == fastest);
  EXACT(mfu[0].y(), 100.0);
  for (const QPointF& p : mfu) QVERIFY2(p.y() <= 100 + 1e-9, qPrintable(QString::number(p.y())));
  EXACT(window.segmentModel()->value(0, SegmentModel::Mfu),
        parascope::modelFlopsUtilization(
            window.segmentModel()->value(0, SegmentModel::TokensPerSecond), flopsPerToken, fastest,
            kRanks));
}

// Steps reported between two refreshes reach each series as one change: Qt 6.4's list append
// signals, and re-lays out the whole line, once per point, which made a fast run's GUI fall half
// a minute behind its steps (and held the steps, and a stop, with it).
void TestWorkbenchMetrics::aBatchOfStepsIsOneChangePerSeries() {
  LiveCharts charts;
  QXYSeries* loss = nullptr;
  for (QAbstractSeries* s : charts.view(LiveCharts::Loss)->chart()->series()) {
    if (auto* xy = qobject_cast<QXYSeries*>(s); xy && !loss) loss = xy;
  }
  QVERIFY(loss != nullptr);
  for (int step = 1; step <= 300; ++step) charts.addStep(step, 3.0, 1e4, 0.1, 0.0, 1.0);
  charts.refresh();  // the first batch
  QSignalSpy added(loss, &QXYSeries::pointAdded);
  QSignalSpy replaced(loss, &QXYSeries::pointsReplaced);
  for (int step = 301; step <= 800; ++step) charts.addStep(step, 2.0, 1e4, 0.1, 0.0, 1.0);
  charts.refresh();
  QCOMPARE(added.count(), 0);
  QCOMPARE(replaced.count(), 1);
  QCOMPARE(loss->count(), 800);
  QCOMPARE(loss->at(799), QPointF(800, 2.0));
  QCOMPARE(charts.points(LiveCharts::Loss).size(), 800);
}

QTEST_MAIN(TestWorkbenchMetrics)
#include "test_workbench_metrics.moc"
