// Bookmarks of the timeline: the list's order, steps and checks, its JSON form read back as
// input, B / "," / "." in the view, the flags on the ruler and their tooltip, the Bookmarks menu,
// and bookmarks coming back when the same trace files are opened again (and only then), with a
// refused settings entry dropped. Runs under QT_QPA_PLATFORM=offscreen.
#include <QImage>
#include <QMenu>
#include <QMenuBar>
#include <QPainter>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "core/common/error.h"
#include "profiler/io/chrome_export.h"
#include "profiler/synthetic_trace.h"
#include "tests/input_probes.h"
#include "ui/timeline/timeline_window.h"
#include "ui/workbench/workbench_settings.h"

namespace profiler = parascope::profiler;
using namespace parascope::ui;
using parascope::UserError;
using parascope::profiler::SyntheticOptions;
using parascope::profiler::syntheticTrainingTrace;

namespace {

// The UserError's message as the expected strings are written (tests/input_probes.h).
template <class F>
std::string refusal(F&& f) {
  return parascope::test::userErrorOf(std::forward<F>(f)).toStdString();
}

std::vector<std::int64_t> timesOf(const profiler::BookmarkList& list) {
  std::vector<std::int64_t> out;
  for (const profiler::Bookmark& b : list.all()) out.push_back(b.ns);
  return out;
}

std::vector<std::string> namesOf(const profiler::BookmarkList& list) {
  std::vector<std::string> out;
  for (const profiler::Bookmark& b : list.all()) out.push_back(b.name);
  return out;
}

std::shared_ptr<profiler::TimelineIndex> syntheticIndex() {
  SyntheticOptions o;
  o.events = 5'000;
  o.ranks = 2;
  auto index = std::make_shared<profiler::TimelineIndex>();
  index->build(syntheticTrainingTrace(o));
  return index;
}

// Opens `paths` in `window` and waits for the load.
bool openAndWait(TimelineWindow& window, const QStringList& paths) {
  QSignalSpy loaded(window.loader(), &TraceLoader::loaded);
  window.openFiles(paths);
  return loaded.wait(30000);
}

}  // namespace

