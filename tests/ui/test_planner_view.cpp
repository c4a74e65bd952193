// The Planner tab: its table holds exactly the best the search finds (the CLI's ranking), in
// step order while rows arrive, filtered by key=value; a selected candidate shows its step split,
// its memory by category and its predicted step with one rank per pipeline rank; Apply puts the
// panel's model with the candidate's strategy into the strategy panel; a new search replaces
// the one running; bad input is one line before any work, and the table is emptied rather than
// left under a search it does not belong to.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QtTest>
#include <set>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/config/config.h"
#include "core/plan/search.h"
#include "core/plan/system.h"
#include "core/session/switch_plan.h"
#include "tests/input_probes.h"
#include "ui/timeline/timeline_view.h"
#include "ui/views/plan_candidate_model.h"
#include "ui/views/planner_view.h"
#include "ui/workbench/live_charts.h"
#include "ui/workbench/strategy_panel.h"
#include "ui/workbench/workbench_window.h"

using namespace parascope;
using parascope::ui::PlanCandidateModel;
using parascope::ui::PlanFilterModel;
using parascope::ui::PlannerView;

namespace {

nlohmann::json defaultConfig() {
  return readJsonFile(PARASCOPE_SOURCE_DIR "/resources/configs/default.json");
}

PlanEstimate estimateOf(const std::vector<std::string>& settings, double stepSeconds) {
  nlohmann::json doc = defaultConfig();
  for (const std::string& s : settings) applyOverride(doc, s);
  PlanEstimate e;
  e.config = parseTrainConfig(doc, 8);
  e.stepSeconds = stepSeconds;
  return e;
}

// The planner on the panel's model (the default config), DGX A100, `gpus` GPUs.
void choosePanelModel(PlannerView& view, int gpus) {
  view.setPanelDocument([] { return defaultConfig(); });
  view.modelChoice()->setCurrentIndex(view.modelChoice()->findData(QString()));
  view.systemChoice()->setCurrentIndex(view.systemChoice()->findData(QStringLiteral("a100-80gb")));
  view.gpuCount()->setValue(gpus);
}

// Searches and waits for the end; returns whether it failed.
bool planAndWait(PlannerView& view) {
  QSignalSpy ended(&view, &PlannerView::searchEnded);
  view.plan();
  if (ended.isEmpty() && !ended.wait(60000)) return true;
  return ended.front().front().toBool();
}

PlanSearchRequest panelRequest(int gpus, const std::vector<std::string>& settings = {}) {
  PlanSearchRequest r;
  r.document = defaultConfig();
  for (const std::string& s : settings) applyPlanSetting(r, s);
  r.system = readSystemNamed("a100-80gb");
  r.gpus = gpus;
  r.top = 50;
  return r;
}

}  // namespace

