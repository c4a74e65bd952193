// The diff of two traces or segments: exact per-rank, per-step times per span name and per
// communication operation on small synthetic traces, segments picked by step, the model under
// QAbstractItemModelTester and sorted by a proxy, and the workbench's Compare tab diffing two
// opened trace files; recorded runs opened as traces (a GPT with parameter servers and the same
// GPT trained collectively) are rows of the Compare table, measured from their traces; and an
// opened trace's memory is predicted for the config it recorded, never for the panel's.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QHeaderView>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/config/ps_config.h"
#include "core/plan/memory_estimate.h"
#include "core/ps/ps_run.h"
#include "core/train/trainer.h"
#include "profiler/analysis/trace_diff.h"
#include "profiler/io/chrome_export.h"
#include "profiler/io/chrome_import.h"
#include "profiler/run_trace.h"
#include "ui/views/diff_model.h"
#include "ui/views/memory_peak_model.h"
#include "ui/views/memory_view.h"
#include "ui/views/segment_model.h"
#include "ui/workbench/workbench_window.h"

namespace profiler = parascope::profiler;
using parascope::profiler::Category;
using parascope::profiler::DiffRow;
using parascope::profiler::diffTraces;
using parascope::profiler::Event;
using parascope::profiler::TraceData;
using parascope::ui::DiffModel;

namespace {

constexpr std::int64_t kMs = 1'000'000;

void span(profiler::TraceData& t, const char* name, profiler::Category category, std::int32_t rank,
          std::int32_t step, std::int64_t fromMs, std::int64_t toMs) {
  profiler::Event e;
  e.name = t.strings.intern(name);
  e.category = category;
  e.rank = rank;
  e.step = step;
  e.lane = category == profiler::Category::Communication ? parascope::trace::lane::kCommunication
           : category == profiler::Category::Step        ? parascope::trace::lane::kHost
                                                         : parascope::trace::lane::kCompute;
  e.startNs = fromMs * kMs;
  e.endNs = toMs * kMs;
  t.events.push_back(e);
}

// Two ranks, two steps of 1000 ms each. Per rank and step: matmul 250 ms, allReduce 150 ms
// (all of it in step 0: 300 ms per rank there), train_step 1000 ms.
profiler::TraceData traceA() {
  profiler::TraceData t;
  t.worldSize = 2;
  for (int rank = 0; rank < 2; ++rank) {
    span(t, "train_step", profiler::Category::Step, rank, 0, 0, 1000);
    span(t, "train_step", profiler::Category::Step, rank, 1, 1000, 2000);
  }
  span(t, "matmul", profiler::Category::Compute, 0, 0, 100, 400);
  span(t, "matmul", profiler::Category::Compute, 1, 0, 100, 300);
  span(t, "matmul", profiler::Category::Compute, 0, 1, 1100, 1300);
  span(t, "matmul", profiler::Category::Compute, 1, 1, 1100, 1400);
  span(t, "allReduce", profiler::Category::Communication, 0, 0, 500, 900);
  span(t, "allReduce", profiler::Category::Communication, 1, 0, 500, 700);
  profiler::Event memory;  // a counter is no time spent
  memory.name = t.strings.intern("params");
  memory.category = profiler::Category::Memory;
  memory.kind = parascope::profiler::EventKind::Counter;
  memory.bytes = 4096;
  t.events.push_back(memory);
  t.sortByTime();
  return t;
}

// One rank, one step of 1500 ms: matmul 500, softmax 100, allGather 200; no allReduce.
profiler::TraceData traceB() {
  profiler::TraceData t;
  span(t, "train_step", profiler::Category::Step, 0, 0, 0, 1500);
  span(t, "matmul", profiler::Category::Compute, 0, 0, 0, 500);
  span(t, "softmax", profiler::Category::Compute, 0, 0, 600, 700);
  span(t, "allGather", profiler::Category::Communication, 0, 0, 800, 1000);
  t.sortByTime();
  return t;
}

struct Expected {
  bool communication;
  std::string name;
  double aMs, bMs;
};

void compareRows(const std::vector<profiler::DiffRow>& rows,
                 const std::vector<Expected>& expected) {
  QCOMPARE(rows.size(), expected.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    QCOMPARE(rows[i].communication, expected[i].communication);
    QCOMPARE(rows[i].name, expected[i].name);
    QCOMPARE(rows[i].aNs, expected[i].aMs * kMs);
    QCOMPARE(rows[i].bNs, expected[i].bMs * kMs);
  }
}

const std::vector<Expected> kAgainstB = {{false, "matmul", 250, 500},
                                         {false, "softmax", 0, 100},
                                         {false, "train_step", 1000, 1500},
                                         {true, "allGather", 0, 200},
                                         {true, "allReduce", 150, 0}};

}  // namespace

