// A strategy's prediction against its measurement in the workbench. The "measured" side of the
// model and timeline tests is the simulation of the same plan on a machine exactly twice as slow
// (every rate halved, every latency and overhead doubled), so every instruction's error is
// -50% and every number is known in advance: the Prediction tab's models (exact rows, the
// worst first, under QAbstractItemModelTester), the timeline's layout (predicted rank N right
// after rank N, by rank and by stage) and its tooltip (both durations and the error). Then the
// real window: a tiny pipeline run ended without a description says how to get one, is
// predicted once one is set, its rows equal comparePrediction on the run's own trace, View >
// Show prediction beside the run loads the predicted ranks beside the measured ones; and a run
// switched live has each segment compared with its own steps.
#include <QAbstractItemModelTester>
#include <QAction>
#include <QComboBox>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>

#include "core/config/config.h"
#include "core/plan/prediction_error.h"
#include "core/plan/simulator.h"
#include "profiler/io/chrome_import.h"
#include "profiler/timeline/timeline_layout.h"
#include "profiler/timeline/timeline_lod.h"
#include "profiler/timeline/timeline_prediction.h"
#include "ui/timeline/timeline_window.h"
#include "ui/views/prediction_model.h"
#include "ui/views/prediction_view.h"
#include "ui/workbench/live_charts.h"
#include "ui/workbench/strategy_panel.h"
#include "ui/workbench/workbench_window.h"

using namespace parascope;
using namespace parascope::ui;

namespace {

// A GPT small enough that a step takes milliseconds: 4 layers of width 32, 4 heads, on two
// pipeline ranks with 4 micro-batches.
nlohmann::json tinyPipeline() {
  return nlohmann::json::parse(R"({
    "model": {"type": "gpt", "vocab_size": 256, "context_length": 16, "hidden_size": 32,
              "num_attention_heads": 4, "num_layers": 4, "mlp_ratio": 2},
    "data": {"type": "text", "path": "/usr/share/games/fortunes", "validation_fraction": 0.1},
    "train_micro_batch_size_per_gpu": 2, "train_iters": 3, "eval_interval": 3,
    "eval_iters": 1, "log_interval": 1, "seed": 7, "pipeline_model_parallel_size": 2,
    "gradient_accumulation_steps": 4,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.002}}
  })");
}

// A slow machine, so that tiny steps take whole milliseconds.
SystemDescription machine() {
  SystemDescription s;
  s.name = "slow test machine";
  s.device.cores = 2;
  s.device.memoryBytes = 1e9;
  s.device.matmulF32 = s.device.matmulBF16 =
      s.device.matmulF16 = {.peakFlops = 2e8, .backwardPeakFlops = 2e8};
  s.device.elementwiseBandwidth = 1e8;
  s.device.optimizerBandwidth = 1e8;
  s.device.instructionOverhead = 1e-3;
  s.devicesPerNode = 2;
  for (auto& link : s.links) link = {{1e-4, 1e8}, {1e-4, 1e8}};
  s.stepOverhead = 2e-3;
  return s;
}

// Exactly twice as slow: halving a rate and doubling a time are exact in binary floating point,
// so every simulated time doubles exactly.
SystemDescription twiceAsSlow(SystemDescription s) {
  for (MatmulRate* m : {&s.device.matmulF32, &s.device.matmulBF16, &s.device.matmulF16}) {
    m->peakFlops /= 2;
    m->backwardPeakFlops /= 2;
    m->castSeconds *= 2;
  }
  s.device.elementwiseBandwidth /= 2;
  s.device.optimizerBandwidth /= 2;
  s.device.instructionOverhead *= 2;
  for (auto& link : s.links) {
    for (LinkAlgorithm* a : {&link.ring, &link.tree}) {
      a->latency *= 2;
      a->bandwidth /= 2;
    }
  }
  s.stepOverhead *= 2;
  return s;
}

struct Fixture {
  StrategyPlan plan;
  Simulation predicted, measured;
};

Fixture fixture() {
  Fixture f;
  f.plan = planStrategy(parseTrainConfig(tinyPipeline()));
  f.predicted = simulateStep(f.plan, CostModel(machine(), f.plan));
  f.measured = simulateStep(f.plan, CostModel(twiceAsSlow(machine()), f.plan));
  return f;
}

