// The workbench's views without a window: reported points reach a chart's series only on
// refresh (one redraw however many steps arrived) while points() already holds them exactly; a
// memory category has one colour in the Memory view's stacked areas and in the timeline's
// counter rows, whatever order its tracks come in; the Pipeline view's ideal bubble is the
// schedule's own; the Strategy panel's verdict on a switch is the session's; the Analyses view's
// table holds the rows `analyze --json` prints.
#include <QAbstractItemModelTester>
#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QImage>
#include <QLineSeries>
#include <QPushButton>
#include <QSpinBox>
#include <QValueAxis>
#include <QtTest>
#include <memory>
#include <vector>

#include "core/common/error.h"
#include "core/session/session.h"
#include "profiler/analysis/analysis_table.h"
#include "ui/adaptive_splitter.h"
#include "ui/timeline/counter_colors.h"
#include "ui/timeline/timeline_view.h"
#include "ui/views/analysis_table_model.h"
#include "ui/views/memory_peak_model.h"
#include "ui/views/memory_view.h"
#include "ui/views/pipeline_view.h"
#include "ui/workbench/live_charts.h"
#include "ui/workbench/strategy_panel.h"

namespace profiler = parascope::profiler;
using parascope::profiler::Category;
using parascope::profiler::Event;
using parascope::profiler::EventKind;
using parascope::ui::counterColor;
using parascope::ui::LiveCharts;

namespace {

constexpr std::int64_t kMs = 1'000'000;

profiler::Event counter(const char* name, std::int64_t atMs, std::int64_t bytes) {
  profiler::Event e;
  e.kind = profiler::EventKind::Counter;
  e.category = profiler::Category::Memory;
  e.name = name;
  e.startNs = e.endNs = atMs * kMs;
  e.bytes = bytes;
  return e;
}

// Pixels of exactly `color` in the widget as painted.
int pixelsOf(QWidget& widget, const QColor& color) {
  const QImage image = widget.grab().toImage().convertToFormat(QImage::Format_RGB32);
  int n = 0;
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) n += image.pixel(x, y) == color.rgb() ? 1 : 0;
  }
  return n;
}

// One rank's compute instructions of step 0, back to back, each of the given length in ms.
void addInstructions(parascope::profiler::TraceData& trace, int rank,
                     const std::vector<std::pair<const char*, std::int64_t>>& ops) {
  std::int64_t at = 0;
  for (const auto& [name, ms] : ops) {
    profiler::Event e;
    e.kind = profiler::EventKind::Span;
    e.category = profiler::Category::Instruction;
    e.name = trace.strings.intern(name);
    e.rank = rank;
    e.stage = rank;
    e.step = 0;
    e.microBatch = 0;
    e.startNs = at * kMs;
    e.endNs = (at + ms) * kMs;
    at += ms;
    trace.events.push_back(e);
  }
}

}  // namespace

class TestWorkbenchViews : public QObject {
  Q_OBJECT
 private slots:
  void adaptiveSplitterTurnsWithItsHeight();
  void chartsDrawOnRefresh();
  void categoriesHaveFixedColors();
  void memoryViewUsesTheCategoryColors();
  void memoryViewSharesOneTimeAxisAndPredictsEachRank();
  void memoryPeaksOfTheLastLayout();
  void memoryViewDrawsTheDiskBesideMemory();
  void timelineUsesTheCategoryColors_data();
  void timelineUsesTheCategoryColors();
  void pipelineViewIdealIsTheSchedules_data();
  void pipelineViewIdealIsTheSchedules();
  void pipelineViewShowsTheLastStepOnly();
  void panelValidatesASwitchAsTheSessionDoes();
  void panelTakesTheDevice();
  void analysisTableShowsAnalyzeRows();
  void chartAxesTickAtRoundValues();
};