class TestDiffModel : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void twoTraces();
  void twoSegments();
  void aNameOnSomeRanksKeepsItsTime();
  void modelShowsAndSorts();
  void windowDiffsOpenedTraces();
  void recordedRunsAreRowsOfTheCompareTable();
  void openedTracesArePredictedByTheirOwnConfig();

 private:
  QTemporaryDir cacheHome_;
};

void TestDiffModel::initTestCase() {
  // The window test must not touch the user's QSettings.
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("ParaScopeTests"));
  QCoreApplication::setApplicationName(QStringLiteral("test_ui_diff"));
  // Nor the user's sgemm peak cache.
  QVERIFY(cacheHome_.isValid());
  qputenv("XDG_CACHE_HOME", cacheHome_.path().toUtf8());
}

void TestDiffModel::twoTraces() {
  const profiler::TraceData a = traceA(), b = traceB();
  const std::vector<profiler::DiffRow> rows = profiler::diffTraces({&a}, {&b});
  compareRows(rows, kAgainstB);
  QCOMPARE(rows[0].deltaNs(), 250.0 * kMs);
  QCOMPARE(rows[0].ratio(), 2.0);
  QCOMPARE(rows[2].ratio(), 1.5);
  QCOMPARE(rows[4].deltaNs(), -150.0 * kMs);
  QCOMPARE(rows[4].ratio(), 0.0);
  QVERIFY(std::isnan(rows[1].ratio()));
  DiffModel model;
  model.setRows(rows);
  const QModelIndex name = model.index(0, DiffModel::Name);
  QCOMPARE(name.data(Qt::ToolTipRole), name.data(Qt::DisplayRole));
}

// Steps of one trace as two segments: per rank and step of its own, so each step counts once.
void TestDiffModel::twoSegments() {
  const profiler::TraceData a = traceA();
  compareRows(profiler::diffTraces({&a, 0, 0}, {&a, 1, 1}), {{false, "matmul", 250, 250},
                                                             {false, "train_step", 1000, 1000},
                                                             {true, "allReduce", 300, 0}});
}

// A parameter-server run against a collective one: a server (rank 0) applies, two workers run
// forward and backward; the collective run's two ranks run forward and backward too. Each name's
// time is per rank that ran it, so the workers' passes compare as they ran, not spread over the
// server as well.
void TestDiffModel::aNameOnSomeRanksKeepsItsTime() {
  profiler::TraceData ps;
  span(ps, "apply", profiler::Category::Compute, 0, 0, 0, 600);
  for (int rank = 1; rank <= 2; ++rank) {
    span(ps, "train_step", profiler::Category::Step, rank, 0, 0, 1000);
    span(ps, "forward_backward", profiler::Category::Compute, rank, 0, 0, 300 * rank);
  }
  ps.sortByTime();
  profiler::TraceData collective;
  for (int rank = 0; rank < 2; ++rank) {
    span(collective, "train_step", profiler::Category::Step, rank, 0, 0, 800);
    span(collective, "forward_backward", profiler::Category::Compute, rank, 0, 0, 450);
  }
  collective.sortByTime();
  const std::vector<DiffRow> rows = diffTraces({&ps}, {&collective});
  compareRows(rows, {{false, "apply", 600, 0},
                     {false, "forward_backward", 450, 450},
                     {false, "train_step", 1000, 800}});
  QCOMPARE(rows[0].aRanks, 1);
  QCOMPARE(rows[0].bRanks, 0);
  QCOMPARE(rows[1].aRanks, 2);
  QCOMPARE(rows[1].bRanks, 2);
  DiffModel model;
  model.setRows(rows);
  QCOMPARE(model.index(0, DiffModel::Ranks).data().toString(), QStringLiteral("1 / 0"));
  QCOMPARE(model.index(1, DiffModel::Ranks).data().toString(), QStringLiteral("2 / 2"));
  QCOMPARE(model.headerData(DiffModel::Ranks, Qt::Horizontal).toString(),
           QStringLiteral("Ranks A / B"));
}