profiler::TraceData traceOf(std::vector<trace::Event> events) {
  profiler::TraceData t;
  t.worldSize = 2;
  t.events = std::move(events);
  t.adoptNames();
  return t;
}

// A span's duration in seconds as a trace holds it (whole ns), as comparePrediction reads it.
double traced(const SimulatedSpan& s) {
  return static_cast<double>(std::llround(s.end * 1e9) - std::llround(s.start * 1e9)) * 1e-9;
}

QVariant cell(const QAbstractItemModel& m, int row, int column, int role = Qt::DisplayRole) {
  return m.data(m.index(row, column), role);
}

// The row of `lane`'s first level.
const profiler::TimelineRow* laneRow(const std::vector<profiler::TimelineRow>& rows,
                                     std::uint32_t lane) {
  for (const profiler::TimelineRow& r : rows) {
    if (r.kind == profiler::TimelineRow::Kind::Level && r.lane == lane && r.depth == 0) return &r;
  }
  return nullptr;
}

// The first outermost span named `name` on (rank, lane id).
profiler::SpanRef firstSpan(const profiler::TimelineIndex& index, std::int32_t rank,
                            std::int32_t laneId, const std::string& name) {
  for (std::uint32_t l = 0; l < index.lanes().size(); ++l) {
    const profiler::Lane& lane = index.lanes()[l];
    if (lane.rank != rank || lane.laneId != laneId || lane.levels.empty()) continue;
    for (std::uint32_t i = 0; i < lane.levels[0].size(); ++i) {
      if (index.name(lane.levels[0][i].nameCat) == name) return {l, 0, i};
    }
  }
  return {};
}

// Where a span lies in the view: its middle, on its row.
QPoint spanPoint(const TimelineView& view, profiler::SpanRef ref) {
  const profiler::SpanRec& s = view.index().span(ref);
  const profiler::TimelineRow* row = laneRow(view.rows(), ref.lane);
  if (!row) return {};
  return {view.timeAreaLeft() + static_cast<int>(view.axis().x((s.startNs + s.endNs) / 2)),
          view.contentTop() + row->y + row->height / 2};
}

std::vector<std::int32_t> headerRanks(const std::vector<profiler::TimelineRow>& rows) {
  std::vector<std::int32_t> ranks;
  for (const profiler::TimelineRow& r : rows) {
    if (r.kind == profiler::TimelineRow::Kind::RankHeader) ranks.push_back(r.rank);
  }
  return ranks;
}

}  // namespace

class TestPrediction : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void instructionRowsAreExact();
  void opRowsSumTheInstructions();
  void predictedRanksFollowTheirMeasuredRank();
  void hoverShowsBothDurations();
  void windowPredictsTheEndedRun();
  void farOffStepsPointAtTheDescription();
  void windowPredictsEachSegment();

 private:
  QTemporaryDir cacheHome_;  // the window's sgemm peak cache, not the user's
};

void TestPrediction::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("ParaScopeTests"));
  QCoreApplication::setApplicationName(QStringLiteral("test_ui_prediction"));
  QVERIFY(cacheHome_.isValid());
  qputenv("XDG_CACHE_HOME", cacheHome_.path().toUtf8());
}