// Short: side by side, the first part its share of the width; tall: stacked, its share of the
// height; each turn told once.
void TestWorkbenchViews::adaptiveSplitterTurnsWithItsHeight() {
  parascope::ui::AdaptiveSplitter split(300, 0.6);
  split.addWidget(new QWidget);
  split.addWidget(new QWidget);
  std::vector<Qt::Orientation> turns;
  split.setOnTurn([&](Qt::Orientation o) { turns.push_back(o); });
  split.resize(1000, 200);
  split.show();
  QVERIFY(QTest::qWaitForWindowExposed(&split));
  QTRY_COMPARE(split.orientation(), Qt::Horizontal);
  QCOMPARE(turns, std::vector<Qt::Orientation>{Qt::Horizontal});
  QVERIFY(std::abs(split.sizes()[0] - 600) <= split.handleWidth());
  split.resize(1000, 299);
  QTest::qWait(20);
  QCOMPARE(turns.size(), std::size_t{1});  // still short: no turn
  split.resize(1000, 800);
  QTRY_COMPARE(split.orientation(), Qt::Vertical);
  QCOMPARE(turns, (std::vector<Qt::Orientation>{Qt::Horizontal, Qt::Vertical}));
  QVERIFY(std::abs(split.sizes()[0] - 480) <= split.handleWidth());
}

void TestWorkbenchViews::chartsDrawOnRefresh() {
  LiveCharts charts;
  auto* loss = qobject_cast<QLineSeries*>(charts.view(LiveCharts::Loss)->chart()->series().at(0));
  QVERIFY(loss);
  QVERIFY(!charts.stale());
  charts.addStep(1, 5.5, 1000, 0.25, 0.5, 1);
  charts.addStep(2, 5.0, 1200, 0.3, 0.25, 1);
  charts.addValidation(2, 5.25);
  QVERIFY(charts.stale());
  QCOMPARE(loss->count(), 0);
  QCOMPARE(charts.pointCount(LiveCharts::Loss), 2);
  QCOMPARE(charts.points(LiveCharts::Mfu), QList<QPointF>({{1, 25.0}, {2, 30.0}}));
  charts.refresh();
  QVERIFY(!charts.stale());
  QCOMPARE(loss->points(), QList<QPointF>({{1, 5.5}, {2, 5.0}}));
  QCOMPARE(charts.points(LiveCharts::ExposedComm), QList<QPointF>({{1, 50.0}, {2, 25.0}}));
  charts.addStep(3, 4.5, 1100, 0.3, 0.25, 1);
  QCOMPARE(charts.points(LiveCharts::Loss), QList<QPointF>({{1, 5.5}, {2, 5.0}, {3, 4.5}}));
  charts.addSwitch(3, QStringLiteral("D2 \u2192 D2 T2"));
  QVERIFY(charts.stale());
  // Two switches a step apart: their labels do not write over each other.
  charts.addSwitch(4, QStringLiteral("D2 T2 \u2192 D2 T2 ZeRO-3"));
  charts.refresh();
  const QList<QRectF> labels = charts.switchLabelBoxes(LiveCharts::Loss);
  QCOMPARE(labels.size(), 2);
  QVERIFY(!labels[0].intersects(labels[1]));
  // A label wider than the plot is shortened to fit inside it, not cut off at the chart's edge.
  const QString wide =
      QStringLiteral("D2 T2 ZeRO-3 \u2192 ") + QString(QStringLiteral("D4 ")).repeated(200);
  charts.addStep(4, 4.4, 1100, 0.3, 0.25, 1);
  charts.addStep(5, 4.3, 1100, 0.3, 0.25, 1);
  charts.addSwitch(5, wide);
  charts.resize(900, 600);
  charts.show();
  QVERIFY(QTest::qWaitForWindowExposed(&charts));
  QCoreApplication::processEvents();  // the charts lay out their plots at the new size
  charts.refresh();
  const QChart* chart = charts.view(LiveCharts::Loss)->chart();
  const QRectF plot = chart->mapRectToScene(chart->plotArea());
  const QRectF box = charts.switchLabelBoxes(LiveCharts::Loss).at(2);
  QVERIFY(plot.width() > 100);
  QVERIFY2(
      box.width() > plot.width() / 2 && box.left() >= plot.left() && box.right() <= plot.right(),
      qPrintable(QStringLiteral("label %1..%2, plot %3..%4")
                     .arg(box.left())
                     .arg(box.right())
                     .arg(plot.left())
                     .arg(plot.right())));
  charts.clear();
  QVERIFY(!charts.stale());
  QCOMPARE(charts.pointCount(LiveCharts::Loss), 0);
  QCOMPARE(loss->count(), 0);
}