void TestDiffModel::modelShowsAndSorts() {
  DiffModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  const profiler::TraceData a = traceA(), b = traceB();
  model.setRows(profiler::diffTraces({&a}, {&b}));
  QCOMPARE(model.rowCount(), 5);
  QCOMPARE(model.columnCount(), int{DiffModel::Count});
  const auto text = [&](int row, int column) { return model.index(row, column).data().toString(); };
  QCOMPARE(text(0, DiffModel::Kind), QStringLiteral("span"));
  QCOMPARE(text(0, DiffModel::Name), QStringLiteral("matmul"));
  QCOMPARE(text(0, DiffModel::TimeA), QStringLiteral("250.000"));
  QCOMPARE(text(0, DiffModel::TimeB), QStringLiteral("500.000"));
  QCOMPARE(text(0, DiffModel::Delta), QStringLiteral("250.000"));
  QCOMPARE(text(0, DiffModel::Ratio), QStringLiteral("2.00×"));
  QCOMPARE(text(1, DiffModel::Ratio), QStringLiteral("—"));
  QCOMPARE(text(4, DiffModel::Kind), QStringLiteral("operation"));
  QCOMPARE(text(4, DiffModel::Delta), QStringLiteral("-150.000"));
  QCOMPARE(model.index(4, DiffModel::Delta).data(Qt::UserRole).toDouble(), -150.0 * kMs);

  QSortFilterProxyModel proxy;
  proxy.setSourceModel(&model);
  proxy.setSortRole(Qt::UserRole);
  proxy.sort(DiffModel::Delta, Qt::DescendingOrder);
  QStringList order;
  for (int r = 0; r < proxy.rowCount(); ++r)
    order << proxy.index(r, DiffModel::Name).data().toString();
  QCOMPARE(order, QStringList({"train_step", "matmul", "allGather", "softmax", "allReduce"}));
}

// Two trace files opened in the workbench become A and B of the Compare tab's diff.
void TestDiffModel::windowDiffsOpenedTraces() {
  QTemporaryDir dir;
  const QString fileA = dir.filePath(QStringLiteral("a.json"));
  const QString fileB = dir.filePath(QStringLiteral("b.json"));
  parascope::profiler::exportChromeTrace(traceA(), fileA.toStdString());
  parascope::profiler::exportChromeTrace(traceB(), fileB.toStdString());
  parascope::ui::WorkbenchWindow window;
  QSignalSpy shown(&window, &parascope::ui::WorkbenchWindow::traceShown);
  QSignalSpy diffed(&window, &parascope::ui::WorkbenchWindow::diffShown);
  QCOMPARE(window.diffHint(),
           QStringLiteral("Nothing to compare yet: each ended run's segments and each opened "
                          "trace can be picked as A and B."));
  window.showTraces({fileA});
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 30000);
  // The diff's and the analyses' names take what the numbers leave, elided, whole on hover
  // (the analyses' columns come with the shown trace).
  auto* diffView = window.findChild<QTableView*>(QStringLiteral("diffView"));
  QVERIFY(diffView);
  QCOMPARE(diffView->horizontalHeader()->sectionResizeMode(DiffModel::Name), QHeaderView::Stretch);
  QCOMPARE(diffView->textElideMode(), Qt::ElideMiddle);
  // The analyses: the column headed "name" where a table has one, else none stretched (the first
  // table starts with its rank).
  auto* analysisView = window.findChild<QTableView*>(QStringLiteral("analysisView"));
  QVERIFY(analysisView);
  QCOMPARE(analysisView->textElideMode(), Qt::ElideMiddle);
  auto* choice = window.findChild<QComboBox*>(QStringLiteral("analysisChoice"));
  QVERIFY(choice);
  bool named = false;
  for (int t = 0; t < choice->count(); ++t) {
    choice->setCurrentIndex(t);
    const QAbstractItemModel* model = analysisView->model();
    for (int c = 0; c < model->columnCount(); ++c) {
      const bool isName = model->headerData(c, Qt::Horizontal).toString() == QStringLiteral("name");
      named = named || isName;
      QCOMPARE(analysisView->horizontalHeader()->sectionResizeMode(c),
               isName ? QHeaderView::Stretch : QHeaderView::ResizeToContents);
    }
  }
  QVERIFY(named);
  QCOMPARE(diffed.count(), 0);  // one source: nothing to compare yet, and the tab says so
  QCOMPARE(window.diffHint(),
           QStringLiteral("Only one source so far (Trace a.json): a diff needs two. Switch the "
                          "strategy during a run, run again or open a trace."));
  window.showTraces({fileB});
  QTRY_COMPARE_WITH_TIMEOUT(diffed.count(), 1, 30000);
  QCOMPARE(window.diffHint(), QString());
  QCOMPARE(window.diffSources(),
           QStringList({QStringLiteral("Trace a.json"), QStringLiteral("Trace b.json")}));
  compareRows(window.diffModel()->rows(), kAgainstB);
  QVERIFY2(window.errorText().isEmpty(), qPrintable(window.errorText()));
  // Opened traces are read once: analysed, they stay in memory and the diffs below read no file.
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 2, 30000);
  QVERIFY(QFile::remove(fileA));
  QVERIFY(QFile::remove(fileB));
  // The other way round, picked by index: the labels follow at once, the previous pair's rows
  // go, and the tab says what it is comparing until the new rows come.
  window.compareSources(1, 0);
  QCOMPARE(window.findChild<QComboBox*>(QStringLiteral("diffA"))->currentIndex(), 1);
  QCOMPARE(window.findChild<QComboBox*>(QStringLiteral("diffB"))->currentIndex(), 0);
  QVERIFY(window.diffModel()->rows().empty());
  QCOMPARE(window.diffHint(),
           QStringLiteral("Comparing Trace b.json (A) with Trace a.json (B)\u2026"));
  QTRY_COMPARE_WITH_TIMEOUT(diffed.count(), 2, 30000);
  QCOMPARE(window.diffHint(), QString());
  QCOMPARE(window.diffModel()->rows()[0].aNs, 500.0 * kMs);
  QCOMPARE(window.diffModel()->rows()[0].bNs, 250.0 * kMs);
  // A picked as B too: every difference is zero, and the tab says why.
  window.findChild<QComboBox*>(QStringLiteral("diffB"))->setCurrentIndex(1);
  QCOMPARE(window.diffHint(),
           QStringLiteral("A and B are the same source: pick two different ones."));
  QTRY_COMPARE_WITH_TIMEOUT(diffed.count(), 3, 30000);
  for (const profiler::DiffRow& row : window.diffModel()->rows()) QCOMPARE(row.aNs, row.bNs);
}

