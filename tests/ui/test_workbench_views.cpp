// The workbench's live charts and colours: reported points reach a chart's series only on
// refresh (one redraw however many steps arrived) while points() already holds them exactly,
// and a memory category has one colour in the Memory view's stacked areas and in the
// timeline's counter rows, whatever order its tracks come in.
#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QImage>
#include <QLineSeries>
#include <QtTest>
#include <memory>
#include <vector>

#include "ui/counter_colors.h"
#include "ui/live_charts.h"
#include "ui/memory_view.h"
#include "ui/timeline_view.h"

using parascope::profiler::Category;
using parascope::profiler::Event;
using parascope::profiler::EventKind;
using parascope::ui::counterColor;
using parascope::ui::LiveCharts;

namespace {

constexpr std::int64_t kMs = 1'000'000;

Event counter(const char* name, std::int64_t atMs, std::int64_t bytes) {
  Event e;
  e.kind = EventKind::Counter;
  e.category = Category::Memory;
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

}  // namespace

class TestWorkbenchViews : public QObject {
  Q_OBJECT
 private slots:
  void chartsDrawOnRefresh();
  void categoriesHaveFixedColors();
  void memoryViewUsesTheCategoryColors();
  void timelineUsesTheCategoryColors_data();
  void timelineUsesTheCategoryColors();
};

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
  charts.clear();
  QVERIFY(!charts.stale());
  QCOMPARE(charts.pointCount(LiveCharts::Loss), 0);
  QCOMPARE(loss->count(), 0);
}

void TestWorkbenchViews::categoriesHaveFixedColors() {
  QCOMPARE(counterColor("parameter", 0), QColor(0x4e, 0x79, 0xa7));
  QCOMPARE(counterColor("parameter", 5), QColor(0x4e, 0x79, 0xa7));
  QCOMPARE(counterColor("activation", 3), QColor(0xff, 0x9d, 0xa7));
  const char* categories[] = {
      "parameter", "gradient", "optimizer_state", "activation", "communication_buffer",
      "workspace", "data"};
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
  auto analysis = std::make_shared<parascope::ui::TraceAnalysis>();
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
  std::vector<Event> events = {counter("parameter", 0, 100),    counter("parameter", 100, 100),
                               counter("activation", 0, 50),    counter("activation", 50, 100),
                               counter("activation", 100, 100), counter("gradient", 0, 100),
                               counter("gradient", 10, 10),     counter("gradient", 100, 10)};
  if (activationFirst) std::rotate(events.begin(), events.begin() + 2, events.end());
  parascope::ui::TimelineView view;
  view.resize(900, 400);
  view.setIndex(std::make_shared<parascope::ui::TimelineIndex>());
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

QTEST_MAIN(TestWorkbenchViews)
#include "test_workbench_views.moc"