// The axes of a 2-step run once labelled "0 0 1 1 2" (integer labels at half steps) and a
// constant 0 series "0.000333": steps tick at whole numbers, values at 1, 2 or 5 x 10^k with
// the decimals the interval has, and the step axis says what it counts.
void TestWorkbenchViews::chartAxesTickAtRoundValues() {
  LiveCharts charts;
  auto axes = [&](LiveCharts::Chart c) {
    const QList<QAbstractAxis*> x = charts.view(c)->chart()->axes(Qt::Horizontal);
    const QList<QAbstractAxis*> y = charts.view(c)->chart()->axes(Qt::Vertical);
    return std::pair{qobject_cast<QValueAxis*>(x.at(0)), qobject_cast<QValueAxis*>(y.at(0))};
  };
  charts.addStep(1, 5.5, 1000, 0.25, 0.0, 1);
  charts.addStep(2, 5.0, 1200, 0.3, 0.0, 1);
  charts.refresh();
  for (int c = 0; c < LiveCharts::ChartCount; ++c) {
    const auto [x, y] = axes(static_cast<LiveCharts::Chart>(c));
    QCOMPARE(x->titleText(), QString("step"));
    QCOMPARE(x->tickType(), QValueAxis::TicksDynamic);
    QCOMPARE(x->tickInterval(), 1.0);
    QCOMPARE(x->labelFormat(), QString("%.0f"));
    QCOMPARE(x->max(), 2.0);
  }
  // No exposed communication: 0..1 %, ticks every 0.2.
  const auto [commX, comm] = axes(LiveCharts::ExposedComm);
  QCOMPARE(comm->min(), 0.0);
  QCOMPARE(comm->max(), 1.0);
  QCOMPARE(comm->tickInterval(), 0.2);
  QCOMPARE(comm->labelFormat(), QString("%.1f"));
  // fp32's constant loss scale of 1: 0.95..1.05, ticks every 0.02.
  const auto [scaleX, scale] = axes(LiveCharts::LossScale);
  QCOMPARE(scale->tickInterval(), 0.02);
  QCOMPARE(scale->labelFormat(), QString("%.2f"));
  // Tokens/s from 1000 to 1200 (padded by 10 each side): ticks every 50, no decimals.
  QCOMPARE(axes(LiveCharts::TokensPerSecond).second->tickInterval(), 50.0);
  QCOMPARE(axes(LiveCharts::TokensPerSecond).second->labelFormat(), QString("%.0f"));
  // 200 steps: ticks every 50 steps.
  charts.addStep(200, 4.0, 1100, 0.3, 0.0, 1);
  charts.refresh();
  QCOMPARE(axes(LiveCharts::Loss).first->tickInterval(), 50.0);
  // Ticks anchor at a multiple of the interval at or below the range: 0.95 under 0.02 steps.
  QCOMPARE(scale->tickAnchor(), 0.94);
}

void TestWorkbenchViews::categoriesHaveFixedColors() {
  QCOMPARE(counterColor("parameter", 0), QColor(0x4e, 0x79, 0xa7));
  QCOMPARE(counterColor("parameter", 5), QColor(0x4e, 0x79, 0xa7));
  QCOMPARE(counterColor("activation", 3), QColor(0xff, 0x9d, 0xa7));
  const char* categories[] = {
      "parameter", "gradient", "optimizer_state", "activation", "communication_buffer", "workspace",
      "data",      "nvme"};
  for (const char* a : categories) {
    for (const char* b : categories) {
      if (a != b) QVERIFY(counterColor(a, 0) != counterColor(b, 0));
    }
    // An imported counter never takes a category's colour.
    for (std::size_t slot = 0; slot < 12; ++slot)
      QVERIFY(counterColor("gpu_util", slot) != counterColor(a, 0));
  }
  QCOMPARE(counterColor("gpu_util", 1), counterColor("host_rss", 1));
}