void TestPrediction::instructionRowsAreExact() {
  const Fixture f = fixture();
  QCOMPARE(f.measured.stepSeconds, 2 * f.predicted.stepSeconds);
  PredictedSegment segment;
  segment.segment = {1, "P2 m4", f.plan.config, 0, 0, {}};
  segment.comparison =
      comparePrediction(f.plan, f.predicted, predictedEvents(f.plan, f.measured, 1));

  QAction beside(QStringLiteral("beside"));
  PredictionView view(&beside);
  QAbstractItemModelTester tester(view.instructionModel(),
                                  QAbstractItemModelTester::FailureReportingMode::QtTest);
  view.setSegments({segment});
  const PredictionModel& m = *view.instructionModel();
  int row = 0;
  int errors = 0;
  for (std::size_t q = 0; q < f.plan.ranks.size(); ++q) {
    const Program& program = f.plan.ranks[q].program;
    for (std::size_t i = 0; i < program.size(); ++i, ++row) {
      const double measured = traced(f.measured.ranks[q].instructions[i]);
      const SimulatedSpan& p = f.predicted.ranks[q].instructions[i];
      const double predicted = p.end - p.start;
      QCOMPARE(cell(m, row, PredictionModel::Segment).toInt(), 1);
      QCOMPARE(cell(m, row, PredictionModel::Rank).toInt(), static_cast<int>(q));
      QCOMPARE(cell(m, row, PredictionModel::Index).toInt(), static_cast<int>(i));
      QCOMPARE(cell(m, row, PredictionModel::Instruction).toString(),
               QString::fromStdString(program[i].toString()));
      QCOMPARE(cell(m, row, PredictionModel::Measured, Qt::UserRole).toDouble(), measured);
      QCOMPARE(cell(m, row, PredictionModel::Measured).toString(),
               QString::number(measured * 1e3, 'f', 3));
      QCOMPARE(cell(m, row, PredictionModel::Predicted, Qt::UserRole).toDouble(), predicted);
      QCOMPARE(cell(m, row, PredictionModel::ErrorTime, Qt::UserRole).toDouble(),
               std::fabs(predicted - measured));
      // Under half a microsecond either way reads 0.000 (never "-0.000").
      const double ms = std::fabs(predicted - measured) < 5e-7 ? 0 : (predicted - measured) * 1e3;
      QCOMPARE(cell(m, row, PredictionModel::ErrorTime).toString(),
               (ms >= 0 ? QStringLiteral("+") : QString()) + QString::number(ms, 'f', 3));
      if (measured > 0) {
        // Twice as slow, to the nanosecond the trace keeps.
        QCOMPARE(cell(m, row, PredictionModel::Error, Qt::UserRole).toDouble(),
                 std::fabs((predicted - measured) / measured));
        QCOMPARE(cell(m, row, PredictionModel::Error).toString(), QStringLiteral("-50.0%"));
        ++errors;
      } else {  // a send: free on both machines
        QCOMPARE(cell(m, row, PredictionModel::Error, Qt::UserRole).toDouble(), -1.0);
        QCOMPARE(cell(m, row, PredictionModel::Error).toString(), QStringLiteral("—"));
      }
    }
  }
  QCOMPARE(m.rowCount(), row);
  QVERIFY(errors > 20);

  // The view lists the most time mispredicted first, those measured in no time (sends) last.
  const QAbstractItemModel* shown = view.instructionView()->model();
  QCOMPARE(shown->rowCount(), row);
  for (int r = 1; r < shown->rowCount(); ++r) {
    QVERIFY(cell(*shown, r - 1, PredictionModel::ErrorTime, Qt::UserRole).toDouble() >=
            cell(*shown, r, PredictionModel::ErrorTime, Qt::UserRole).toDouble());
  }
  QVERIFY(cell(*shown, 0, PredictionModel::ErrorTime, Qt::UserRole).toDouble() > 0);
  // The first row is the model's largest error, exactly.
  double largest = 0;
  for (int r = 0; r < m.rowCount(); ++r) {
    largest = std::max(largest, cell(m, r, PredictionModel::ErrorTime, Qt::UserRole).toDouble());
  }
  QCOMPARE(cell(*shown, 0, PredictionModel::ErrorTime, Qt::UserRole).toDouble(), largest);
  QCOMPARE(cell(*shown, shown->rowCount() - 1, PredictionModel::Error).toString(),
           QStringLiteral("—"));
}