class TestBookmarks : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ParaScopeTests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_ui_bookmarks"));
    QFile::remove(settingsPath());
  }

  // Time order (a bookmark at a time already marked goes after the earlier one), default names
  // counting every bookmark made, strict steps either way, rename and remove.
  void listKeepsTimeOrderAndSteps() {
    profiler::BookmarkList list;
    QCOMPARE(list.add(300, ""), std::size_t{0});
    QCOMPARE(list.add(100, "warm-up"), std::size_t{0});
    QCOMPARE(list.add(300, ""), std::size_t{2});
    QCOMPARE(timesOf(list), (std::vector<std::int64_t>{100, 300, 300}));
    QCOMPARE(namesOf(list), (std::vector<std::string>{"warm-up", "Bookmark 1", "Bookmark 3"}));
    // The place of the bookmark a step finds, -1 for none.
    const auto step = [&](std::int64_t ns, int direction) {
      const std::optional<std::size_t> i = list.next(ns, direction);
      return i ? static_cast<int>(*i) : -1;
    };
    QCOMPARE(step(100, +1), 1);
    QCOMPARE(step(99, +1), 0);
    QCOMPARE(step(300, +1), -1);
    QCOMPARE(step(300, -1), 0);
    QCOMPARE(step(301, -1), 2);
    QCOMPARE(step(100, -1), -1);
    list.rename(1, "step 2");
    list.remove(0);
    QCOMPARE(namesOf(list), (std::vector<std::string>{"step 2", "Bookmark 3"}));
    QCOMPARE(list.add(-5, ""), std::size_t{0});
    QCOMPARE(list.all().front().name, std::string("Bookmark 4"));
  }

  // Each refusal names what was wrong and what is allowed, and changes nothing.
  void listRefusesBadNamesAndTooMany() {
    profiler::BookmarkList list;
    list.add(1, "a");
    QCOMPARE(refusal([&] { list.add(2, std::string(101, 'x')); }),
             std::string("bookmark: a name of 101 bytes, more than the 100 a bookmark's name may "
                         "have"));
    QCOMPARE(refusal([&] { list.add(2, "two\nlines"); }),
             std::string("bookmark: a name with a control character (tab, newline, ...)"));
    QCOMPARE(refusal([&] { list.add(2, "\xc3("); }),
             std::string("bookmark: a name that is not UTF-8 text"));
    QCOMPARE(refusal([&] { list.rename(0, ""); }),
             std::string("bookmark: an empty name; give it at least one character"));
    QCOMPARE(namesOf(list), std::vector<std::string>{"a"});
    list.add(2, std::string(100, 'x'));  // the most a name may have
    list.add(3, "\xc3\xa9tape");         // UTF-8 is text
    while (list.size() < profiler::kMaxBookmarks) list.add(4, "");
    QCOMPARE(refusal([&] { list.add(5, ""); }),
             std::string("bookmark: this trace has 200 bookmarks, the most it may have; remove "
                         "one first"));
    QCOMPARE(list.size(), profiler::kMaxBookmarks);
  }

  // toJson reads back to the same list; anything else is refused naming the entry.
  void jsonReadsBackAndRefusesBadInput() {
    profiler::BookmarkList list;
    list.add(-7, "before");
    list.add(INT64_MAX, "end");
    list.add(42, "");
    const profiler::BookmarkList back = profiler::BookmarkList::fromJson(list.toJson(), "file");
    QCOMPARE(timesOf(back), timesOf(list));
    QCOMPARE(namesOf(back), namesOf(list));
    QCOMPARE(list.toJson().dump(),
             std::string(R"([{"name":"before","time_ns":-7},{"name":"Bookmark 3","time_ns":42},)"
                         R"({"name":"end","time_ns":9223372036854775807}])"));
    const auto bad = [](const char* text) {
      return refusal(
          [&] { profiler::BookmarkList::fromJson(nlohmann::json::parse(text), "file"); });
    };
    QCOMPARE(bad(R"({"time_ns": 1})"), std::string("file: not a JSON array of bookmarks"));
    QCOMPARE(bad(R"([3])"),
             std::string(R"(file: bookmark 0: not an object of exactly "time_ns" and "name")"));
    QCOMPARE(bad(R"([{"time_ns": 1, "name": "a", "colour": 3}])"),
             std::string(R"(file: bookmark 0: not an object of exactly "time_ns" and "name")"));
    QCOMPARE(bad(R"([{"time_ns": 1, "title": "a"}])"),
             std::string(R"(file: bookmark 0 has no "name")"));
    QCOMPARE(bad(R"([{"time_ns": 1, "name": "a"}, {"time_ns": "2", "name": "b"}])"),
             std::string(R"(file: bookmark 1: "time_ns" must be an integer of nanoseconds )"
                         R"(within +-2^63)"));
    QCOMPARE(bad(R"([{"time_ns": 9223372036854775808, "name": "b"}])"),
             std::string(R"(file: bookmark 0: "time_ns" must be an integer of nanoseconds )"
                         R"(within +-2^63)"));
    QCOMPARE(bad(R"([{"time_ns": 1.5, "name": "b"}])"),
             std::string(R"(file: bookmark 0: "time_ns" must be an integer of nanoseconds )"
                         R"(within +-2^63)"));
    QCOMPARE(bad(R"([{"time_ns": 1, "name": ""}])"),
             std::string(R"(file: bookmark 0: "name" must be a non-empty string)"));
    QCOMPARE(bad(R"([{"time_ns": 1, "name": "a\u0007b"}])"),
             std::string("file: bookmark 0: a name with a control character (tab, newline, ...)"));
    nlohmann::json many = nlohmann::json::array();
    for (int i = 0; i < 201; ++i) many.push_back({{"time_ns", i}, {"name", "m"}});
    QCOMPARE(refusal([&] { profiler::BookmarkList::fromJson(many, "file"); }),
             std::string("file: 201 bookmarks, more than the 200 a trace may have"));
  }

  // B marks the time under the pointer (the view's centre when the pointer is elsewhere); "."
  // and "," centre the next and previous bookmark, keeping the zoom; the ruler shows a flag whose
  // tooltip names it; another trace clears them.
  void viewMarksStepsAndDraws() {
    TimelineView view;
    view.resize(1200, 500);
    view.setIndex(syntheticIndex());
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QSignalSpy changed(&view, &TimelineView::bookmarksChanged);
    const int left = view.timeAreaLeft();
    QTest::mouseMove(&view, QPoint(left + 100, view.contentTop() + 40));
    QTest::keyClick(&view, Qt::Key_B);
    QTest::mouseMove(&view, QPoint(left + 700, view.contentTop() + 40));
    QTest::keyClick(&view, Qt::Key_B);
    QCOMPARE(changed.count(), 2);
    const profiler::TimeAxis axis = view.axis();
    QCOMPARE(timesOf(view.bookmarks()),
             (std::vector<std::int64_t>{axis.time(100), axis.time(700)}));
    QCOMPARE(namesOf(view.bookmarks()), (std::vector<std::string>{"Bookmark 1", "Bookmark 2"}));
    QTest::mouseMove(&view, QPoint(10, view.contentTop() + 40));  // over the labels
    QTest::keyClick(&view, Qt::Key_B);
    QCOMPARE(view.bookmarks().all()[1].ns, axis.time(view.timeAreaWidth() / 2.0));

    // The flag: the bookmark colour on the ruler at its column, its name in the tooltip.
    QImage image(view.size(), QImage::Format_RGB32);
    {
      QPainter p(&image);
      view.render(p);
    }
    const QColor purple(0x8e, 0x44, 0xad);
    const int x = left + static_cast<int>(axis.column(view.bookmarks().all()[0].ns));
    QCOMPARE(image.pixelColor(x, 3), purple);
    // The dashed line down the rows: about half the column's pixels below the ruler.
    int dashed = 0;
    for (int y = view.contentTop(); y < image.height(); ++y)
      dashed += image.pixelColor(x, y) == purple;
    const int rows = image.height() - view.contentTop();
    QVERIFY2(dashed > rows / 4 && dashed < rows * 3 / 4, qPrintable(QString::number(dashed)));
    const QString tip = view.tooltipText(QPoint(x + 2, 5));
    QVERIFY2(tip.startsWith(QStringLiteral("Bookmark 1\nat ")), qPrintable(tip));
    QVERIFY2(tip.endsWith(QStringLiteral("(bookmark 1 of 3)")), qPrintable(tip));
    QVERIFY(view.tooltipText(QPoint(left + 400, 5)).isEmpty());

    // Steps: from the view's centre to the next one after it, centred, the zoom kept. Zoomed in
    // first, so that centring moves the view within the trace.
    for (int i = 0; i < 5; ++i) QTest::keyClick(&view, Qt::Key_W);
    const double nsPerPx = view.axis().nsPerPx;
    const std::int64_t last = view.bookmarks().all()[2].ns;
    QTest::keyClick(&view, Qt::Key_Period);
    QCOMPARE(view.axis().nsPerPx, nsPerPx);
    QVERIFY(std::llabs(view.axis().time(view.timeAreaWidth() / 2.0) - last) <= nsPerPx);
    QVERIFY(!view.nextBookmark(+1));  // none after the last
    QTest::keyClick(&view, Qt::Key_Comma);
    QVERIFY(std::llabs(view.axis().time(view.timeAreaWidth() / 2.0) -
                       view.bookmarks().all()[1].ns) <= nsPerPx);

    view.setIndex(syntheticIndex());
    QVERIFY(view.bookmarks().empty());
    QCOMPARE(changed.count(), 3);  // clearing for a new trace is not an edit to save
  }

  // Bookmarks made on a trace opened from files come back when the same files are opened again,
  // in another window; other files have none; the menu lists them in time order.
  void bookmarksComeBackWithTheirFiles() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    SyntheticOptions o;
    o.events = 2'000;
    o.ranks = 2;
    const QString a = dir.filePath(QStringLiteral("a.json"));
    const QString b = dir.filePath(QStringLiteral("b.json"));
    parascope::profiler::exportChromeTrace(syntheticTrainingTrace(o), a.toStdString());
    parascope::profiler::exportChromeTrace(syntheticTrainingTrace(o), b.toStdString());
    std::int64_t marked = 0;
    {
      TimelineWindow window;
      QVERIFY(openAndWait(window, {a}));
      TimelineView* view = window.view();
      marked = view->index().beginNs() + 1000;
      view->addBookmark(view->index().endNs(), "end");
      view->addBookmark(marked, "");
      view->renameBookmark(0, "first kernel");
      auto* menu = window.menuBar()->findChild<QMenu*>(QStringLiteral("bookmarksMenu"));
      QVERIFY(menu);
      emit menu->aboutToShow();
      QStringList titles;
      for (QAction* action : menu->actions())
        if (action->menu()) titles << action->text();
      QCOMPARE(titles.size(), 2);
      QVERIFY2(titles[0].startsWith(QStringLiteral("first kernel — ")), qPrintable(titles[0]));
      QVERIFY2(titles[1].startsWith(QStringLiteral("end — ")), qPrintable(titles[1]));
    }
    TimelineWindow again;
    QVERIFY(openAndWait(again, {b}));
    QVERIFY(again.view()->bookmarks().empty());
    QVERIFY(openAndWait(again, {a}));
    QCOMPARE(namesOf(again.view()->bookmarks()), (std::vector<std::string>{"first kernel", "end"}));
    QCOMPARE(again.view()->bookmarks().all()[0].ns, marked);
    // Removing the last one removes the entry.
    again.view()->removeBookmark(1);
    again.view()->removeBookmark(0);
    QVERIFY(readBookmarks({a}).empty());
    auto settings = openSettings();
    settings->beginGroup(QStringLiteral("bookmarks"));
    QVERIFY(settings->childKeys().isEmpty());
  }

  // A saved entry that is not what the workbench writes is dropped, and removed from the file;
  // the trace opens without bookmarks.
  void aRefusedEntryIsDropped() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString trace = dir.filePath(QStringLiteral("t.json"));
    profiler::BookmarkList one;
    one.add(5, "kept");
    writeBookmarks({trace}, one);
    QCOMPARE(namesOf(readBookmarks({trace})), std::vector<std::string>{"kept"});
    // Rewrite the entry with a bookmark whose name holds an escape sequence.
    auto settings = openSettings();
    settings->beginGroup(QStringLiteral("bookmarks"));
    const QStringList keys = settings->childKeys();
    QCOMPARE(keys.size(), 1);
    nlohmann::json entry = nlohmann::json::parse(settings->value(keys[0]).toString().toStdString());
    entry["bookmarks"][0]["name"] = "\x1b[31mred";
    settings->setValue(keys[0], QString::fromStdString(entry.dump()));
    settings->endGroup();
    settings.reset();
    QVERIFY(readBookmarks({trace}).empty());
    settings = openSettings();
    settings->beginGroup(QStringLiteral("bookmarks"));
    QVERIFY(settings->childKeys().isEmpty());
  }

  // At most kMaxBookmarkedTraces sets of traces keep bookmarks: writing one more drops the set
  // written longest ago.
  void theOldestSetsGoPastTheBound() {
    QFile::remove(settingsPath());
    profiler::BookmarkList one;
    one.add(1, "m");
    for (int i = 0; i <= kMaxBookmarkedTraces; ++i) {
      writeBookmarks({QStringLiteral("/traces/%1.json").arg(i)}, one);
      QTest::qWait(2);  // a later write is a later millisecond
    }
    QVERIFY(readBookmarks({QStringLiteral("/traces/0.json")}).empty());
    QCOMPARE(readBookmarks({QStringLiteral("/traces/1.json")}).size(), std::size_t{1});
    QCOMPARE(readBookmarks({QStringLiteral("/traces/%1.json").arg(kMaxBookmarkedTraces)}).size(),
             std::size_t{1});
    auto settings = openSettings();
    settings->beginGroup(QStringLiteral("bookmarks"));
    QCOMPARE(settings->childKeys().size(), kMaxBookmarkedTraces);
  }
};

QTEST_MAIN(TestBookmarks)
#include "test_bookmarks.moc"