void TestWorkbenchViews::memoryViewUsesTheCategoryColors() {
  auto analysis = std::make_shared<parascope::profiler::TraceAnalysis>();
  for (const char* name : {"activation", "gpu_util", "parameter"}) {
    parascope::profiler::MemorySeries s;
    s.rank = 0;
    s.name = name;
    s.points = {{0, 1 << 20}, {10 * kMs, 2 << 20}};
    analysis->memory.push_back(s);
  }
  parascope::ui::MemoryView view;
  view.setAnalysis(analysis, {});
  const QList<QAbstractSeries*> series = view.chart()->series();
  QCOMPARE(series.size(), 3);
  // Bottom up: model state, activations, then what the view does not know.
  const char* names[] = {"parameter", "activation", "gpu_util"};
  for (int i = 0; i < 3; ++i) {
    auto* area = qobject_cast<QAreaSeries*>(series.at(i));
    QVERIFY(area);
    QCOMPARE(area->name(), QString::fromLatin1(names[i]));
    QCOMPARE(area->color(), counterColor(names[i], static_cast<std::size_t>(i)));
  }
}

// Two ranks whose memory starts at different times (a pipeline's second stage starts later):
// one time axis, the peaks table's, for both; the thin communication buffer under the
// activations; each rank's prediction its own stage's.
void TestWorkbenchViews::memoryViewSharesOneTimeAxisAndPredictsEachRank() {
  auto analysis = std::make_shared<parascope::profiler::TraceAnalysis>();
  for (int rank = 0; rank < 2; ++rank) {
    for (const char* name : {"activation", "communication_buffer", "parameter"}) {
      parascope::profiler::MemorySeries s;
      s.rank = rank;
      s.name = name;
      const std::int64_t start = (rank == 0 ? 0 : 30) * kMs;
      s.points = {{start, 1 << 20}, {start + 10 * kMs, (rank + 2) << 20}};
      s.peakBytes = (rank + 2) << 20;
      s.peakAtNs = start + 10 * kMs;
      analysis->memory.push_back(s);
    }
  }
  parascope::ui::MemoryView view;
  view.setAnalysis(analysis, {{0, {{"parameters", 100.0}}}, {1, {{"parameters", 200.0}}}});
  for (int rank = 0; rank < 2; ++rank) {
    view.showRank(rank);
    const QList<QAbstractSeries*> series = view.chart()->series();
    QCOMPARE(series.size(), 3);
    const char* bottomUp[] = {"parameter", "communication_buffer", "activation"};
    for (int i = 0; i < 3; ++i)
      QCOMPARE(qobject_cast<QAreaSeries*>(series.at(i))->name(), QString::fromLatin1(bottomUp[i]));
    auto* x = qobject_cast<QValueAxis*>(view.chart()->axes(Qt::Horizontal).at(0));
    QCOMPARE(x->min(), 0.0);
    QCOMPARE(x->max(), 40.0);  // to rank 1's last sample, from rank 0's first
    // Rank 1's samples sit at 30 ms and 40 ms on it, where its peak is said to be.
    const QList<QPointF> top = qobject_cast<QAreaSeries*>(series.at(2))->upperSeries()->points();
    QCOMPARE(top.back().x(), 40.0);
  }
  const QAbstractItemModel* peaks = view.peakModel();
  int checked = 0;
  for (int row = 0; row < peaks->rowCount(); ++row) {
    using Peaks = parascope::ui::MemoryPeakModel;
    if (peaks->index(row, Peaks::Category).data().toString() != QStringLiteral("parameter"))
      continue;
    const int rank = peaks->index(row, Peaks::Rank).data().toInt();
    QCOMPARE(peaks->index(row, Peaks::Predicted).data(Qt::UserRole).toDouble(),
             rank == 0 ? 100.0 : 200.0);
    QCOMPARE(peaks->index(row, Peaks::PeakAtMs).data().toString(), rank == 0 ? "10.000" : "40.000");
    ++checked;
  }
  QCOMPARE(checked, 2);
}

