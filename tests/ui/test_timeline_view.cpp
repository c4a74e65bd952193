// The timeline widget driven as a user would, through QTest events: wheel zoom at the cursor,
// drag pan, W/A/S/D, Home, box selection into the statistics model, ? for the shortcut list,
// hit testing against the tooltip, rank folding, live appends that follow the newest time,
// and loading: corrupt, truncated, unsupported and missing files end in a message, Kineto
// traces load (the committed fixtures, and real ones when ../shared/traces/kineto is beside the
// checkout). Runs under QT_QPA_PLATFORM=offscreen.
#include <sys/stat.h>
#include <QAbstractItemModelTester>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <random>

#include "profiler/io/chrome_export.h"
#include "profiler/io/chrome_import.h"
#include "profiler/synthetic_trace.h"
#include "profiler/timeline/flame_graph.h"
#include "tests/ui/nested_steps.h"
#include "ui/timeline/flame_view.h"
#include "ui/timeline/timeline_export.h"
#include "ui/timeline/timeline_window.h"

namespace profiler = parascope::profiler;
using namespace parascope::ui;
using parascope::profiler::SyntheticOptions;
using parascope::profiler::syntheticTrainingTrace;
using parascope::profiler::TraceData;

namespace {

const std::string kKineto = std::string(PARASCOPE_SOURCE_DIR) + "/../shared/traces/kineto/";
const std::string kKinetoFixtures = std::string(PARASCOPE_SOURCE_DIR) + "/tests/fixtures/kineto/";

std::shared_ptr<profiler::TimelineIndex> syntheticIndex(std::size_t events) {
  SyntheticOptions o;
  o.events = events;
  o.ranks = 4;
  auto index = std::make_shared<profiler::TimelineIndex>();
  index->build(syntheticTrainingTrace(o));
  return index;
}

void writeFile(const QString& path, const std::string& bytes) {
  std::ofstream(path.toStdString(), std::ios::binary) << bytes;
}

}  // namespace

class TestTimelineView : public QObject {
  Q_OBJECT
 private slots:
  void wheelZoomsAtTheCursor();
  void dragPansAndKeysMove();
  void boxSelectionFillsTheStatistics();
  void flameViewZoomsAndDescribes();
  void hitTestingMatchesTheTooltip();
  void shortcutListAndFolding();
  void flowsSearchAndDoubleClick();
  void cancelDropsTheLoad();
  void liveAppendsFollowTheNewestTime();
  void counterRowsShowTheirScaleAndValue();
  void panningStopsAtTheTraceEnds();
  void bubblesAreShadedWithinAStepOnly();
  void anotherTraceReplacesStatisticsAndSearch();
  void detailsShowParentsAndFlows();
  void badFilesShowAMessage_data();
  void badFilesShowAMessage();
  void kinetoTracesLoad();
  void argsInDetailsAndTooltips();
  void realKinetoTracesLoad();
  void exportsImages();
  void tracesBeyondTheInt64RangeDraw();
};