namespace {

// The small GPT the recorded runs train, on the fortunes, in micro-batches of four.
nlohmann::json smallGpt() {
  return {{"model",
           {{"type", "gpt"},
            {"vocab_size", 256},
            {"context_length", 16},
            {"hidden_size", 32},
            {"num_attention_heads", 2},
            {"num_layers", 2},
            {"mlp_ratio", 4}}},
          {"data", {{"type", "text"}, {"path", "/usr/share/games/fortunes"}}},
          {"train_micro_batch_size_per_gpu", 4}};
}

// The small GPT trained with parameter servers in `mode`, its trace written to `path` as
// `train --trace` writes it.
void recordGptRun(const std::string& mode, const QString& path) {
  nlohmann::json doc = smallGpt();
  doc.update({{"parameter_server", {{"mode", mode}, {"worker_num", 2}}},
              {"train_iters", 4},
              {"eval_iters", 1}});
  const parascope::PsConfig c = parascope::parsePsConfig(doc);
  parascope::profiler::RunTrace trace(path.toStdString());
  trace.describe(doc);
  trace.begin(nullptr, c.ps.ranks());
  (void)parascope::ps::runPsThreads(c, {});
  trace.end(-1);
}

}  // namespace

// Tokens/s is the config's tokens per step over the steps' wall time (first start to last end of
// their step spans over all ranks), as a session's step reports give it; a trace records no
// losses, so the loss trend has no value. The diff shows who ran what: the servers' work on one
// rank, the workers' passes on two in both runs.
void TestDiffModel::recordedRunsAreRowsOfTheCompareTable() {
  QTemporaryDir dir;
  const QString ps = dir.filePath(QStringLiteral("ps.json"));
  const QString collective = dir.filePath(QStringLiteral("collective.json"));
  recordGptRun("sync", ps);
  recordGptRun("collective", collective);
  parascope::ui::WorkbenchWindow window;
  QSignalSpy shown(&window, &parascope::ui::WorkbenchWindow::traceShown);
  QSignalSpy diffed(&window, &parascope::ui::WorkbenchWindow::diffShown);
  window.showTraces({ps});
  window.showTraces({collective});
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 2, 60000);
  QTRY_COMPARE_WITH_TIMEOUT(diffed.count(), 1, 60000);
  using S = parascope::ui::SegmentModel;
  const S* table = window.segmentModel();
  QCOMPARE(table->rowCount(), 2);
  QCOMPARE(table->index(0, S::Strategy).data().toString(),
           QStringLiteral("Trace ps.json: parameter servers sync, 1 + 2"));
  QCOMPARE(table->index(1, S::Strategy).data().toString(),
           QStringLiteral("Trace collective.json: collective, 2 workers"));
  QCOMPARE(table->value(0, S::Ranks), 3.0);
  QCOMPARE(table->value(1, S::Ranks), 2.0);
  const QString files[] = {ps, collective};
  for (int row = 0; row < 2; ++row) {
    const parascope::profiler::TraceData trace =
        parascope::profiler::importChromeTraces({files[row].toStdString()});
    std::map<std::int32_t, std::pair<std::int64_t, std::int64_t>> windows;
    for (const Event& e : trace.events) {
      if (e.category != Category::Step || e.kind != parascope::profiler::EventKind::Span) continue;
      auto [it, fresh] = windows.try_emplace(e.step, e.startNs, e.endNs);
      it->second.first = std::min(it->second.first, e.startNs);
      it->second.second = std::max(it->second.second, e.endNs);
    }
    QCOMPARE(windows.size(), std::size_t{4});
    double seconds = 0;
    for (const auto& [step, w] : windows) seconds += static_cast<double>(w.second - w.first) * 1e-9;
    QCOMPARE(table->value(row, S::Steps), 4.0);
    QCOMPARE(table->value(row, S::TokensPerSecond), 4 * 2 * 4 * 16 / seconds);
    QVERIFY(std::isnan(table->value(row, S::LossTrend)));
    // At least each worker's parameters and gradients (the GPT's 4 bytes each, twice).
    QVERIFY(table->value(row, S::PeakMemory) > 2 * 4 * 30000.0);
  }
  // The server holds both tables in chunks of 4096 rows of 32 values and Adam's 66 floats of
  // state: its memory is the parameter-server row's peak.
  QVERIFY2(table->value(0, S::PeakMemory) >= 2 * 4096 * (32 + 66) * 4.0,
           qPrintable(QString::number(table->value(0, S::PeakMemory))));
  std::map<std::string, DiffRow> rows;
  for (const DiffRow& r : window.diffModel()->rows()) rows[r.name] = r;
  QCOMPARE(rows.at("forward_backward").aRanks, 2);
  QCOMPARE(rows.at("forward_backward").bRanks, 2);
  QCOMPARE(rows.at("serve_pull").aRanks, 1);
  QCOMPARE(rows.at("serve_pull").bRanks, 0);
  QCOMPARE(rows.at("pull").aRanks, 2);
  QCOMPARE(rows.at("allreduce_update").bRanks, 2);
}