// A run switched live is predicted for the strategy it ended with: its peaks beside the
// predictions are measured from that strategy's first step (the value in force then included).
void TestWorkbenchViews::memoryPeaksOfTheLastLayout() {
  auto analysis = std::make_shared<parascope::profiler::TraceAnalysis>();
  parascope::profiler::MemorySeries s;
  s.name = "activation";
  s.points = {{0, 5 << 20}, {10 * kMs, 8 << 20}, {20 * kMs, 2 << 20}, {30 * kMs, 3 << 20}};
  s.peakBytes = 8 << 20;
  s.peakAtNs = 10 * kMs;
  analysis->memory.push_back(s);
  parascope::ui::MemoryView view;
  const parascope::ui::MemoryPeakModel& peaks = *view.peakModel();
  using Peaks = parascope::ui::MemoryPeakModel;
  auto peak = [&] { return peaks.index(0, Peaks::PeakBytes).data(Qt::UserRole).toLongLong(); };
  auto at = [&] { return peaks.index(0, Peaks::PeakAtMs).data(Qt::UserRole).toLongLong(); };
  view.setAnalysis(analysis, {});
  QCOMPARE(peak(), 8LL << 20);  // the whole run
  QCOMPARE(view.scopeText(), QString());
  view.setAnalysis(analysis, {}, 4, 25 * kMs);
  QCOMPARE(peak(), 3LL << 20);
  QCOMPARE(at(), 30 * kMs);
  QCOMPARE(view.scopeText(), QStringLiteral("Peaks from step 4 on: the strategy the run ended "
                                            "with, which the predictions are for"));
  view.setAnalysis(analysis, {}, 3, 15 * kMs);
  QCOMPARE(peak(), 8LL << 20);  // still live when the last strategy began
  QCOMPARE(at(), 15 * kMs);
}

// The swap files' bytes are on a disk, not in memory: a dashed line in the disk's colour over
// the same axes, never stacked on the memory, and compared with the estimate's swap files.
void TestWorkbenchViews::memoryViewDrawsTheDiskBesideMemory() {
  auto analysis = std::make_shared<parascope::profiler::TraceAnalysis>();
  for (const auto& [name, mib] : {std::pair("nvme", 3), std::pair("optimizer_state", 1)}) {
    parascope::profiler::MemorySeries s;
    s.name = name;
    s.points = {{0, mib << 20}, {10 * kMs, 0}};
    s.peakBytes = mib << 20;
    analysis->memory.push_back(s);
  }
  parascope::ui::MemoryView view;
  view.setAnalysis(analysis, {{0, {{"swap files", 3.0 * (1 << 20)}}}});
  const QList<QAbstractSeries*> series = view.chart()->series();
  QCOMPARE(series.size(), 2);
  auto* area = qobject_cast<QAreaSeries*>(series.at(0));
  QVERIFY(area);
  QCOMPARE(area->name(), QStringLiteral("optimizer_state"));
  QCOMPARE(area->upperSeries()->at(0).y(), 1.0);  // the memory alone
  auto* disk = qobject_cast<QLineSeries*>(series.at(1));
  QVERIFY(disk);
  QCOMPARE(disk->name(), QStringLiteral("nvme (on disk)"));
  QCOMPARE(disk->pen().style(), Qt::DashLine);
  QCOMPARE(disk->pen().color(), parascope::ui::diskColor());
  QCOMPARE(disk->points(), (QList<QPointF>{{0, 3}, {10, 3}, {10, 0}}));
  QVERIFY(qobject_cast<QValueAxis*>(view.chart()->axes(Qt::Vertical).at(0))->max() >= 3.0);
  using Peaks = parascope::ui::MemoryPeakModel;
  const QAbstractItemModel* peaks = view.peakModel();
  QCOMPARE(peaks->index(0, Peaks::Category).data().toString(), QStringLiteral("nvme"));
  QCOMPARE(peaks->index(0, Peaks::Predicted).data(Qt::UserRole).toDouble(), 3.0 * (1 << 20));
}