void TestPrediction::opRowsSumTheInstructions() {
  const Fixture f = fixture();
  PredictedSegment segment;
  segment.segment = {2, "P2 m4", f.plan.config, 0, 1, {}};
  segment.comparison =
      comparePrediction(f.plan, f.predicted, predictedEvents(f.plan, f.measured, 1));
  PredictionOpModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
  m.setSegments({segment});
  // The whole step first, then the ops in Op order, as `simulate --compare` prints them.
  QCOMPARE(cell(m, 0, PredictionOpModel::Op).toString(), QStringLiteral("step"));
  QCOMPARE(cell(m, 0, PredictionOpModel::Measured, Qt::UserRole).toDouble(),
           static_cast<double>(std::llround(f.measured.stepSeconds * 1e9)) * 1e-9);
  QCOMPARE(cell(m, 0, PredictionOpModel::Predicted, Qt::UserRole).toDouble(),
           f.predicted.stepSeconds);
  QCOMPARE(cell(m, 0, PredictionOpModel::Error).toString(), QStringLiteral("-50.0%"));
  QCOMPARE(m.rowCount(), 1 + static_cast<int>(segment.comparison.ops.size()));
  for (int row = 1; row < m.rowCount(); ++row) {
    const QString op = cell(m, row, PredictionOpModel::Op).toString();
    int count = 0;
    double measured = 0, predicted = 0;
    for (std::size_t q = 0; q < f.plan.ranks.size(); ++q) {
      const Program& program = f.plan.ranks[q].program;
      for (std::size_t i = 0; i < program.size(); ++i) {
        if (QString::fromUtf8(opName(program[i].op)) != op) continue;
        ++count;
        measured += traced(f.measured.ranks[q].instructions[i]);
        predicted +=
            f.predicted.ranks[q].instructions[i].end - f.predicted.ranks[q].instructions[i].start;
      }
    }
    QCOMPARE(cell(m, row, PredictionOpModel::Segment).toInt(), 2);
    QCOMPARE(cell(m, row, PredictionOpModel::Instructions).toInt(), count);
    QCOMPARE(cell(m, row, PredictionOpModel::Measured, Qt::UserRole).toDouble(), measured);
    QCOMPARE(cell(m, row, PredictionOpModel::Predicted, Qt::UserRole).toDouble(), predicted);
    QCOMPARE(cell(m, row, PredictionOpModel::Error).toString(),
             measured > 0 ? QStringLiteral("-50.0%") : QStringLiteral("—"));
  }
}

void TestPrediction::predictedRanksFollowTheirMeasuredRank() {
  const Fixture f = fixture();
  const profiler::TraceData measured = traceOf(predictedEvents(f.plan, f.measured, 2));
  // Two predicted steps for measured step 2 on: the second has no measured step to sit at.
  const profiler::TraceData predicted = traceOf(predictedEvents(f.plan, f.predicted, 2));
  profiler::TraceData copy;
  copy.merge(measured);
  const profiler::TraceData beside =
      profiler::withPredictionBeside(std::move(copy), {{&predicted, 2}});
  QCOMPARE(beside.events.size(), measured.events.size() + predicted.events.size() / 2);
  QCOMPARE(beside.rankNames.at(profiler::kPredictedRankBase + 1),
           std::string("rank 1 (predicted)"));
  // Predicted step 1 now starts with measured step 2 and carries its tag.
  const std::int64_t stepTwo = std::llround(f.measured.stepSeconds * 1e9);
  for (const profiler::Event& e : beside.events) {
    if (!profiler::isPredictedRank(e.rank)) continue;
    QCOMPARE(e.step, 2);
    QVERIFY(e.startNs >= stepTwo);
    if (e.category == profiler::Category::Step) QCOMPARE(e.startNs, stepTwo);
  }

  profiler::TimelineIndex index;
  index.build(beside);
  const std::vector<std::int32_t> expected = {0, profiler::kPredictedRankBase, 1,
                                              profiler::kPredictedRankBase + 1};
  QCOMPARE(headerRanks(profiler::layoutRows(index, {})), expected);
  profiler::LayoutOptions byStage;
  byStage.byStage = true;
  const std::vector<profiler::TimelineRow> staged = profiler::layoutRows(index, byStage);
  QCOMPARE(headerRanks(staged), expected);
  QCOMPARE(staged[0].stage, 0);
  for (const profiler::TimelineRow& r : staged) {
    if (r.kind == profiler::TimelineRow::Kind::RankHeader)
      QCOMPARE(r.stage, profiler::measuredRankOf(r.rank));
  }
  // A folded measured rank keeps its prediction right after its header.
  profiler::LayoutOptions folded;
  folded.collapsed = {0};
  const std::vector<profiler::TimelineRow> rows = profiler::layoutRows(index, folded);
  QCOMPARE(rows[1].kind, profiler::TimelineRow::Kind::RankHeader);
  QCOMPARE(rows[1].rank, profiler::kPredictedRankBase);
}