// The Memory tab's predictions beside an opened trace: those of the config the trace recorded
// (here a GPT far smaller than the strategy panel's GPT-mini), and none for a trace whose run
// has no collective config (parameter servers): the panel's strategy is not what it ran.
void TestDiffModel::openedTracesArePredictedByTheirOwnConfig() {
  QTemporaryDir dir;
  const QString small = dir.filePath(QStringLiteral("small.json"));
  const QString ps = dir.filePath(QStringLiteral("ps.json"));
  nlohmann::json doc = smallGpt();
  doc["train_iters"] = 2;
  const parascope::TrainConfig config = parascope::parseTrainConfig(doc);
  {
    parascope::profiler::RunTrace trace(small.toStdString());
    trace.describe(doc);
    trace.begin(nullptr, 1);
    parascope::Trainer trainer(config);
    trainer.step();
    trainer.step();
    trace.end(-1);
  }
  recordGptRun("sync", ps);

  parascope::ui::WorkbenchWindow window;
  QSignalSpy shown(&window, &parascope::ui::WorkbenchWindow::traceShown);
  using M = parascope::ui::MemoryPeakModel;
  const M* peaks = window.memoryView()->peakModel();
  // The parameter row's prediction; none without a parameter row.
  auto predictedParameters = [&]() -> std::optional<double> {
    for (int row = 0; row < peaks->rowCount(); ++row) {
      if (peaks->index(row, M::Category).data(Qt::UserRole).toString() == "parameter")
        return peaks->index(row, M::Predicted).data(Qt::UserRole).toDouble();
    }
    return std::nullopt;
  };
  window.showTraces({small});
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
  const std::vector<parascope::MemoryEstimate> estimate = parascope::estimateRankMemory(
      config, parascope::dataBytesInMemory(config.data), config.parallel.worldSize());
  double expected = -1;
  for (const parascope::MemoryItem& item : estimate.at(0).items)
    if (item.name == "parameters") expected = item.bytes;
  QVERIFY(expected > 0);
  QCOMPARE(predictedParameters(), std::optional<double>(expected));

  window.showTraces({ps});
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 2, 60000);
  QVERIFY(peaks->rowCount() > 0);
  for (int row = 0; row < peaks->rowCount(); ++row)
    QCOMPARE(peaks->index(row, M::Predicted).data().toString(), QString());
}

QTEST_MAIN(TestDiffModel)
#include "test_diff_model.moc"