void TestWorkbenchViews::timelineUsesTheCategoryColors_data() {
  QTest::addColumn<bool>("activationFirst");
  QTest::newRow("parameter first") << false;
  QTest::newRow("activation first") << true;
}

// The timeline fills a counter row with its colour lightened by 15%; the colour follows the
// name, not the order the tracks appeared in.
void TestWorkbenchViews::timelineUsesTheCategoryColors() {
  QFETCH(bool, activationFirst);
  // Each row is scaled to its own maximum: parameter fills its row, activation three quarters
  // of it, gradient about a fifth.
  std::vector<profiler::Event> events = {
      counter("parameter", 0, 100),   counter("parameter", 100, 100),  counter("activation", 0, 50),
      counter("activation", 50, 100), counter("activation", 100, 100), counter("gradient", 0, 100),
      counter("gradient", 10, 10),    counter("gradient", 100, 10)};
  if (activationFirst) std::rotate(events.begin(), events.begin() + 2, events.end());
  parascope::ui::TimelineView view;
  view.resize(900, 400);
  view.setIndex(std::make_shared<parascope::profiler::TimelineIndex>());
  view.appendEvents(events);
  const int parameter = pixelsOf(view, counterColor("parameter", 0).lighter(115));
  const int activation = pixelsOf(view, counterColor("activation", 0).lighter(115));
  const int gradient = pixelsOf(view, counterColor("gradient", 0).lighter(115));
  QVERIFY2(gradient > 100, qPrintable(QString::number(gradient)));
  QVERIFY2(activation > gradient,
           qPrintable(QStringLiteral("%1 %2").arg(activation).arg(gradient)));
  QVERIFY2(parameter > activation,
           qPrintable(QStringLiteral("%1 %2").arg(parameter).arg(activation)));
}

// The ideal bubble beside the measured one is the running schedule's own (ScheduleInfo), at the
// trace's instruction durations: zero-bubble H1 is not 1F1B's (p - 1) / (m + p - 1).
void TestWorkbenchViews::pipelineViewIdealIsTheSchedules_data() {
  QTest::addColumn<QString>("schedule");
  QTest::addColumn<int>("chunks");
  QTest::addColumn<double>("ideal");
  // p = 4, m = 8; F, Bi and W 1 ms each, B 2 ms: the papers' unit durations.
  QTest::newRow("gpipe") << "gpipe" << 1 << 3.0 / 11.0;
  QTest::newRow("1f1b") << "1f1b" << 1 << 3.0 / 11.0;
  QTest::newRow("interleaved v2") << "interleaved" << 2 << 3.0 / 19.0;
  QTest::newRow("zb-h1") << "zb-h1" << 1 << 1.0 / 9.0;  // (p - 1) / (3m + p - 1)
}

void TestWorkbenchViews::pipelineViewIdealIsTheSchedules() {
  QFETCH(QString, schedule);
  QFETCH(int, chunks);
  QFETCH(double, ideal);
  parascope::profiler::TraceAnalysis analysis;
  const bool split = schedule == QLatin1String("zb-h1");
  auto trace = std::make_shared<parascope::profiler::TraceData>();
  for (int rank = 0; rank < 4; ++rank) {
    if (split)
      addInstructions(*trace, rank, {{"F", 1}, {"Bi", 1}, {"W", 1}});
    else
      addInstructions(*trace, rank, {{"F", 1}, {"B", 2}});
  }
  analysis.trace = trace;
  parascope::TrainConfig config;
  config.parallel.pipeline = 4;
  config.gradientAccumulation = 8;
  config.pipeline.enabled = true;
  config.pipeline.schedule = schedule.toStdString();
  config.pipeline.chunks = chunks;
  parascope::ui::PipelineView view;
  view.setAnalysis(analysis, config);
  QCOMPARE(view.idealBubble(), ideal);
}