void TestTimelineView::wheelZoomsAtTheCursor() {
  TimelineView view;
  view.resize(1200, 600);
  view.setIndex(syntheticIndex(20'000));
  const profiler::TimeAxis before = view.axis();
  const QPoint at(view.timeAreaLeft() + 300, 100);
  const std::int64_t under = before.time(300);
  QWheelEvent wheel(at, view.mapToGlobal(at), {}, QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(&view, &wheel);
  QCOMPARE(view.axis().nsPerPx, before.nsPerPx * 0.8);
  QVERIFY(std::llabs(view.axis().time(300) - under) <= 1);
}

void TestTimelineView::dragPansAndKeysMove() {
  TimelineView view;
  view.resize(1200, 600);
  view.setIndex(syntheticIndex(20'000));
  view.show();
  const profiler::TimeAxis start = view.axis();
  const QPoint from(view.timeAreaLeft() + 500, 200);
  QTest::mousePress(&view, Qt::LeftButton, {}, from);
  QTest::mouseMove(&view, from + QPoint(-100, 0));
  QTest::mouseRelease(&view, Qt::LeftButton, {}, from + QPoint(-100, 0));
  // Dragging left by 100 px shows what was 100 px to the right.
  QCOMPARE(view.axis().startNs, start.startNs + std::llround(100 * start.nsPerPx));
  const profiler::TimeAxis panned = view.axis();
  QTest::keyClick(&view, Qt::Key_D);
  QCOMPARE(view.axis().startNs,
           panned.startNs + static_cast<std::int64_t>(panned.nsPerPx * view.timeAreaWidth() / 10));
  QTest::keyClick(&view, Qt::Key_A);
  QCOMPARE(view.axis().startNs, panned.startNs);
  QTest::keyClick(&view, Qt::Key_W);
  QCOMPARE(view.axis().nsPerPx, panned.nsPerPx * 0.8);
  QTest::keyClick(&view, Qt::Key_S);
  QVERIFY(std::fabs(view.axis().nsPerPx - panned.nsPerPx) < 1e-9 * panned.nsPerPx);
  QTest::keyClick(&view, Qt::Key_Home);
  QCOMPARE(view.axis().startNs, view.index().beginNs());
}

// Two ranks of step > F > gemm and step > B > (gemm, gelu): the icicle's boxes sit where their
// times put them, a click zooms in and out, and hovering names the path and its times.
void TestTimelineView::flameViewZoomsAndDescribes() {
  const profiler::TraceData trace = nestedSteps(0);
  profiler::TimelineIndex index;
  index.build(trace);
  std::vector<std::uint32_t> lanes;
  for (std::uint32_t l = 0; l < index.lanes().size(); ++l) lanes.push_back(l);
  parascope::ui::FlameView flame;
  flame.resize(400, 200);
  flame.setGraph(profiler::flameGraph(index, lanes, 0, 100));
  flame.show();
  QVERIFY(QTest::qWaitForWindowExposed(&flame));
  const auto row = [](int depth) {
    return parascope::ui::FlameView::kTop + depth * parascope::ui::FlameView::kRowHeight + 5;
  };
  const auto name = [&](int node) {
    return node < 0 ? std::string() : flame.graph().nodes[static_cast<std::size_t>(node)].name;
  };
  // 200 ns over 400 px: B (80 ns) from 0 to 160, F (60 ns) from 160 to 280, nothing after.
  QCOMPARE(name(flame.nodeAt(QPointF(399, row(0)))), std::string("step"));
  QCOMPARE(name(flame.nodeAt(QPointF(150, row(1)))), std::string("B"));
  QCOMPARE(name(flame.nodeAt(QPointF(170, row(1)))), std::string("F"));
  QCOMPARE(flame.nodeAt(QPointF(300, row(1))), -1);
  const int gelu = flame.nodeAt(QPointF(70, row(2)));  // B's gemm 0..60, gelu 60..92
  QCOMPARE(name(gelu), std::string("gelu"));
  QCOMPARE(flame.describe(gelu),
           QStringLiteral("step \u203a B \u203a gelu\ntotal 16 ns (8.0% of the selection), "
                          "self 16 ns, 2 span(s)"));
  // Clicking B zooms in: B fills the width (80 ns at 5 px/ns), its gemm from 0 to 150, its gelu
  // from 150 to 230.
  QTest::mouseClick(&flame, Qt::LeftButton, {}, QPoint(10, row(1)));
  QCOMPARE(name(flame.zoomed()), std::string("B"));
  QCOMPARE(name(flame.nodeAt(QPointF(390, row(1)))), std::string("B"));
  QCOMPARE(name(flame.nodeAt(QPointF(200, row(2)))), std::string("gelu"));
  QCOMPARE(flame.nodeAt(QPointF(300, row(2))), -1);
  // The ancestor above zooms out to it; empty space to the whole selection.
  QTest::mouseClick(&flame, Qt::LeftButton, {}, QPoint(10, row(0)));
  QCOMPARE(name(flame.zoomed()), std::string("step"));
  QTest::mouseClick(&flame, Qt::LeftButton, {}, QPoint(10, row(5)));
  QCOMPARE(flame.zoomed(), -1);
}

void TestTimelineView::boxSelectionFillsTheStatistics() {
  TimelineWindow window;
  window.resize(1400, 800);
  window.view()->setIndex(syntheticIndex(20'000));
  window.show();
  QAbstractItemModelTester tester(window.statsModel(),
                                  QAbstractItemModelTester::FailureReportingMode::QtTest);
  TimelineView* view = window.view();
  // The empty statistics say how to fill them, and the hint goes once they are filled.
  const auto* hint = window.findChild<QLabel*>(QStringLiteral("statsHint"));
  QVERIFY(hint);
  QVERIFY(hint->isVisible());
  QVERIFY(hint->text().startsWith(QStringLiteral("Shift+drag a box")));
  QSignalSpy selected(view, &TimelineView::selectionChanged);
  const QPoint a(view->timeAreaLeft() + 200, view->contentTop() + 25);
  const QPoint b(view->timeAreaLeft() + 700, view->contentTop() + 90);
  QTest::mousePress(view, Qt::LeftButton, Qt::ShiftModifier, a);
  QTest::mouseMove(view, b);
  QTest::mouseRelease(view, Qt::LeftButton, Qt::ShiftModifier, b);
  QCOMPARE(selected.count(), 1);
  const auto sel = view->selection();
  QVERIFY(sel.has_value());
  QCOMPARE(sel->fromNs, view->axis().time(200));
  QCOMPARE(sel->toNs, view->axis().time(700));
  QVERIFY(!sel->lanes.empty());
  const auto expected = profiler::selectionStats(view->index(), sel->lanes, sel->fromNs, sel->toNs);
  QCOMPARE(window.statsModel()->rowCount(), static_cast<int>(expected.size()));
  QVERIFY(!expected.empty());
  QVERIFY(!hint->isVisible());
  const QModelIndex count = window.statsModel()->index(0, SelectionStatsModel::Count);
  QCOMPARE(count.data().toLongLong(), expected[0].count);
  QCOMPARE(window.statsModel()->index(0, SelectionStatsModel::Name).data().toString(),
           QString::fromStdString(expected[0].name));
  // The same selection as a flame graph, in the tab beside the statistics.
  const profiler::FlameGraph flame =
      profiler::flameGraph(view->index(), sel->lanes, sel->fromNs, sel->toNs);
  QVERIFY(!flame.nodes.empty());
  QCOMPARE(window.flame()->graph().nodes.size(), flame.nodes.size());
  QCOMPARE(window.flame()->graph().totalNs, flame.totalNs);
  // F fits the selection (with a 5% margin each side).
  QTest::keyClick(view, Qt::Key_F);
  const std::int64_t len = sel->toNs - sel->fromNs;
  QCOMPARE(view->axis().startNs, sel->fromNs - len / 20);
}

void TestTimelineView::hitTestingMatchesTheTooltip() {
  TimelineView view;
  view.resize(1600, 900);
  view.setIndex(syntheticIndex(30'000));
  std::mt19937 rng(1);
  int spans = 0;
  for (int zoom = 0; zoom < 6; ++zoom) {
    for (int probe = 0; probe < 300; ++probe) {
      const QPoint pos(view.timeAreaLeft() + static_cast<int>(rng() % view.timeAreaWidth()),
                       view.contentTop() + static_cast<int>(rng() % 860));
      const TimelineView::Hit hit = view.hitTest(pos);
      const QString tip = view.tooltipText(pos);
      if (!hit.ref.valid()) {
        // Off the spans only a counter row has something to say: its value there.
        QCOMPARE(tip, view.counterTooltip(pos));
        continue;
      }
      ++spans;
      const profiler::SpanRec& s = view.index().span(hit.ref);
      const QString name = QString::fromStdString(view.index().name(s.nameCat));
      const QStringList lines = tip.split('\n');
      QCOMPARE(hit.count > 1 ? lines[1] : lines[0], name);
      const std::int64_t x = pos.x() - view.timeAreaLeft();
      if (hit.count == 1 && s.endNs - s.startNs >= view.axis().nsPerPx) {
        QVERIFY(view.axis().column(s.startNs) <= x && x <= view.axis().column(s.endNs));
      }
    }
    QTest::keyClick(&view, Qt::Key_W);
    QTest::keyClick(&view, Qt::Key_W);
    QTest::keyClick(&view, Qt::Key_W);
  }
  QVERIFY(spans > 100);
}

void TestTimelineView::shortcutListAndFolding() {
  TimelineView view;
  view.resize(1200, 600);
  view.setIndex(syntheticIndex(10'000));
  QVERIFY(!view.shortcutsShown());
  QTest::keyClick(&view, Qt::Key_Question);
  QVERIFY(view.shortcutsShown());
  QTest::keyClick(&view, Qt::Key_Escape);
  QVERIFY(!view.shortcutsShown());
  const std::size_t rows = view.rows().size();
  QCOMPARE(view.rows()[0].kind, profiler::TimelineRow::Kind::RankHeader);
  QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(20, view.contentTop() + 5));
  QVERIFY(view.rows().size() < rows);
  QCOMPARE(view.rows()[1].kind, profiler::TimelineRow::Kind::RankHeader);
  QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(20, view.contentTop() + 5));
  QCOMPARE(view.rows().size(), rows);
  view.setOrderByStage(true);  // ranks 0..3 run stages 0..3: the same order
  QCOMPARE(view.rows()[0].rank, 0);
}

void TestTimelineView::flowsSearchAndDoubleClick() {
  TimelineView view;
  view.resize(1200, 600);
  view.setIndex(syntheticIndex(10'000));
  const profiler::Flow flow = view.index().flows().front();
  view.selectSpan(flow.from);
  QTest::keyClick(&view, Qt::Key_BracketRight);  // to the receive
  QVERIFY(view.selectedSpan() == flow.to);
  QTest::keyClick(&view, Qt::Key_BracketLeft);  // back to the send
  QVERIFY(view.selectedSpan() == flow.from);
  // Search walks the hits in time order and wraps.
  const std::size_t n = view.setSearch("all_reduce", false);
  QCOMPARE(n, view.searchHits().size());
  QVERIFY(n > 2);
  QVERIFY(view.selectedSpan() == view.searchHits()[0].ref);
  view.nextHit(+1);
  QVERIFY(view.selectedSpan() == view.searchHits()[1].ref);
  view.nextHit(-1);
  view.nextHit(-1);
  QVERIFY(view.selectedSpan() == view.searchHits()[n - 1].ref);
  // Double-click on a drawn span zooms to it (with a 5% margin each side).
  view.fitAll();
  const profiler::TimelineRow* host = nullptr;
  for (const profiler::TimelineRow& r : view.rows()) {
    if (r.kind == profiler::TimelineRow::Kind::Level && view.index().lanes()[r.lane].name == "host")
      host = &r;
  }
  QVERIFY(host);
  const profiler::SpanRec& step = view.index().lanes()[host->lane].levels[0][0];
  const QPoint at(view.timeAreaLeft() + static_cast<int>(view.axis().x(step.startNs)) + 2,
                  view.contentTop() + host->y + 5);
  QTest::mouseDClick(&view, Qt::LeftButton, {}, at);
  const std::int64_t len = step.endNs - step.startNs;
  QCOMPARE(view.axis().startNs, step.startNs - len / 20);
}

void TestTimelineView::cancelDropsTheLoad() {
  SyntheticOptions o;
  o.events = 200'000;
  QTemporaryDir dir;
  const std::string path = dir.path().toStdString() + "/big.json";
  const profiler::TraceData trace = syntheticTrainingTrace(o);
  parascope::profiler::exportChromeTrace(trace, path);
  TimelineWindow window;
  QSignalSpy loaded(window.loader(), &TraceLoader::loaded);
  QSignalSpy cancelled(window.loader(), &TraceLoader::cancelled);
  window.openFiles({QString::fromStdString(path)});
  window.loader()->cancel();
  QCOMPARE(cancelled.count(), 1);
  QTRY_VERIFY_WITH_TIMEOUT(!window.loader()->running(), 60000);
  QTest::qWait(50);
  QCOMPARE(loaded.count(), 0);
  QCOMPARE(window.view()->message(), QString("Loading cancelled."));
  window.openFiles({QString::fromStdString(path)});  // a new load after a cancel goes through
  QVERIFY(loaded.wait(60000));
  QCOMPARE(window.view()->index().eventCount(), trace.events.size());
}

void TestTimelineView::liveAppendsFollowTheNewestTime() {
  SyntheticOptions o;
  o.events = 20'000;
  const profiler::TraceData trace = syntheticTrainingTrace(o);
  TimelineView view;
  view.resize(1200, 600);
  const std::size_t half = trace.events.size() / 2;
  view.appendEvents({trace.events.begin(), trace.events.begin() + half});
  QCOMPARE(view.axis().startNs, view.index().beginNs());
  view.appendEvents({trace.events.begin() + half, trace.events.end()});
  QCOMPARE(view.index().eventCount(), trace.events.size());
  QVERIFY(std::llabs(view.axis().time(view.timeAreaWidth()) - view.index().endNs()) <= 1);
  // Once the user pans away the view stays where it is.
  QTest::keyClick(&view, Qt::Key_A);
  const profiler::TimeAxis kept = view.axis();
  profiler::Event late;
  late.name = "late";
  late.startNs = view.index().endNs() + 1000;
  late.endNs = late.startNs + 500;
  view.appendEvents({late});
  QCOMPARE(view.axis().startNs, kept.startNs);
}

// A memory counter holds its last value to the end of the trace (live bytes at the end were not
// 0), its row shows its scale, and hovering it gives the value at that time.
void TestTimelineView::counterRowsShowTheirScaleAndValue() {
  constexpr std::int64_t kMs = 1'000'000;
  std::vector<profiler::Event> events(3);
  events[0].name = "train_step";
  events[0].category = profiler::Category::Step;
  events[0].startNs = 0;
  events[0].endNs = 10 * kMs;
  for (int i = 1; i < 3; ++i) {
    events[i].name = "parameter";
    events[i].kind = profiler::EventKind::Counter;
    events[i].category = profiler::Category::Memory;
    events[i].startNs = events[i].endNs = i * kMs;
    events[i].bytes = i == 1 ? 6'710'886 : 1 << 20;  // 6.4 MiB, then 1.0 MiB
  }
  TimelineView view;
  view.resize(1200, 400);
  view.grab();  // the resize reaches the view
  view.appendEvents(events);
  std::optional<profiler::TimelineRow> counter;  // a copy: painting may lay the rows out again
  for (const profiler::TimelineRow& row : view.rows())
    if (row.kind == profiler::TimelineRow::Kind::Counter) counter = row;
  QVERIFY(counter.has_value());
  const int y = view.contentTop() + counter->y + counter->height / 2;
  auto at = [&](std::int64_t ns) {
    return QPoint(view.timeAreaLeft() + static_cast<int>(view.axis().x(ns)), y);
  };
  QCOMPARE(view.tooltipText(at(kMs / 2)), QString());  // before its first sample
  QCOMPARE(view.tooltipText(at(3 * kMs / 2)),
           QStringLiteral("parameter 6.4 MiB\nrank 0, at %1\nlargest 6.4 MiB")
               .arg(QString::fromStdString(profiler::formatDuration(
                   view.axis().time(at(3 * kMs / 2).x() - view.timeAreaLeft())))));
  QVERIFY(view.tooltipText(at(9 * kMs)).startsWith(QStringLiteral("parameter 1.0 MiB\n")));
  // Painted to the trace's end: the row's floor at 9 ms is the track's colour, as at 3 ms.
  const QImage image = view.grab().toImage();
  const int floor = view.contentTop() + counter->y + counter->height - 3;
  QVERIFY(floor < image.height() && at(9 * kMs).x() < image.width());
  QCOMPARE(image.pixel(at(9 * kMs).x(), floor), image.pixel(at(3 * kMs).x(), floor));
  QVERIFY(image.pixel(at(9 * kMs).x(), floor) != image.pixel(at(kMs / 2).x(), floor));
}

// Keys, drags and zooming never leave the trace behind: at most a twentieth of the view lies
// past either end, and zoomed out the whole trace stays in view.
void TestTimelineView::panningStopsAtTheTraceEnds() {
  TimelineView view;
  view.resize(1200, 600);
  view.grab();
  view.setIndex(syntheticIndex(20'000));
  view.fitAll();
  const std::int64_t begin = view.index().beginNs(), end = view.index().endNs();
  auto window = [&] {
    return std::make_pair(view.axis().startNs, view.axis().time(view.timeAreaWidth()));
  };
  auto margin = [&] { return (window().second - window().first) / 20 + 1; };
  for (int i = 0; i < 10; ++i) QTest::keyClick(&view, Qt::Key_W);
  for (int i = 0; i < 500; ++i) QTest::keyClick(&view, Qt::Key_D);
  QVERIFY(window().second >= end);
  QVERIFY(window().second <= end + margin());
  for (int i = 0; i < 500; ++i) QTest::keyClick(&view, Qt::Key_A);
  QVERIFY(window().first <= begin);
  QVERIFY(window().first >= begin - margin());
  // A drag far to the left moves the view right, to the end and no further.
  const int y = view.contentTop() + 40;
  QTest::mousePress(&view, Qt::LeftButton, {}, QPoint(1100, y));
  for (int x = 1000; x >= 300; x -= 100) QTest::mouseMove(&view, QPoint(x, y));
  for (int i = 0; i < 20; ++i) {
    QTest::mouseMove(&view, QPoint(1100, y));
    QTest::mouseMove(&view, QPoint(300, y));
  }
  QTest::mouseRelease(&view, Qt::LeftButton, {}, QPoint(300, y));
  QVERIFY(window().second <= end + margin());
  // Zoomed far out, all of the trace is in view.
  for (int i = 0; i < 40; ++i) QTest::keyClick(&view, Qt::Key_S);
  QVERIFY(window().first <= begin);
  QVERIFY(window().second >= end);
}

// Opening another trace: no statistics of the old selection, a search counted in the new
// trace; the statistics table keeps its numbers in view however long a name is.
void TestTimelineView::anotherTraceReplacesStatisticsAndSearch() {
  TimelineWindow window;
  window.resize(1400, 800);
  window.view()->setIndex(syntheticIndex(20'000));
  window.show();
  TimelineView* view = window.view();
  auto* search = window.findChild<QLineEdit*>();
  QVERIFY(search);
  search->setText(QStringLiteral("F"));
  QTest::keyClick(search, Qt::Key_Return);
  auto hitLabel = [&] { return window.findChild<QLabel*>(QStringLiteral("hitCount"))->text(); };
  auto hitText = [&] {
    return QStringLiteral("%1 of %2").arg(view->currentHit() + 1).arg(view->searchHits().size());
  };
  const QString before = hitLabel();
  QCOMPARE(before, hitText());
  // Next goes to the next hit in time, on whichever rank.
  const std::size_t first = view->currentHit();
  for (auto* button : window.findChildren<QPushButton*>())
    if (button->text() == QStringLiteral("Next")) button->click();
  QCOMPARE(view->currentHit(), (first + 1) % view->searchHits().size());
  QCOMPARE(hitLabel(), hitText());
  QCOMPARE(view->selectedSpan(), view->searchHits()[view->currentHit()].ref);
  const QPoint a(view->timeAreaLeft() + 200, view->contentTop() + 25);
  const QPoint b(view->timeAreaLeft() + 700, view->contentTop() + 90);
  QTest::mousePress(view, Qt::LeftButton, Qt::ShiftModifier, a);
  QTest::mouseMove(view, b);
  QTest::mouseRelease(view, Qt::LeftButton, Qt::ShiftModifier, b);
  QVERIFY(window.statsModel()->rowCount() > 0);
  const QModelIndex name = window.statsModel()->index(0, SelectionStatsModel::Name);
  QCOMPARE(name.data(Qt::ToolTipRole), name.data(Qt::DisplayRole));

  view->setIndex(syntheticIndex(5'000));
  QCOMPARE(window.statsModel()->rowCount(), 0);
  QVERIFY(!view->searchHits().empty());
  QCOMPARE(hitLabel(), hitText());
  QVERIFY(hitLabel().section(QStringLiteral(" of "), 1) !=
          before.section(QStringLiteral(" of "), 1));

  auto* table = window.findChild<QTableView*>(QStringLiteral("statsTable"));
  QVERIFY(table);
  QCOMPARE(table->horizontalHeader()->sectionResizeMode(SelectionStatsModel::Name),
           QHeaderView::Stretch);
  QCOMPARE(table->horizontalHeader()->sectionResizeMode(SelectionStatsModel::Share),
           QHeaderView::ResizeToContents);
  QCOMPARE(table->textElideMode(), Qt::ElideMiddle);
}

// Idle time between two instructions of a step is a bubble; the gap between steps (a pause,
// data loading) is not.
void TestTimelineView::bubblesAreShadedWithinAStepOnly() {
  constexpr std::int64_t kMs = 1'000'000;
  std::vector<profiler::Event> events;
  auto instruction = [&](const char* name, int step, std::int64_t fromMs, std::int64_t toMs) {
    profiler::Event e;
    e.name = name;
    e.category = profiler::Category::Instruction;
    e.lane = parascope::trace::lane::kCompute;
    e.step = step;
    e.startNs = fromMs * kMs;
    e.endNs = toMs * kMs;
    events.push_back(e);
  };
  instruction("F", 1, 0, 2);
  instruction("B", 1, 6, 8);
  instruction("F", 2, 20, 22);
  TimelineView view;
  view.resize(1200, 300);
  view.grab();
  view.appendEvents(events);
  const QImage image = view.grab().toImage();
  int y = -1;
  for (const profiler::TimelineRow& r : view.rows())
    if (r.kind == profiler::TimelineRow::Kind::Level && y < 0)
      y = view.contentTop() + r.y + r.height / 2;
  QVERIFY(y >= 0);
  auto at = [&](std::int64_t ms) {
    return image.pixel(view.timeAreaLeft() + static_cast<int>(view.axis().x(ms * kMs)), y);
  };
  const QRgb background = image.pixel(view.timeAreaLeft() + 2, view.height() - 3);
  QVERIFY(at(1) != background);  // the span
  QVERIFY(at(4) != background);  // inside step 1: shaded
  QVERIFY(at(4) != at(1));
  QCOMPARE(at(14), background);  // between steps 1 and 2: not
}

// The selected span's details: its description, every span it lies in (innermost first) and the
// spans its flows join it to, as Perfetto's details panel.
void TestTimelineView::detailsShowParentsAndFlows() {
  TimelineWindow window;
  window.resize(1400, 800);
  window.view()->setIndex(syntheticIndex(20'000));
  TimelineView* view = window.view();
  const profiler::TimelineIndex& index = view->index();
  auto* details = window.findChild<QLabel*>(QStringLiteral("spanDetails"));
  QVERIFY(details);
  QCOMPARE(details->text(), QStringLiteral("Click a span to see its details."));
  // A nested span: the one enclosing it on the level above is named.
  profiler::SpanRef nested;
  const profiler::SpanRec* parent = nullptr;
  for (std::uint32_t l = 0; l < index.lanes().size() && !nested.valid(); ++l) {
    const profiler::Lane& lane = index.lanes()[l];
    if (lane.levels.size() < 2) continue;
    for (std::uint32_t i = 0; i < lane.levels[1].size() && !nested.valid(); ++i) {
      const profiler::SpanRec& child = lane.levels[1][i];
      for (const profiler::SpanRec& r : lane.levels[0]) {
        if (r.startNs <= child.startNs && r.endNs >= child.endNs) {
          nested = profiler::SpanRef{l, 1, i};
          parent = &r;
          break;
        }
      }
    }
  }
  QVERIFY(nested.valid());
  view->selectSpan(nested);
  QVERIFY2(details->text().startsWith(view->spanDescription(nested)), qPrintable(details->text()));
  QVERIFY2(
      details->text().contains(
          QStringLiteral("\n\nin: %1 (").arg(QString::fromStdString(index.name(parent->nameCat)))),
      qPrintable(details->text()));
  // A flow's source names its target.
  QVERIFY(!index.flows().empty());
  const profiler::Flow& flow = index.flows().front();
  view->selectSpan(flow.from);
  QVERIFY2(details->text().contains(
               QStringLiteral("flow to %1 (")
                   .arg(QString::fromStdString(index.name(index.span(flow.to).nameCat)))),
           qPrintable(details->text()));
  // A communication span's bus bandwidth, in the binary units of its bytes and in nccl-tests'.
  bool checked = false;
  for (std::uint32_t l = 0; l < index.lanes().size() && !checked; ++l) {
    const auto& level = index.lanes()[l].levels;
    for (std::uint32_t d = 0; d < level.size() && !checked; ++d) {
      for (std::uint32_t i = 0; i < level[d].size() && !checked; ++i) {
        const profiler::Event e = index.event(profiler::SpanRef{l, d, i});
        if (e.category != profiler::Category::Communication || e.bytes <= 0 || e.durationNs() <= 0)
          continue;
        const double gbps = static_cast<double>(e.bytes) / static_cast<double>(e.durationNs());
        QVERIFY(view->spanDescription(profiler::SpanRef{l, d, i})
                    .contains(QStringLiteral("\nbus bandwidth %1 GiB/s (%2 GB/s)")
                                  .arg(gbps * 1e9 / (1 << 30), 0, 'f', 2)
                                  .arg(gbps, 0, 'f', 2)));
        checked = true;
      }
    }
  }
  QVERIFY(checked);
  view->setIndex(syntheticIndex(1'000));
  QCOMPARE(details->text(), QStringLiteral("Click a span to see its details."));
}

void TestTimelineView::badFilesShowAMessage_data() {
  QTest::addColumn<QByteArray>("content");
  QTest::addColumn<QString>("expected");
  QTest::newRow("truncated") << QByteArray("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1")
                             << "truncated";
  QTest::newRow("corrupt") << QByteArray("\x1f\x8b\x08\x00garbage", 12) << "gzip";
  QTest::newRow("unsupported") << QByteArray("{\"displayTimeUnit\": \"ns\"}") << "traceEvents";
  QTest::newRow("not json") << QByteArray("hello") << "JSON";
  QTest::newRow("empty trace") << QByteArray("{\"traceEvents\": []}") << "no events";
  QTest::newRow("missing") << QByteArray() << "cannot open";
  // Special files are refused before they are read: opening a FIFO used to wait for a writer
  // forever (and closing the window then waited for the load).
  QTest::newRow("FIFO") << QByteArray("fifo")
                        << "': is a device, FIFO or socket, not a regular file";
  QTest::newRow("directory") << QByteArray("directory") << "': is a directory, not a regular file";
}

void TestTimelineView::badFilesShowAMessage() {
  QFETCH(QByteArray, content);
  QFETCH(QString, expected);
  QTemporaryDir dir;
  const QString path = dir.path() + "/bad.json";
  if (content == "fifo") {
    QCOMPARE(::mkfifo(path.toLocal8Bit().constData(), 0600), 0);
  } else if (content == "directory") {
    QVERIFY(QDir().mkdir(path));
  } else if (!content.isEmpty()) {
    writeFile(path, content.toStdString());
  }
  TimelineWindow window;
  QSignalSpy failed(window.loader(), &TraceLoader::failed);
  window.openFiles({path});
  QVERIFY(failed.wait(20000));
  const QString message = window.view()->message();
  QVERIFY2(message.contains(expected, Qt::CaseInsensitive), qPrintable(message));
  QVERIFY(message.contains("bad.json"));
}

// Two ranks of a GPU job (tests/tools/make_kineto_fixtures.py). Rank 0 holds 54 events: 15 GPU
// ops, their 15 launches, cudaEventRecord and cudaStreamSynchronize, 19 host operators and
// annotations, the profiler's span and its two instants ("M" metadata and "s"/"f" flow rows are
// not events); rank 1 has one kernel, its launch and its operator fewer: 51. Each rank draws 7
// lanes: its main and backward threads, the profiler's "Spans", "Traces" and "" rows, and
// streams 7 and 20. Every GPU op links to its launch: 15 + 14 flows; cudaEventRecord has no GPU
// op to link to.
void TestTimelineView::kinetoTracesLoad() {
  TimelineWindow window;
  QSignalSpy loaded(window.loader(), &TraceLoader::loaded);
  window.openFiles({QString::fromStdString(kKinetoFixtures + "gpu-rank0.json.gz"),
                    QString::fromStdString(kKinetoFixtures + "gpu-rank1.json.gz")});
  QVERIFY(loaded.wait(60000));
  const profiler::TimelineIndex& index = window.view()->index();
  QCOMPARE(index.eventCount(), std::size_t{54 + 51});
  std::map<std::int32_t, int> lanes, gpuLanes;
  for (const profiler::Lane& l : index.lanes()) {
    ++lanes[l.rank];
    if (parascope::trace::lane::isGpu(l.laneId)) ++gpuLanes[l.rank];
  }
  QCOMPARE(lanes, (std::map<std::int32_t, int>{{0, 7}, {1, 7}}));
  QCOMPARE(gpuLanes, (std::map<std::int32_t, int>{{0, 2}, {1, 2}}));
  QCOMPARE(index.flows().size(), std::size_t{15 + 14});  // CPU launches -> GPU ops
  QVERIFY(window.view()->message().isEmpty());
  // Kineto's args that no field holds: kept in the file's order, shown in the details.
  profiler::SpanRef kernel;
  for (std::uint32_t l = 0; l < index.lanes().size() && !kernel.valid(); ++l) {
    const profiler::Lane& lane = index.lanes()[l];
    for (std::uint32_t d = 0; d < lane.levels.size(); ++d) {
      for (std::uint32_t i = 0; i < lane.levels[d].size(); ++i) {
        if (lane.rank == 0 && index.name(lane.levels[d][i].nameCat) == "ampere_sgemm_128x64_nn")
          kernel = {l, d, i};
      }
    }
  }
  QVERIFY(kernel.valid());
  QCOMPARE(index.argsText(kernel),
           std::string_view(R"("External id":1003,"device":0,"context":1,"stream":7)"));
  window.view()->selectSpan(kernel);
  const QString details = window.findChild<QLabel*>(QStringLiteral("spanDetails"))->text();
  QVERIFY2(details.contains(QStringLiteral("\ncorrelation 1003\nExternal id: 1003\ndevice: 0\n"
                                           "context: 1\nstream: 7")),
           qPrintable(details));
}

// Every arg in the details panel; the tooltip shows the first twelve and counts the rest, and
// cuts a long value; a string shows without its quotes.
void TestTimelineView::argsInDetailsAndTooltips() {
  std::string args = R"({"ph":"X","name":"op","pid":1,"tid":1,"ts":1,"dur":5,"args":{"shape":")" +
                     std::string(300, 's') + "\"";
  for (int i = 0; i < 15; ++i) args += ",\"a" + std::to_string(i) + "\":" + std::to_string(i);
  args += "}}";
  const profiler::TraceData trace =
      parascope::profiler::importChromeTraceFromMemory("[" + args + "]", "args");
  TimelineView view;
  auto index = std::make_shared<profiler::TimelineIndex>();
  index->build(trace);
  view.setIndex(index);
  const profiler::SpanRef ref{0, 0, 0};
  QCOMPARE(index->name(index->span(ref).nameCat), std::string("op"));
  const QString all = view.spanDescription(ref);
  QVERIFY2(all.contains(QStringLiteral("\nshape: ") + QString(300, QLatin1Char('s')) +
                        QStringLiteral("\na0: 0\na1: 1\n")),
           qPrintable(all));
  QVERIFY(all.endsWith(QStringLiteral("\na14: 14")));
  const QString tip = view.spanDescription(ref, 12);
  const QString shape = QStringLiteral("shape: ") + QString(300, QLatin1Char('s'));
  QVERIFY2(tip.contains(QLatin1Char('\n') + shape.left(159) + QChar(0x2026) +
                        QStringLiteral("\na0: 0\n")),
           qPrintable(tip));
  QVERIFY2(tip.endsWith(QStringLiteral("\na10: 10\n… 4 more args (click the span to see all)")),
           qPrintable(tip));
  QVERIFY(!tip.contains(QStringLiteral("a11")));
}

void TestTimelineView::realKinetoTracesLoad() {
  if (!std::filesystem::exists(kKineto))
    QSKIP("../shared/traces/kineto is not beside the checkout");
  TimelineWindow window;
  QSignalSpy loaded(window.loader(), &TraceLoader::loaded);
  window.openFiles({QString::fromStdString(kKineto + "sampled-rank0.json.gz"),
                    QString::fromStdString(kKineto + "sampled-rank1.json.gz")});
  QVERIFY(loaded.wait(60000));
  const profiler::TimelineIndex& index = window.view()->index();
  QCOMPARE(index.eventCount(), std::size_t{4811 + 4676});  // every "X" row; the rest are "M"
  std::set<std::int32_t> ranks;
  bool gpu = false;
  for (const profiler::Lane& l : index.lanes()) {
    ranks.insert(l.rank);
    gpu = gpu || parascope::trace::lane::isGpu(l.laneId);
  }
  QCOMPARE(ranks.size(), std::size_t{2});
  QVERIFY(gpu);
  QVERIFY(!index.flows().empty());  // CPU launches -> GPU kernels
  QVERIFY(window.view()->message().isEmpty());
}

void TestTimelineView::exportsImages() {
  TimelineView view;
  view.resize(800, 400);
  view.setIndex(syntheticIndex(5'000));
  QTemporaryDir dir;
  const std::string png = dir.path().toStdString() + "/view.png";
  const std::string svg = dir.path().toStdString() + "/view.svg";
  exportViewPng(view, png);
  exportViewSvg(view, svg);
  QImage image(QString::fromStdString(png));
  QCOMPARE(image.size(), QSize(800, 400));
  std::ifstream in(svg);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  QVERIFY(text.find("<svg") != std::string::npos);
  QVERIFY(text.find("rank 0") != std::string::npos);
}

QTEST_MAIN(TestTimelineView)
#include "test_timeline_view.moc"

// A trace spanning more than 2^63 ns (the importer takes any int64 timestamps) and a counter
// the importer takes negative: the axis fits the whole span, counters sit on a scale from
// their minimum, and nothing overflows (under UBSan, any signed overflow fails the suite).
void TestTimelineView::tracesBeyondTheInt64RangeDraw() {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  profiler::TimeAxis axis;
  axis.fit(-5'000'000'000'000'000'000, 5'000'000'000'000'000'000, 1000);
  QCOMPARE(axis.nsPerPx, 1e16);
  QCOMPARE(axis.x(5'000'000'000'000'000'000), 1000.0);
  QCOMPARE(axis.time(1000), std::int64_t{5'000'000'000'000'000'000});
  QCOMPARE(axis.column(kMax), std::int64_t{1422});
  axis.fit(kMin, kMax, 1000);
  QCOMPARE(axis.x(kMax), 1000.0);
  QCOMPARE(axis.time(2000), kMax - 1023);  // past the range: clamped to it
  QCOMPARE(profiler::counterHeight(kMin, kMin, kMax), 0.0);
  QCOMPARE(profiler::counterHeight(kMax, kMin, kMax), 1.0);
  QCOMPARE(profiler::counterHeight(-5, -5, 10), 0.0);
  QCOMPARE(profiler::counterHeight(0, -5, 10), 1.0 / 3);
  QCOMPARE(profiler::counterHeight(10, 0, 10), 1.0);
  QCOMPARE(profiler::counterHeight(0, 0, 0), 0.0);

  const std::string json =
      R"({"traceEvents":[)"
      R"({"ph":"X","name":"first","pid":0,"tid":1,"ts":-5000000000000000,"dur":1},)"
      R"({"ph":"X","name":"last","pid":0,"tid":1,"ts":5000000000000000,"dur":1},)"
      R"({"ph":"C","name":"c","pid":0,"tid":1,"ts":-5000000000000000,"args":{"v":-9e18}},)"
      R"({"ph":"C","name":"c","pid":0,"tid":1,"ts":0,"args":{"v":9e18}},)"
      R"({"ph":"C","name":"c","pid":0,"tid":1,"ts":1,"args":{"v":-5}}]})";
  profiler::TraceData trace = parascope::profiler::importChromeTraceFromMemory(json, "wide");
  trace.sortByTime();
  auto index = std::make_shared<profiler::TimelineIndex>();
  index->build(trace);
  TimelineView view;
  view.resize(1200, 400);
  view.setIndex(index);
  view.fitAll();
  QCOMPARE(view.axis().startNs, std::int64_t{-5'000'000'000'000'000'000});
  QCOMPARE(view.axis().x(index->endNs()), double(view.timeAreaWidth()));
  auto render = [&view] {
    QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
    QPainter p(&image);
    view.render(p);
  };
  render();
  // Panned to either end: the trace stays in view, and it still draws.
  for (int i = 0; i < 20; ++i) QTest::keyClick(&view, Qt::Key_D);
  QVERIFY(view.axis().time(view.timeAreaWidth()) >= index->endNs());
  render();
  for (int i = 0; i < 40; ++i) QTest::keyClick(&view, Qt::Key_A);
  QVERIFY(view.axis().startNs <= index->beginNs());
  render();
  // Zoomed out as far as the view goes (not far enough for this trace): still on the trace.
  for (int i = 0; i < 200; ++i) QTest::keyClick(&view, Qt::Key_S);
  QVERIFY(view.axis().startNs <= index->endNs());
  QVERIFY(view.axis().time(view.timeAreaWidth()) >= index->beginNs());
  render();
}