void TestPrediction::hoverShowsBothDurations() {
  const Fixture f = fixture();
  const profiler::TraceData measured = traceOf(predictedEvents(f.plan, f.measured, 1));
  const profiler::TraceData predicted = traceOf(predictedEvents(f.plan, f.predicted, 1));
  profiler::TraceData copy;
  copy.merge(measured);
  auto index = std::make_shared<profiler::TimelineIndex>();
  index->build(profiler::withPredictionBeside(std::move(copy), {{&predicted, 1}}));
  TimelineView view;
  view.resize(1600, 900);
  view.setIndex(index);

  // Rank 1's first backward, measured and predicted.
  const profiler::SpanRef measuredB = firstSpan(*index, 1, trace::lane::kCompute, "B");
  const profiler::SpanRef predictedB =
      firstSpan(*index, profiler::kPredictedRankBase + 1, trace::lane::kCompute, "B");
  QVERIFY(measuredB.valid() && predictedB.valid());
  QCOMPARE(profiler::counterpartSpan(*index, measuredB), predictedB);
  QCOMPARE(profiler::counterpartSpan(*index, predictedB), measuredB);
  const profiler::SpanRec& m = index->span(measuredB);
  const profiler::SpanRec& p = index->span(predictedB);
  QCOMPARE(m.endNs - m.startNs, 2 * (p.endNs - p.startNs));
  const QString measuredTime =
      QString::fromStdString(profiler::formatDuration(m.endNs - m.startNs));
  const QString predictedTime =
      QString::fromStdString(profiler::formatDuration(p.endNs - p.startNs));

  const QString overMeasured = view.tooltipText(spanPoint(view, measuredB));
  QVERIFY2(overMeasured.startsWith(QStringLiteral("B\n") + measuredTime), qPrintable(overMeasured));
  QVERIFY2(overMeasured.contains(QStringLiteral("\npredicted ") + predictedTime),
           qPrintable(overMeasured));
  QVERIFY2(overMeasured.contains(QStringLiteral("\nprediction error -50.0%")),
           qPrintable(overMeasured));
  const QString overPredicted = view.tooltipText(spanPoint(view, predictedB));
  QVERIFY2(overPredicted.startsWith(QStringLiteral("B\n") + predictedTime),
           qPrintable(overPredicted));
  QVERIFY2(overPredicted.contains(QStringLiteral("\nmeasured ") + measuredTime),
           qPrintable(overPredicted));

  // Spans that are no instruction, and traces without a prediction, get no counterpart.
  const profiler::SpanRef step = firstSpan(*index, 1, trace::lane::kHost, "train_step");
  QVERIFY(step.valid());
  QVERIFY(!profiler::counterpartSpan(*index, step).valid());
  QVERIFY(!view.tooltipText(spanPoint(view, step)).contains(QStringLiteral("predicted ")));
  profiler::TimelineIndex alone;
  alone.build(measured);
  QVERIFY(
      !profiler::counterpartSpan(alone, firstSpan(alone, 1, trace::lane::kCompute, "B")).valid());
}