// A run switched live from two pipeline stages to none: its last step has no bubble, and the
// view says so instead of drawing an earlier step's (beside Compare's 0% for the strategy the
// run ended with).
void TestWorkbenchViews::pipelineViewShowsTheLastStepOnly() {
  for (const bool endsPipelined : {false, true}) {
    parascope::profiler::TraceAnalysis analysis;
    auto trace = std::make_shared<parascope::profiler::TraceData>();
    analysis.trace = trace;
    for (int step = 1; step <= 2; ++step) {
      profiler::Event s;
      s.kind = profiler::EventKind::Span;
      s.category = profiler::Category::Step;
      s.name = "train_step";
      s.step = step;
      s.startNs = (step - 1) * 10 * kMs;
      s.endNs = step * 10 * kMs;
      trace->events.push_back(s);
      profiler::Event f = s;
      f.category = profiler::Category::Instruction;
      f.name = "F";
      f.lane = parascope::trace::lane::kCompute;
      f.stage = 0;
      f.endNs = f.startNs + 6 * kMs;
      trace->events.push_back(f);
    }
    parascope::profiler::StageBubble b;
    b.step = endsPipelined ? 2 : 1;
    b.bubbleFraction = 0.4;
    analysis.bubbles.push_back(b);
    parascope::ui::PipelineView view;
    view.setAnalysis(analysis, std::nullopt);
    if (endsPipelined) {
      QCOMPARE(view.step(), 2);
      QCOMPARE(view.rows().size(), std::size_t{1});
      QCOMPARE(view.emptyText(), QString());
    } else {
      QCOMPARE(view.step(), -1);
      QVERIFY(view.rows().empty());
      QCOMPARE(view.emptyText(),
               QStringLiteral("The last step (2) ran without a pipeline: no stage waits for "
                              "another. Steps up to 1 ran with one; the timeline shows them."));
    }
  }
}

// While a session runs, "Valid" means Apply switches: data parallelism doubled keeps the global
// batch by halving the accumulation (the session's rule), and an accumulation the user sets that
// would change the global batch is refused with the session's own words.
// The device is a field of the panel: a document's is shown, the CPU (the default) leaves the key
// out, and what a GPU does not run yet is refused in the panel as the session would refuse it.
void TestWorkbenchViews::panelTakesTheDevice() {
  parascope::ui::StrategyPanel panel;
  auto* device = qobject_cast<QComboBox*>(panel.field(QStringLiteral("device")));
  QVERIFY(device != nullptr);
  QCOMPARE(device->currentText(), QStringLiteral("cpu"));
  QVERIFY(!panel.document().contains("device"));
  panel.setDocument({{"device", "cuda"}});
  QCOMPARE(device->currentText(), QStringLiteral("cuda"));
  QCOMPARE(panel.document()["device"], "cuda");
  auto* data = qobject_cast<QSpinBox*>(panel.field(QStringLiteral("data_parallel_size")));
  auto* world = qobject_cast<QSpinBox*>(panel.field(QStringLiteral("world_size")));
  world->setValue(9);
  data->setValue(9);
  const QString message = panel.findChild<QLabel*>(QStringLiteral("message"))->text();
#if PARASCOPE_HAVE_CUDA
  QVERIFY2(message.contains(QStringLiteral("9 ranks (at most 8 share a GPU)")),
           qPrintable(message));
#else
  QVERIFY2(message.contains(QStringLiteral("needs a build with CUDA")), qPrintable(message));
#endif
  device->setCurrentIndex(0);
  QVERIFY(!panel.document().contains("device"));
  QCOMPARE(panel.findChild<QLabel*>(QStringLiteral("message"))->text(),
           QStringLiteral("Valid: 9 ranks"));
}