class TestPlannerView : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ParaScopeTests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_ui_planner"));
  }

  // Rows take their place by step as they arrive (ties after the earlier one), "#" is the place,
  // and the filter keeps the rows with every key=value given; a bad term names the keys.
  void candidatesRankAndFilter() {
    PlanCandidateModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.add({estimateOf({"tensor_model_parallel_size=2"}, 3.0),
               estimateOf({"pipeline_model_parallel_size=2"}, 1.0)});
    model.add({estimateOf({"data_parallel_size=8"}, 2.0),
               estimateOf({"tensor_model_parallel_size=4"}, 1.0)});
    QCOMPARE(model.rowCount(), 4);
    // Rows stay where they arrived; "#" is the place by step, a tie after the earlier one.
    const std::vector<double> steps = {3.0, 1.0, 2.0, 1.0};
    const std::vector<int> ranks = {4, 1, 3, 2};
    for (int row = 0; row < 4; ++row) {
      QCOMPARE(model.plan(row).stepSeconds, steps[static_cast<std::size_t>(row)]);
      QCOMPARE(model.index(row, PlanCandidateModel::Rank).data().toInt(),
               ranks[static_cast<std::size_t>(row)]);
    }
    QCOMPARE(model.plan(3).config.parallel.tensor, 4);
    QCOMPARE(model.index(0, PlanCandidateModel::Step).data().toString(), QStringLiteral("3.000"));
    QCOMPARE(model.index(0, PlanCandidateModel::Step).data(Qt::UserRole).toDouble(), 3.0);

    PlanFilterModel filter;
    filter.setSourceModel(&model);
    QAbstractItemModelTester filterTester(&filter,
                                          QAbstractItemModelTester::FailureReportingMode::QtTest);
    filter.setFilter(QStringLiteral("tensor_model_parallel_size=4"));
    QCOMPARE(filter.rowCount(), 1);
    QCOMPARE(filter.index(0, PlanCandidateModel::Rank).data().toInt(), 2);
    filter.setFilter(QStringLiteral(" pipeline_model_parallel_size=2  pipeline_schedule=1f1b "));
    QCOMPARE(filter.rowCount(), 1);
    QCOMPARE(filter.index(0, PlanCandidateModel::Rank).data().toInt(), 1);
    filter.setFilter(QString());
    QCOMPARE(filter.rowCount(), 4);
    filter.setFilter(QStringLiteral("tensor_model_parallel_size=4"));
    const std::string bad = test::userErrorOf([&] {
                              filter.setFilter(QStringLiteral("model.num_layers=2"));
                            }).toStdString();
    QVERIFY2(bad.rfind("filter: 'model.num_layers=2' is not key=value over a searched key; valid "
                       "keys: data_parallel_size, tensor_model_parallel_size, ",
                       0) == 0,
             bad.c_str());
    QVERIFY2(!test::userErrorOf([&] {
                filter.setFilter(QStringLiteral("tensor_model_parallel_size"));
              }).isEmpty(),
             "a term without '=' is refused");
    QCOMPARE(filter.rowCount(), 1);  // a refused filter leaves the last one in force
  }

  // The table ends holding the search's best, as `plan` ranks them, and the best is selected:
  // its split, memory by category against the device's and its predicted step come up.
  void tableHoldsTheSearchsBest() {
    PlannerView view;
    QAbstractItemModelTester tester(view.candidates(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    choosePanelModel(view, 8);
    QSignalSpy shown(&view, &PlannerView::candidateShown);
    QVERIFY(!planAndWait(view));
    const PlanSearch expected = searchPlans(panelRequest(8));
    QCOMPARE(view.candidates()->rowCount(), static_cast<int>(expected.best.size()));
    for (int row = 0; row < view.candidates()->rowCount(); ++row) {
      const PlanEstimate& e = expected.best[static_cast<std::size_t>(row)];
      QCOMPARE(view.candidates()->plan(row).stepSeconds, e.stepSeconds);
      QCOMPARE(view.candidates()->strategyKeys(row), nlohmann::json(planStrategyKeys(e.config)));
    }
    QVERIFY2(view.summary().contains(
                 QStringLiteral("global batch 8: %1 candidates").arg(expected.candidates)),
             qPrintable(view.summary()));
    QVERIFY(shown.wait(30000) || !shown.isEmpty());
    const PlanEstimate& best = expected.best.front();
    QVERIFY2(view.detail().contains(
                 QStringLiteral("Limited by ") +
                 QString::fromStdString(planLimit(best, readSystemNamed("a100-80gb")))),
             qPrintable(view.detail()));
    // One row per category, then the total and the device.
    QTableWidget* memory = view.memoryTable();
    QCOMPARE(memory->item(memory->rowCount() - 2, 0)->text(), QStringLiteral("total"));
    QCOMPARE(memory->item(memory->rowCount() - 2, 1)->text(),
             QString::fromStdString(formatBytes(best.memory.perRankBytes())));
    QCOMPARE(memory->item(memory->rowCount() - 1, 1)->text(), QStringLiteral("80.0 GiB"));
    // The predicted step: one rank per pipeline rank, the first of each.
    std::set<int> ranks;
    for (const auto& lane : view.timeline()->index().lanes()) ranks.insert(lane.rank);
    std::set<int> expectedRanks;
    const int peers = best.config.parallel.ranksPerPipelineRank();
    for (int q = 0; q < best.config.parallel.pipeline; ++q) expectedRanks.insert(q * peers);
    QCOMPARE(ranks, expectedRanks);
    // A preset's plan cannot run here: Apply says why.
    QVERIFY(view.applyButton()->isEnabled());
    view.modelChoice()->setCurrentIndex(
        view.modelChoice()->findData(QStringLiteral("llama2-70b-shape")));
    view.gpuCount()->setValue(16);
    view.settings()->setText(QStringLiteral("tensor_model_parallel_size=8"));
    QVERIFY(!planAndWait(view));
    QVERIFY(view.candidates()->rowCount() > 0);
    for (int row = 0; row < view.candidates()->rowCount(); ++row)
      QCOMPARE(view.candidates()->plan(row).config.parallel.tensor, 8);
    QVERIFY(!view.applyButton()->isEnabled());
    QCOMPARE(view.applyButton()->toolTip(),
             QStringLiteral("Only a plan of the strategy panel's model can run here"));
    // The panel's model with context parallelism: planned, and Apply says the engine does not
    // train it.
    choosePanelModel(view, 8);
    view.settings()->setText(QStringLiteral("context_parallel_size=2"));
    QVERIFY(!planAndWait(view));
    QVERIFY(view.candidates()->rowCount() > 0);
    for (int row = 0; row < view.candidates()->rowCount(); ++row)
      QCOMPARE(view.candidates()->plan(row).config.parallel.context, 2);
    view.table()->selectRow(0);
    QVERIFY(!view.applyButton()->isEnabled());
    QCOMPARE(view.applyButton()->toolTip(),
             QStringLiteral("config: context_parallel_size = 2 (context parallelism) is modeled "
                            "by the planner (parascope-cli plan and simulate) but not trained by "
                            "this engine; valid for training: unset, or 1"));
  }

  // A search started while one runs replaces it: the table ends with the second's best only.
  void aNewSearchReplacesTheOneRunning() {
    PlannerView view;
    view.modelChoice()->setCurrentIndex(view.modelChoice()->findData(QStringLiteral("gpt-1t")));
    view.gpuCount()->setValue(4096);
    view.plan();
    QVERIFY(view.searching());
    choosePanelModel(view, 4);
    QVERIFY(!planAndWait(view));
    const PlanSearch expected = searchPlans(panelRequest(4));
    QCOMPARE(view.candidates()->rowCount(), static_cast<int>(expected.best.size()));
    for (int row = 0; row < view.candidates()->rowCount(); ++row)
      QCOMPARE(view.candidates()->plan(row).config.parallel.worldSize(), 4);
  }

  // Each bad input: one line naming what was wrong, an empty table, and no search.
  void badInputIsOneLine_data() {
    QTest::addColumn<QString>("system");
    QTest::addColumn<int>("gpus");
    QTest::addColumn<QString>("settings");
    QTest::addColumn<QString>("message");
    QTest::newRow("not a setting") << "a100-80gb" << 8 << "tensor"
                                   << "Not planned: 'tensor' is not a setting; give key=value";
    QTest::newRow("degrees") << "a100-80gb" << 7 << "tensor_model_parallel_size=2"
                             << "Not planned: plan: no strategy for 7 GPUs: tensor x context x "
                                "pipeline size must divide the GPUs";
    QTest::newRow("no description")
        << "this-machine" << 8 << ""
        << "Not planned: this machine has no description yet: Session > Calibrate this machine "
           "measures one (or choose a preset)";
    QTest::newRow("model") << "a100-80gb" << 8 << "model.num_layers=0"
                           << "Not planned: config: model.num_layers";
  }
  void badInputIsOneLine() {
    QFETCH(QString, system);
    QFETCH(int, gpus);
    QFETCH(QString, settings);
    QFETCH(QString, message);
    PlannerView view;
    choosePanelModel(view, 8);
    QVERIFY(!planAndWait(view));
    QVERIFY(view.candidates()->rowCount() > 0);
    view.systemChoice()->setCurrentIndex(view.systemChoice()->findData(system));
    view.gpuCount()->setValue(gpus);
    view.settings()->setText(settings);
    QVERIFY(planAndWait(view));
    QVERIFY2(view.summary().startsWith(message), qPrintable(view.summary()));
    QVERIFY(!view.summary().contains(QLatin1Char('\n')));
    QCOMPARE(view.candidates()->rowCount(), 0);
    QVERIFY(!view.searching());
    QVERIFY(!view.applyButton()->isEnabled());
  }

  // In the workbench: Apply sets the candidate's strategy in the strategy panel, which applies it
  // (no session runs: the status says it is set for the next Start).
  void applyPutsTheStrategyInThePanel() {
    ui::WorkbenchWindow window;
    window.setDocument(defaultConfig());
    PlannerView* view = window.plannerView();
    QCOMPARE(window.views()->tabText(window.views()->indexOf(view)), QStringLiteral("Planner"));
    view->modelChoice()->setCurrentIndex(view->modelChoice()->findData(QString()));
    view->systemChoice()->setCurrentIndex(
        view->systemChoice()->findData(QStringLiteral("a100-80gb")));
    view->gpuCount()->setValue(4);
    QVERIFY(!planAndWait(*view));
    // The second best, so that it is not what the panel already shows.
    view->table()->selectRow(1);
    const PlanEstimate chosen = view->candidates()->plan(
        view->filtered()->mapToSource(view->table()->currentIndex()).row());
    QVERIFY(view->applyButton()->isEnabled());
    QTest::mouseClick(view->applyButton(), Qt::LeftButton);
    QVERIFY(window.panel()->config().has_value());
    QCOMPARE(nlohmann::json(planStrategyKeys(*window.panel()->config())),
             nlohmann::json(planStrategyKeys(chosen.config)));
    QVERIFY2(window.statusText().startsWith(QStringLiteral("Strategy set: ")),
             qPrintable(window.statusText()));
  }

  // While a session runs, Apply is a live switch of it: the run goes on under the candidate.
  void applyDuringARunSwitchesLive() {
    ui::WorkbenchWindow window;
    nlohmann::json doc = defaultConfig();
    doc["train_iters"] = 400;
    doc["eval_interval"] = 0;
    doc["train_micro_batch_size_per_gpu"] = 2;
    doc["gradient_accumulation_steps"] = 4;
    window.setDocument(doc);
    PlannerView* view = window.plannerView();
    view->modelChoice()->setCurrentIndex(view->modelChoice()->findData(QString()));
    view->systemChoice()->setCurrentIndex(
        view->systemChoice()->findData(QStringLiteral("a100-80gb")));
    view->gpuCount()->setValue(2);
    QVERIFY(!planAndWait(*view));
    window.start();
    QTRY_VERIFY_WITH_TIMEOUT(window.stepsSeen() >= 1, 60000);
    view->table()->selectRow(0);
    const PlanEstimate chosen = view->candidates()->plan(
        view->filtered()->mapToSource(view->table()->currentIndex()).row());
    QCOMPARE(chosen.config.parallel.worldSize(), 2);
    QVERIFY(view->applyButton()->isEnabled());
    QTest::mouseClick(view->applyButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(window.charts()->switchCount(), 1, 60000);
    QCOMPARE(window.worldSize(), 2);
    QSignalSpy ended(&window, &ui::WorkbenchWindow::sessionEnded);
    window.stop();
    QVERIFY(ended.wait(60000));
    QVERIFY2(window.errorText().isEmpty(), qPrintable(window.errorText()));
    QVERIFY(window.panel()->config().has_value());
    QCOMPARE(nlohmann::json(planStrategyKeys(*window.panel()->config())),
             nlohmann::json(planStrategyKeys(chosen.config)));
  }

  // In a short, wide tab (the workbench's) the details go beside the table, which keeps the
  // tab's height for its rows (stacked, it got little more than its header); in a tall one they
  // go below it.
  void tableKeepsItsRowsInAShortTab() {
    ui::PlannerView view;
    view.resize(1400, 260);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QTRY_COMPARE(view.split()->orientation(), Qt::Horizontal);
    const int row = view.table()->verticalHeader()->defaultSectionSize();
    const int header = view.table()->horizontalHeader()->sizeHint().height();
    QVERIFY2(view.table()->height() >= header + 4 * row,
             qPrintable(QString("table %1 px, header %2, row %3")
                            .arg(view.table()->height())
                            .arg(header)
                            .arg(row)));
    view.resize(1000, 800);
    QTRY_COMPARE(view.split()->orientation(), Qt::Vertical);
    QVERIFY(view.table()->height() >= header + 10 * row);
  }

  // A switch the panel did not ask for (a planned --switch, as the Planner's Apply is one the
  // panel asks for) leaves the panel showing what runs, not the strategy before it.
  void panelFollowsAPlannedSwitch() {
    ui::WorkbenchWindow window;
    nlohmann::json doc = defaultConfig();
    doc["train_iters"] = 4;
    doc["eval_interval"] = 0;
    doc["train_micro_batch_size_per_gpu"] = 2;
    doc["gradient_accumulation_steps"] = 4;
    window.setDocument(doc);
    // As --switch 1:data_parallel_size=2 plans it: the accumulation halves to keep the batch.
    window.setSwitchPlan(planSwitches({"1:data_parallel_size=2"}, parseTrainConfig(doc), 0));
    QSignalSpy ended(&window, &ui::WorkbenchWindow::sessionEnded);
    window.start();
    QVERIFY2(ended.wait(120000), qPrintable(window.statusText()));
    QCOMPARE(window.charts()->switchCount(), 1);
    QVERIFY2(window.panel()->config().has_value(), qPrintable(window.panel()->message()));
    QCOMPARE(window.panel()->config()->parallel.data, 2);
    QCOMPARE(window.panel()->config()->gradientAccumulation, 2);
    auto field = [&](const char* key) {
      return qobject_cast<QSpinBox*>(window.panel()->field(QString::fromLatin1(key)))->value();
    };
    QCOMPARE(field("data_parallel_size"), 2);
    QCOMPARE(field("gradient_accumulation_steps"), 2);
    QCOMPARE(field("train_micro_batch_size_per_gpu"), 2);
  }
};

QTEST_MAIN(TestPlannerView)
#include "test_planner_view.moc"