void TestPrediction::windowPredictsTheEndedRun() {
  WorkbenchWindow window;
  window.resize(1600, 1000);
  window.setDocument(tinyPipeline());
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QVERIFY2(window.panel()->config().has_value(), qPrintable(window.panel()->message()));
  PredictionView* tab = window.predictionView();
  QVERIFY2(tab->hint().contains(QStringLiteral("Session > Calibrate this machine")),
           qPrintable(tab->hint()));
  QAction* beside = window.action(QStringLiteral("showPredictionBeside"));
  QVERIFY(beside && !beside->isEnabled());

  // Without a description the run is measured, not predicted.
  QSignalSpy shown(&window, &WorkbenchWindow::traceShown);
  QTest::keyClick(&window, Qt::Key_F5);
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 120000);
  QVERIFY2(window.errorText().isEmpty(), qPrintable(window.errorText()));
  QCOMPARE(tab->instructionModel()->rowCount(), 0);
  QVERIFY2(tab->hint().contains(QStringLiteral("Session > Calibrate this machine")),
           qPrintable(tab->hint()));
  QVERIFY(!beside->isEnabled());

  // A description, once there, predicts the ended run.
  window.setSystem(machine());
  QTRY_VERIFY_WITH_TIMEOUT(tab->instructionModel()->rowCount() > 0, 60000);
  QVERIFY2(tab->hint().contains(QStringLiteral("slow test machine")), qPrintable(tab->hint()));
  const TrainConfig config = *window.panel()->config();
  const StrategyPlan plan = planStrategy(config);
  const Simulation simulation = simulateStep(plan, CostModel(machine(), plan));
  const profiler::TraceData run = profiler::importChromeTraces({window.tracePath().toStdString()});
  const PredictionError expected = comparePrediction(plan, simulation, run.events);
  // The hint points at the description exactly when the step is off by more than half.
  qInfo("step predicted %+.0f%% off", 100 * expected.stepError());
  QCOMPARE(tab->hint().contains(QStringLiteral("measures it again")),
           std::abs(expected.stepError()) > kStaleDescriptionError);
  const PredictionModel& m = *tab->instructionModel();
  QCOMPARE(m.rowCount(), static_cast<int>(expected.instructions.size()));
  for (int row = 0; row < m.rowCount(); ++row) {
    const InstructionError& e = expected.instructions[static_cast<std::size_t>(row)];
    QVERIFY(e.measuredSpans == 3);  // every instruction, each of the 3 steps
    QCOMPARE(cell(m, row, PredictionModel::Rank).toInt(), e.pipelineRank);
    QCOMPARE(cell(m, row, PredictionModel::Index).toInt(), e.index);
    QCOMPARE(cell(m, row, PredictionModel::Measured, Qt::UserRole).toDouble(), e.measuredSeconds);
    QCOMPARE(cell(m, row, PredictionModel::Predicted, Qt::UserRole).toDouble(), e.predictedSeconds);
  }
  // Compare diffs the segment against its prediction.
  const QStringList sources = window.diffSources();
  QCOMPARE(sources.size(), 2);
  QVERIFY(sources[0].startsWith(QStringLiteral("Segment 1")));
  QVERIFY(sources[1].startsWith(QStringLiteral("Predicted")));
  QCOMPARE(window.findChild<QComboBox*>(QStringLiteral("diffA"))->currentIndex(), 0);
  QCOMPARE(window.findChild<QComboBox*>(QStringLiteral("diffB"))->currentIndex(), 1);

  // View > Show prediction beside the run.
  QTRY_VERIFY(beside->isEnabled());
  TimelineView* timeline = window.timeline()->view();
  QSignalSpy loaded(window.timeline()->loader(), &TraceLoader::loaded);
  beside->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 60000);
  const profiler::TimelineIndex& index = timeline->index();
  QCOMPARE(index.rankNames().at(profiler::kPredictedRankBase), std::string("rank 0 (predicted)"));
  const std::vector<std::int32_t> order = {0, profiler::kPredictedRankBase, 1,
                                           profiler::kPredictedRankBase + 1};
  QCOMPARE(headerRanks(timeline->rows()), order);
  const profiler::SpanRef forward = firstSpan(index, 0, trace::lane::kCompute, "F");
  QVERIFY(forward.valid());
  const profiler::SpanRef other = profiler::counterpartSpan(index, forward);
  QVERIFY(other.valid());
  const profiler::SpanRec& o = index.span(other);
  timeline->fitRange(index.span(forward).startNs, index.span(forward).endNs);  // zoomed to it
  const QString tip = timeline->tooltipText(spanPoint(*timeline, forward));
  QVERIFY2(tip.contains(QStringLiteral("\npredicted ") +
                        QString::fromStdString(profiler::formatDuration(o.endNs - o.startNs))),
           qPrintable(tip));
  QVERIFY2(tip.contains(QStringLiteral("\nprediction error ")), qPrintable(tip));

  // Unchecked, the run alone again.
  beside->trigger();
  QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 2, 60000);
  QCOMPARE(headerRanks(timeline->rows()), (std::vector<std::int32_t>{0, 1}));
}

// The segment whose step is the most mispredicted, beyond the bound, either way; none within it,
// unmeasured or unpredicted.
void TestPrediction::farOffStepsPointAtTheDescription() {
  auto segment = [](int n, double measured, double predicted, std::string failure = {}) {
    PredictedSegment p;
    p.segment.segment = n;
    p.failure = std::move(failure);
    p.comparison.measuredStepSeconds = measured;
    p.comparison.predictedStepSeconds = predicted;
    return p;
  };
  const std::vector<PredictedSegment> close = {segment(1, 0.196, 0.202), segment(2, 0.2, 0.12),
                                               segment(3, 0, 5.0), segment(4, 0.1, 0, "no plan")};
  QCOMPARE(mostMispredicted(close, kStaleDescriptionError), nullptr);
  QCOMPARE(close[1].comparison.stepError(), -0.4);
  const std::vector<PredictedSegment> far = {segment(1, 0.196, 0.202), segment(2, 0.2, 0.08),
                                             segment(3, 0.1963, 0.6289)};
  const PredictedSegment* worst = mostMispredicted(far, kStaleDescriptionError);
  QVERIFY(worst != nullptr);
  QCOMPARE(worst->segment.segment, 3);  // +220%, beyond segment 2's -60%
  const std::vector<PredictedSegment> under = {far[1]};
  QCOMPARE(mostMispredicted(under, kStaleDescriptionError), &under[0]);  // -60% counts too
}