void TestWorkbenchViews::panelValidatesASwitchAsTheSessionDoes() {
  const nlohmann::json doc = nlohmann::json::parse(R"({
    "model": {"type": "gpt", "vocab_size": 256, "context_length": 16, "hidden_size": 32,
              "num_attention_heads": 4, "num_layers": 4, "mlp_ratio": 2},
    "data": {"type": "text", "path": "/usr/share/games/fortunes", "validation_fraction": 0.1},
    "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4, "train_iters": 6,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.002}}
  })");
  const parascope::TrainConfig running = parascope::parseTrainConfig(doc);
  parascope::Session session(running);
  parascope::ui::StrategyPanel panel;
  panel.setDocument(doc);
  panel.setRunning(running, [&session](const nlohmann::json& d, bool batchNamed) {
    return session.resolveSwitch(d, batchNamed);
  });
  auto spin = [&panel](const char* key) {
    return qobject_cast<QSpinBox*>(panel.field(QString::fromLatin1(key)));
  };
  spin("data_parallel_size")->setValue(2);
  spin("world_size")->setValue(2);
  QVERIFY2(panel.config().has_value(), qPrintable(panel.message()));
  QCOMPARE(panel.config()->gradientAccumulation, 2);
  QCOMPARE(panel.config()->globalBatch, 8);
  QVERIFY(panel.applyButton()->isEnabled());
  session.switchStrategy(*panel.config());  // accepted: no throw

  spin("gradient_accumulation_steps")->setValue(3);
  QVERIFY(!panel.config().has_value());
  QVERIFY(!panel.applyButton()->isEnabled());
  QString refusal;
  try {
    nlohmann::json asked = panel.document();
    session.resolveSwitch(asked, true);
  } catch (const parascope::UserError& e) {
    refusal = QString::fromStdString(e.what());
  }
  QVERIFY(refusal.startsWith(QStringLiteral("switch: the global batch would change from 8 to 12")));
  QCOMPARE(panel.message(), refusal);
}

// Two ranks meet at one all-reduce, rank 1 5 ms after rank 0: the stragglers table has rank 1
// first (latest), its row as analyze prints it, what the row is about (rank) as the first column.
void TestWorkbenchViews::analysisTableShowsAnalyzeRows() {
  parascope::profiler::TraceData trace;
  trace.worldSize = 2;
  for (int rank = 0; rank < 2; ++rank) {
    profiler::Event e;
    e.kind = profiler::EventKind::Span;
    e.category = profiler::Category::Communication;
    e.name = trace.strings.intern("allReduce");
    e.rank = rank;
    e.startNs = rank * 5 * kMs;
    e.endNs = 10 * kMs;
    trace.events.push_back(e);
  }
  const parascope::profiler::AnalysisTable* stragglers = nullptr;
  for (const auto& table : parascope::profiler::analysisTables()) {
    if (table.section == "straggler") stragglers = &table;
  }
  QVERIFY(stragglers);
  parascope::ui::AnalysisTableModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRows(stragglers->rows(trace));
  QCOMPARE(model.rowCount(), 2);
  QStringList headers;
  for (int c = 0; c < model.columnCount(); ++c) {
    headers << model.headerData(c, Qt::Horizontal).toString();
  }
  QCOMPARE(headers, QStringList({"rank", "collectives", "max_lateness_ns", "mean_lateness_ns",
                                 "times_last"}));
  const QList<qlonglong> late = {1, 1, 5 * kMs, 5 * kMs, 1};
  const QList<qlonglong> early = {0, 1, 0, 0, 0};
  for (int c = 0; c < model.columnCount(); ++c) {
    QCOMPARE(model.index(0, c).data(Qt::UserRole).toLongLong(), late[c]);
    QCOMPARE(model.index(1, c).data(Qt::UserRole).toLongLong(), early[c]);
  }
  model.setRows({});
  QCOMPARE(model.columnCount(), 0);
}

QTEST_MAIN(TestWorkbenchViews)
#include "test_workbench_views.moc"