// A live switch splits the run: each segment is predicted under its own strategy and compared
// with its own steps of the trace only.
void TestPrediction::windowPredictsEachSegment() {
  WorkbenchWindow window;
  window.setSystem(machine());
  nlohmann::json doc = tinyPipeline();
  doc["train_iters"] = 100000;  // still running when the pause lands, however slow the machine
  window.setDocument(doc);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QVERIFY2(window.predictionView()->hint().contains(QStringLiteral("When a run ends")),
           qPrintable(window.predictionView()->hint()));
  QTest::keyClick(&window, Qt::Key_F5);
  QTRY_VERIFY_WITH_TIMEOUT(window.stepsSeen() >= 2, 60000);
  QTest::keyClick(&window, Qt::Key_F6);  // pause, so the switch lands mid-run
  nlohmann::json flat = doc;
  flat["pipeline_model_parallel_size"] = 1;
  const TrainConfig after = parseTrainConfig(flat);
  window.applyStrategy(after);
  QTest::keyClick(&window, Qt::Key_F6);
  QTRY_COMPARE_WITH_TIMEOUT(window.charts()->switchCount(), 1, 60000);
  const int atSwitch = window.stepsSeen();
  QTRY_VERIFY_WITH_TIMEOUT(window.stepsSeen() >= atSwitch + 2, 60000);
  QSignalSpy shown(&window, &WorkbenchWindow::traceShown);
  QTest::keyClick(&window, Qt::Key_F5, Qt::ShiftModifier);  // stop
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 120000);
  QVERIFY2(window.errorText().isEmpty(), qPrintable(window.errorText()));

  const int last = window.stepsSeen();
  const int switched = window.charts()->switchSteps().at(0);
  const profiler::TraceData run = profiler::importChromeTraces({window.tracePath().toStdString()});
  // Trace step tags count from 1, as the reports: segment 1 is steps 1 .. switched.
  const std::pair<int, int> steps[] = {{1, switched}, {switched + 1, last}};
  const TrainConfig configs[] = {parseTrainConfig(doc), after};
  const PredictionModel& m = *window.predictionView()->instructionModel();
  int row = 0;
  for (int s = 0; s < 2; ++s) {
    const StrategyPlan plan = planStrategy(configs[s]);
    const Simulation simulation = simulateStep(plan, CostModel(machine(), plan));
    std::vector<profiler::Event> events;
    for (const profiler::Event& e : run.events) {
      if (e.step >= steps[s].first && e.step <= steps[s].second) events.push_back(e);
    }
    const PredictionError expected = comparePrediction(plan, simulation, events);
    for (const InstructionError& e : expected.instructions) {
      QCOMPARE(cell(m, row, PredictionModel::Segment).toInt(), s + 1);
      QCOMPARE(e.measuredSpans, steps[s].second - steps[s].first + 1);
      QCOMPARE(cell(m, row, PredictionModel::Instruction).toString(),
               QString::fromStdString(e.instruction.toString()));
      QCOMPARE(cell(m, row, PredictionModel::Measured, Qt::UserRole).toDouble(), e.measuredSeconds);
      QCOMPARE(cell(m, row, PredictionModel::Predicted, Qt::UserRole).toDouble(),
               e.predictedSeconds);
      ++row;
    }
  }
  QCOMPARE(m.rowCount(), row);
  // Compare: both segments, then both predictions; the diff shows the last against its own.
  const QStringList sources = window.diffSources();
  QCOMPARE(sources.size(), 4);
  QVERIFY(sources[2].startsWith(QStringLiteral("Predicted")));
  QVERIFY(sources[3].startsWith(QStringLiteral("Predicted")));
  QCOMPARE(window.findChild<QComboBox*>(QStringLiteral("diffA"))->currentIndex(), 1);
  QCOMPARE(window.findChild<QComboBox*>(QStringLiteral("diffB"))->currentIndex(), 3);
}

QTEST_MAIN(TestPrediction)
#include "test_prediction.moc"
