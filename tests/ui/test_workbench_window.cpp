// The workbench driven as a user drives it, under the offscreen platform: edits in the strategy
// panel through key events (invalid ones show the config validator's own message and keep Apply
// and Start disabled), a tiny session started with its shortcut whose steps reach the log, the
// charts and, as they run, the timeline; checkpoints saved and loaded through the window; the
// report queue's back-pressure; the log model under QAbstractItemModelTester; screenshots of the
// window and each view checked by pixel statistics.
#include <QAbstractItemModelTester>
#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QLineSeries>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/common/error.h"
#include "core/config/config.h"
#include "core/plan/memory_estimate.h"
#include "core/plan/simulator.h"
#include "core/session/session.h"
#include "core/state/checkpoint.h"
#include "core/tensor/allocator.h"
#include "profiler/analysis/analysis_table.h"
#include "profiler/analysis/comm_volume.h"
#include "profiler/analysis/memory_timeline.h"
#include "profiler/analysis/stragglers.h"
#include "profiler/analysis/trace_analysis.h"
#include "profiler/io/chrome_export.h"
#include "profiler/io/chrome_import.h"
#include "profiler/synthetic_trace.h"
#include "tests/input_probes.h"
#include "ui/timeline/timeline_window.h"
#include "ui/views/analysis_table_model.h"
#include "ui/views/breakdown_model.h"
#include "ui/views/comm_matrix_model.h"
#include "ui/views/comm_op_model.h"
#include "ui/views/communication_view.h"
#include "ui/views/diff_model.h"
#include "ui/views/memory_peak_model.h"
#include "ui/views/memory_view.h"
#include "ui/views/pipeline_view.h"
#include "ui/views/segment_model.h"
#include "ui/views/training_log_model.h"
#include "ui/workbench/live_charts.h"
#include "ui/workbench/session_bridge.h"
#include "ui/workbench/strategy_panel.h"
#include "ui/workbench/workbench_window.h"

using parascope::ui::LiveCharts;
using parascope::ui::SessionBridge;
using parascope::ui::StrategyPanel;

using parascope::ui::WorkbenchWindow;

namespace {

// A GPT small enough that a step takes milliseconds: 4 layers of width 32, 4 heads.
nlohmann::json tinyDocument() {
  return nlohmann::json::parse(R"({
    "model": {"type": "gpt", "vocab_size": 256, "context_length": 16, "hidden_size": 32,
              "num_attention_heads": 4, "num_layers": 4, "mlp_ratio": 2},
    "data": {"type": "text", "path": "/usr/share/games/fortunes", "validation_fraction": 0.1},
    "train_micro_batch_size_per_gpu": 2, "train_iters": 6, "eval_interval": 3,
    "eval_iters": 1, "log_interval": 1, "seed": 7,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.002}}
  })");
}

// Types a value into a spin box as a user does: focus, select all, type, Enter.
void typeInto(QSpinBox* box, int value) {
  QVERIFY(box);
  box->setFocus();
  QTest::keyClick(box, Qt::Key_A, Qt::ControlModifier);
  QTest::keyClicks(box, QString::number(value));
  QTest::keyClick(box, Qt::Key_Return);
}

// Not a blank image: several colours and a spread of brightness.
void checkPixels(const QString& path) {
  const QImage image(path);
  QVERIFY2(!image.isNull(), qPrintable(path));
  QVERIFY(image.width() > 200 && image.height() > 200);
  std::set<QRgb> colours;
  double sum = 0, sumSq = 0;
  int n = 0;
  for (int y = 0; y < image.height(); y += 3) {
    for (int x = 0; x < image.width(); x += 3) {
      const QRgb p = image.pixel(x, y);
      colours.insert(p);
      const double v = qGray(p);
      sum += v;
      sumSq += v * v;
      ++n;
    }
  }
  const double mean = sum / n;
  const double deviation = std::sqrt(std::max(0.0, sumSq / n - mean * mean));
  QVERIFY2(colours.size() > 20,
           qPrintable(QStringLiteral("%1: %2 colours").arg(path).arg(colours.size())));
  QVERIFY2(deviation > 10, qPrintable(QStringLiteral("%1: deviation %2").arg(path).arg(deviation)));
}

}  // namespace

class TestWorkbenchWindow : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void invalidEditsKeepApplyDisabled_data();
  void invalidEditsKeepApplyDisabled();
  void panelRoundTripsTheDocument();
  void panelExplainsZeroMemory();
  void panelRefusesWhatItCannotShow_data();
  void panelRefusesWhatItCannotShow();
  void lastConfigIsReadBackBounded();
  void panelPredictsTheEditedStrategy();
  void bridgeNeverDropsReports();
  void runsASessionAndShowsIt();
  void timelineFillsWhileRunning();
  void traceTabsBesideTheRun();
  void savesAndLoadsCheckpoints();
  void corruptTraceChangesNothing();
  void pipelineViewShowsTheSchedule();
  void communicationViewSaysWhyItIsEmpty();
  void compareMarksTheBestSegment();
  void failedSessionShowsItsReason();
  void switchesThroughThePanel();
  void logFollowsTheNewestStep();
  void quitClosesTheWorkbench_data();
  void quitClosesTheWorkbench();

 private:
  QTemporaryDir cacheHome_;  // the windows' sgemm peak cache, not the user's
};

void TestWorkbenchWindow::initTestCase() {
  // Keep the tests' QSettings away from the user's: test mode moves the config home (before
  // the first QSettings, which fixes the path for the process) and the names are the tests' own.
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("ParaScopeTests"));
  QCoreApplication::setApplicationName(QStringLiteral("test_ui_workbench"));
  const QString home = QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation);
  QVERIFY2(home.contains(QStringLiteral("/.qttest/")), qPrintable(home));
  QCOMPARE(QSettings().fileName(), home + QStringLiteral("/ParaScopeTests/test_ui_workbench.conf"));
  QVERIFY(cacheHome_.isValid());
  qputenv("XDG_CACHE_HOME", cacheHome_.path().toUtf8());
}

void TestWorkbenchWindow::invalidEditsKeepApplyDisabled_data() {
  QTest::addColumn<int>("world");
  QTest::addColumn<int>("data");
  QTest::addColumn<int>("tensor");
  QTest::addColumn<int>("pipeline");
  QTest::addColumn<QString>("mentions");
  QTest::newRow("data degree does not fill the world") << 4 << 3 << 1 << 1 << "data_parallel_size";
  QTest::newRow("heads not divisible by tensor") << 3 << 1 << 3 << 1 << "num_attention_heads";
  QTest::newRow("layers not divisible by stages") << 3 << 1 << 1 << 3 << "num_layers";
}

void TestWorkbenchWindow::invalidEditsKeepApplyDisabled() {
  QFETCH(int, world);
  QFETCH(int, data);
  QFETCH(int, tensor);
  QFETCH(int, pipeline);
  QFETCH(QString, mentions);
  WorkbenchWindow window;
  window.setDocument(tinyDocument());
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  StrategyPanel* panel = window.panel();
  QVERIFY(panel->applyButton()->isEnabled());
  QVERIFY(window.action(QStringLiteral("start"))->isEnabled());
  QVERIFY2(panel->message().startsWith(QStringLiteral("Valid: 1 rank")) &&
               !panel->message().contains(QStringLiteral("1 ranks")),
           qPrintable(panel->message()));
  auto spin = [panel](const char* key) {
    return qobject_cast<QSpinBox*>(panel->field(QString::fromLatin1(key)));
  };
  typeInto(spin("tensor_model_parallel_size"), tensor);
  typeInto(spin("pipeline_model_parallel_size"), pipeline);
  typeInto(spin("data_parallel_size"), data);
  typeInto(spin("world_size"), world);
  QCOMPARE(spin("world_size")->value(), world);
  QCOMPARE(spin("data_parallel_size")->value(), data);

  // The validator's own words, shown as they are.
  QString expected;
  try {
    parascope::parseTrainConfig(panel->document(), world);
  } catch (const parascope::UserError& e) {
    expected = QString::fromStdString(e.what());
  }
  QVERIFY2(!expected.isEmpty(), "the edit should be invalid");
  QCOMPARE(panel->message(), expected);
  QVERIFY2(panel->message().contains(mentions), qPrintable(panel->message()));
  QVERIFY(!panel->applyButton()->isEnabled());
  QVERIFY(!window.action(QStringLiteral("applyStrategy"))->isEnabled());
  QVERIFY(!window.action(QStringLiteral("start"))->isEnabled());
  // Clicking the disabled button does nothing; Start's shortcut starts nothing.
  QSignalSpy applied(panel, &StrategyPanel::applied);
  QTest::mouseClick(panel->applyButton(), Qt::LeftButton);
  QTest::keyClick(&window, Qt::Key_F5);
  QCOMPARE(applied.count(), 0);
  QVERIFY(!window.running());

  // Back to a valid strategy: Apply comes back.
  typeInto(spin("tensor_model_parallel_size"), 1);
  typeInto(spin("pipeline_model_parallel_size"), 1);
  typeInto(spin("data_parallel_size"), world);
  QVERIFY2(panel->applyButton()->isEnabled(), qPrintable(panel->message()));
  QVERIFY(window.findChild<QObject*>(QStringLiteral("memory")) != nullptr);
}

void TestWorkbenchWindow::panelRoundTripsTheDocument() {
  StrategyPanel panel;
  nlohmann::json doc = tinyDocument();
  doc["data_parallel_size"] = 2;
  doc["tensor_model_parallel_size"] = 2;
  doc["zero_optimization"] = {{"stage", 1}, {"reduce_bucket_size", 1000}};
  doc["bf16"] = {{"enabled", true}};
  doc["recompute_granularity"] = "selective";
  panel.setDocument(doc);
  QVERIFY2(panel.config().has_value(), qPrintable(panel.message()));
  const parascope::TrainConfig& c = *panel.config();
  QCOMPARE(c.parallel.data, 2);
  QCOMPARE(c.parallel.tensor, 2);
  QCOMPARE(c.parallel.zeroStage, 1);
  QCOMPARE(c.parallel.bucketElements, std::int64_t{1000});
  QCOMPARE(c.parallel.compute, parascope::DType::BF16);
  QCOMPARE(qobject_cast<QSpinBox*>(panel.field(QStringLiteral("world_size")))->value(), 4);
  const nlohmann::json back = panel.document();
  QCOMPARE(back["model"], doc["model"]);
  QCOMPARE(back["optimizer"], doc["optimizer"]);
  QCOMPARE(back["recompute_granularity"].get<std::string>(), std::string("selective"));
  QVERIFY(panel.findChild<QObject*>(QStringLiteral("memory")) != nullptr);
}

// Under ZeRO-2/3 the memory prediction says what each sharded item holds through the step and
// what comes on top at its peak, and with the optimizer state offloaded what is on the disk: the
// estimate's own figures, not a second computation.
void TestWorkbenchWindow::panelExplainsZeroMemory() {
  StrategyPanel panel;
  nlohmann::json doc = tinyDocument();
  doc["data_parallel_size"] = 4;
  auto* memory = panel.findChild<QLabel*>(QStringLiteral("memory"));
  QVERIFY(memory != nullptr);
  const auto bytes = [](double b) { return QString::fromStdString(parascope::formatBytes(b)); };
  for (int stage = 1; stage <= 3; ++stage) {
    doc["zero_optimization"] = {{"stage", stage}};
    panel.setDocument(doc);
    QVERIFY2(panel.config().has_value(), qPrintable(panel.message()));
    const parascope::TrainConfig& c = *panel.config();
    const parascope::MemoryEstimate m =
        parascope::estimateMemory(c, parascope::dataBytesInMemory(c.data), c.parallel.worldSize());
    const auto& grads = m.items[static_cast<std::size_t>(parascope::MemoryCategory::Gradient)];
    const auto& params = m.items[static_cast<std::size_t>(parascope::MemoryCategory::Parameter)];
    const QString text = memory->text();
    const QString gradLine =
        QString("gradients: a %1 shard + %2 of full-size buckets")
            .arg(bytes(grads.residentBytes), bytes(grads.bytes - grads.residentBytes));
    const QString paramLine =
        QString("parameters: a %1 shard + %2 gathered")
            .arg(bytes(params.residentBytes), bytes(params.bytes - params.residentBytes));
    QCOMPARE(text.contains(QString("ZeRO-%1 over 4 ranks, at the peak:").arg(stage)), stage >= 2);
    QCOMPARE(text.contains(gradLine), stage >= 2);
    QCOMPARE(text.contains(paramLine), stage == 3);
    QVERIFY2(stage < 2 || grads.bytes > grads.residentBytes, qPrintable(text));
    QVERIFY(!text.contains("On disk"));
  }
  // The optimizer state and then the parameters swapped to a disk: each file beside the memory,
  // not in it, and the parameters held are the swap's buffers.
  doc["zero_optimization"] = {{"stage", 3},
                              {"offload_optimizer", {{"device", "nvme"}, {"nvme_path", "/tmp"}}}};
  for (const bool parameters : {false, true}) {
    if (parameters)
      doc["zero_optimization"]["offload_param"] = {{"device", "nvme"}, {"nvme_path", "/tmp"}};
    panel.setDocument(doc);
    QVERIFY2(panel.config().has_value(), qPrintable(panel.message()));
    const parascope::TrainConfig& c = *panel.config();
    const parascope::MemoryEstimate m =
        parascope::estimateMemory(c, parascope::dataBytesInMemory(c.data), c.parallel.worldSize());
    const auto& params = m.items[static_cast<std::size_t>(parascope::MemoryCategory::Parameter)];
    QCOMPARE(m.parameterSwapBytes > 0, parameters);
    const QString text = memory->text();
    QVERIFY2(text.contains(QString("On disk (offload_optimizer nvme): %1 of optimizer state")
                               .arg(bytes(m.swapBytes - m.parameterSwapBytes))),
             qPrintable(text));
    QCOMPARE(text.contains(QString("On disk (offload_param nvme): %1 of parameters")
                               .arg(bytes(m.parameterSwapBytes))),
             parameters);
    QCOMPARE(text.contains(
                 QString("parameters: %1 of swap buffers + %2 gathered")
                     .arg(bytes(params.residentBytes), bytes(params.bytes - params.residentBytes))),
             parameters);
  }
}

// A document whose values the fields cannot hold (a spin box would clamp them) is refused with
// the CLI's own message; nothing starts until the user edits a field.
void TestWorkbenchWindow::panelRefusesWhatItCannotShow_data() {
  QTest::addColumn<QString>("key");
  QTest::addColumn<int>("value");
  QTest::addColumn<QString>("message");
  QTest::newRow("train_iters=-5")
      << "train_iters" << -5 << "config: train_iters = -5 is out of range; allowed 1..1073741824";
  QTest::newRow("data_parallel_size=100000")
      << "data_parallel_size" << 100000
      << "config: data_parallel_size = 100000 is out of range; allowed 1..4096";
}

void TestWorkbenchWindow::panelRefusesWhatItCannotShow() {
  QFETCH(QString, key);
  QFETCH(int, value);
  QFETCH(QString, message);
  nlohmann::json doc = tinyDocument();
  doc[key.toStdString()] = value;
  QCOMPARE(parascope::test::userErrorOf([&] { parascope::parseTrainConfig(doc); }), message);
  WorkbenchWindow window;
  window.setDocument(doc);
  StrategyPanel* panel = window.panel();
  QVERIFY(!panel->config().has_value());
  QCOMPARE(panel->message(), message);
  QVERIFY(!panel->applyButton()->isEnabled());
  QVERIFY(!window.action(QStringLiteral("start"))->isEnabled());
  window.start();
  QVERIFY(!window.running());
  QCOMPARE(window.statusText(), QStringLiteral("Not started: ") + message);
  // An edit makes the fields what runs: then they are validated as shown.
  auto* steps = qobject_cast<QSpinBox*>(panel->field(QStringLiteral("train_iters")));
  typeInto(steps, 3);
  if (key == "train_iters") {
    QVERIFY2(panel->config().has_value(), qPrintable(panel->message()));
    QCOMPARE(panel->config()->trainIters, 3);
  }
}

// The last session's config comes back from the settings file under the config limits: a value
// nested 100000 levels deep there crashed every start. It is dropped (and removed).
void TestWorkbenchWindow::lastConfigIsReadBackBounded() {
  const QString key = QStringLiteral("session/lastConfig");
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += R"({"a":)";
  deep += "1" + std::string(100000, '}');
  QSettings().setValue(key, QString::fromStdString(deep));
  QVERIFY(WorkbenchWindow::lastDocument().is_null());
  QVERIFY(!QSettings().contains(key));
  QSettings().setValue(key, QStringLiteral("[1, 2]"));
  QVERIFY(WorkbenchWindow::lastDocument().is_null());
  QSettings().setValue(key, QString::fromStdString(tinyDocument().dump()));
  QCOMPARE(WorkbenchWindow::lastDocument(), tinyDocument());
  QSettings().remove(key);
}

// A slow machine, so that tiny steps take whole milliseconds.
parascope::SystemDescription slowMachine() {
  parascope::SystemDescription s;
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
  return s;
}

void TestWorkbenchWindow::panelPredictsTheEditedStrategy() {
  StrategyPanel panel;
  nlohmann::json doc = tinyDocument();
  doc["pipeline_model_parallel_size"] = 2;
  doc["gradient_accumulation_steps"] = 4;
  panel.setDocument(doc);
  QVERIFY2(panel.config().has_value(), qPrintable(panel.message()));
  QVERIFY2(panel.predictionText().contains(QStringLiteral("Calibrate this machine")),
           qPrintable(panel.predictionText()));
  panel.setSystem(slowMachine());
  auto expected = [](const parascope::TrainConfig& c) {
    const parascope::StrategyPlan plan = parascope::planStrategy(c);
    return parascope::simulateStep(plan, parascope::CostModel(slowMachine(), plan));
  };
  const parascope::Simulation piped = expected(*panel.config());
  QVERIFY(piped.stepSeconds > 0.01 && piped.stepSeconds < 1);
  const QString text = panel.predictionText();
  QVERIFY2(text.contains(QStringLiteral("slow test machine")), qPrintable(text));
  QVERIFY2(text.contains(QStringLiteral("%1 ms").arg(1e3 * piped.stepSeconds, 0, 'f', 0)),
           qPrintable(text));
  const double bubble = std::max(piped.idleFraction(0), piped.idleFraction(1));
  QVERIFY2(text.contains(QStringLiteral("%1%").arg(100 * bubble, 0, 'f', 1)), qPrintable(text));
  QVERIFY(!text.contains(QStringLiteral("Measured")));  // nothing runs

  // An edit predicts again: without a pipeline there is no bubble.
  typeInto(qobject_cast<QSpinBox*>(panel.field(QStringLiteral("world_size"))), 1);
  typeInto(qobject_cast<QSpinBox*>(panel.field(QStringLiteral("pipeline_model_parallel_size"))), 1);
  QVERIFY2(panel.config().has_value(), qPrintable(panel.message()));
  const parascope::Simulation flat = expected(*panel.config());
  QVERIFY2(panel.predictionText().contains(
               QStringLiteral("%1 ms").arg(1e3 * flat.stepSeconds, 0, 'f', 0)),
           qPrintable(panel.predictionText()));
  QVERIFY(panel.predictionText().contains(QStringLiteral("\u2013")));
  QVERIFY(!panel.predictionText().contains(QStringLiteral("take turns")));

  // More ranks than this machine has cores: the panel says they share them.
  const int cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  typeInto(qobject_cast<QSpinBox*>(panel.field(QStringLiteral("world_size"))), 2 * cores);
  typeInto(qobject_cast<QSpinBox*>(panel.field(QStringLiteral("data_parallel_size"))), 2 * cores);
  QVERIFY2(panel.config().has_value(), qPrintable(panel.message()));
  QVERIFY2(panel.predictionText().contains(
               QStringLiteral("<i>%1 ranks on this machine's %2 cores:</i> they take turns")
                   .arg(2 * cores)
                   .arg(cores)),
           qPrintable(panel.predictionText()));
}

void TestWorkbenchWindow::bridgeNeverDropsReports() {
  SessionBridge bridge(4);
  constexpr int kSteps = 500;
  std::thread rank([&bridge] {
    for (int i = 1; i <= kSteps; ++i) {
      parascope::StepReport r;
      r.step = i;
      bridge.onStep(r);
    }
  });
  int expected = 1;
  while (expected <= kSteps) {
    for (const auto& report : bridge.drain()) {
      QCOMPARE(std::get<parascope::StepReport>(report).step, expected);
      ++expected;
    }
    std::this_thread::yield();
  }
  rank.join();
  QVERIFY(bridge.drain().empty());
  QVERIFY(bridge.waits() > 0);  // the producer was held back, not dropped
}

void TestWorkbenchWindow::runsASessionAndShowsIt() {
  WorkbenchWindow window;
  using Tester = QAbstractItemModelTester;
  const auto mode = Tester::FailureReportingMode::QtTest;
  Tester logTester(window.logModel(), mode);
  Tester breakdownTester(window.breakdownModel(), mode);
  Tester matrixTester(window.communicationView()->matrixModel(), mode);
  Tester opTester(window.communicationView()->opModel(), mode);
  Tester peakTester(window.memoryView()->peakModel(), mode);
  Tester segmentTester(window.segmentModel(), mode);
  nlohmann::json doc = tinyDocument();
  doc["data_parallel_size"] = 2;
  window.setDocument(doc);
  window.resize(1400, 900);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QSignalSpy ended(&window, &WorkbenchWindow::sessionEnded);
  QSignalSpy shown(&window, &WorkbenchWindow::traceShown);
  QTest::keyClick(&window, Qt::Key_F5);
  QVERIFY(window.running() || !ended.isEmpty());
  QTRY_VERIFY_WITH_TIMEOUT(window.stepsSeen() >= 3, 120000);
  QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 120000);
  QCOMPARE(ended.at(0).at(0).toBool(), false);
  QVERIFY2(window.errorText().isEmpty(), qPrintable(window.errorText()));
  QCOMPARE(window.stepsSeen(), 6);
  QCOMPARE(window.worldSize(), 2);
  QCOMPARE(window.logModel()->rowCount(), 6);
  QCOMPARE(window.charts()->pointCount(LiveCharts::Loss), 6);
  QCOMPARE(window.charts()->pointCount(LiveCharts::TokensPerSecond), 6);
  QVERIFY(window.statusText().contains(QStringLiteral("Finished after 6 steps")));
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
  QCOMPARE(window.segmentModel()->rowCount(), 1);
  QCOMPARE(window.segmentModel()->value(0, parascope::ui::SegmentModel::Steps), 6.0);

  // The views show what `parascope-cli analyze` computes from the same trace.
  const parascope::profiler::TraceData trace =
      parascope::profiler::importChromeTraces({window.tracePath().toStdString()});
  const auto comm = parascope::profiler::computeCommVolume(trace);
  auto* matrix = window.communicationView()->matrixModel();
  QCOMPARE(matrix->rowCount(), static_cast<int>(comm.matrix.ranks.size()));
  QCOMPARE(matrix->rowCount(), 2);
  for (int i = 0; i < matrix->rowCount(); ++i) {
    for (int j = 0; j < matrix->columnCount(); ++j) {
      const std::int64_t bytes = comm.matrix.at(comm.matrix.ranks[i], comm.matrix.ranks[j]);
      QCOMPARE(matrix->data(matrix->index(i, j), Qt::UserRole).toLongLong(), bytes);
      QCOMPARE(matrix->data(matrix->index(i, j)).toString(),
               QString::fromStdString(parascope::formatBytes(static_cast<double>(bytes))));
    }
  }
  QVERIFY(comm.matrix.total() > 0);
  auto* ops = window.communicationView()->opModel();
  QCOMPARE(ops->rowCount(), static_cast<int>(comm.ops.size()));
  for (int i = 0; i < ops->rowCount(); ++i) {
    const QModelIndex bytes = ops->index(i, parascope::ui::CommOpModel::Bytes);
    QCOMPARE(bytes.data(Qt::UserRole).toLongLong(), comm.ops[i].bytes);
    QCOMPARE(
        bytes.data().toString(),
        QString::fromStdString(parascope::formatBytes(static_cast<double>(comm.ops[i].bytes))));
  }
  // Bandwidth in the bytes' binary units, so that a row's bytes over its time is its figure:
  // 3 GiB in 2 s read 1.500 GiB/s.
  parascope::ui::CommOpModel known;
  parascope::profiler::OpTotal op;
  op.name = "allReduce";
  op.count = 1;
  op.bytes = std::int64_t{3} << 30;
  op.timeNs = 2'000'000'000;
  known.setOps({op});
  QCOMPARE(known.index(0, parascope::ui::CommOpModel::Bandwidth).data().toString(),
           QStringLiteral("1.500"));
  QCOMPARE(ops->headerData(parascope::ui::CommOpModel::Bandwidth, Qt::Horizontal).toString(),
           QStringLiteral("GiB/s (bytes / time)"));
  const auto memory = parascope::profiler::computeMemoryTimeline(trace);
  auto* peaks = window.memoryView()->peakModel();
  QCOMPARE(peaks->rowCount(), static_cast<int>(memory.size()));
  for (int i = 0; i < peaks->rowCount(); ++i) {
    QCOMPARE(peaks->data(peaks->index(i, parascope::ui::MemoryPeakModel::PeakBytes), Qt::UserRole)
                 .toLongLong(),
             memory[i].peakBytes);
  }
  QVERIFY(window.breakdownModel()->rowCount() >= 2 * 6);
  // The Analyses tab offers every table `analyze` prints; its stragglers are analyze's.
  QCOMPARE(window.analysisChoice()->count(),
           static_cast<int>(parascope::profiler::analysisTables().size()));
  window.analysisChoice()->setCurrentText(QStringLiteral("Stragglers (lateness at collectives)"));
  const auto stragglers = parascope::profiler::computeStragglers(trace);
  auto* table = window.analysisTableModel();
  QCOMPARE(table->rowCount(), static_cast<int>(stragglers.size()));
  QCOMPARE(table->rowCount(), 2);
  QCOMPARE(table->headerData(0, Qt::Horizontal).toString(), QStringLiteral("rank"));
  for (int i = 0; i < table->rowCount(); ++i) {
    QCOMPARE(table->index(i, 0).data().toInt(), stragglers[i].rank);
  }
  // Filtering by one operation keeps only its bytes.
  window.communicationView()->setOperation(QStringLiteral("allReduce"));
  const auto allReduce = parascope::profiler::commVolumeOf(trace, "allReduce");
  QCOMPARE(matrix->data(matrix->index(0, 1), Qt::UserRole).toLongLong(),
           allReduce.matrix.at(comm.matrix.ranks[0], comm.matrix.ranks[1]));

  QTemporaryDir dir;
  const QStringList files = window.saveScreenshots(dir.path());
  QCOMPARE(files.size(), 1 + window.views()->count());
  for (const QString& f : files) checkPixels(f);
}

// The timeline is fed while the session runs (a paused session already shows its first step)
// and, once it ended, holds exactly the events of the trace file written from the whole run.
void TestWorkbenchWindow::timelineFillsWhileRunning() {
  WorkbenchWindow window;
  nlohmann::json doc = tinyDocument();
  doc["data_parallel_size"] = 2;
  window.setDocument(doc);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QSignalSpy ended(&window, &WorkbenchWindow::sessionEnded);
  QSignalSpy shown(&window, &WorkbenchWindow::traceShown);
  const parascope::ui::TimelineView* view = window.timeline()->view();
  // F10 starts the session paused and runs one step.
  QTest::keyClick(&window, Qt::Key_F10);
  QTRY_COMPARE_WITH_TIMEOUT(window.stepsSeen(), 1, 60000);
  QTRY_VERIFY_WITH_TIMEOUT(view->index().eventCount() > 0, 10000);
  QVERIFY(window.running());
  QCOMPARE(ended.count(), 0);
  const std::size_t afterOneStep = view->index().eventCount();
  QTest::keyClick(&window, Qt::Key_F6);  // resume
  QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 120000);
  QCOMPARE(ended.at(0).at(0).toBool(), false);
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
  QVERIFY(view->index().eventCount() > afterOneStep);
  // Nobody moved the view: it shows the whole run.
  QVERIFY(view->followsLive());
  QCOMPARE(view->axis().startNs, view->index().beginNs());
  QCOMPARE(view->axis().endNs(view->timeAreaWidth()), view->index().endNs());

  using Key = std::tuple<std::int32_t, std::int32_t, std::int64_t, std::int64_t, std::string, int,
                         std::int64_t>;
  const auto keys = [](const parascope::profiler::TimelineIndex& index) {
    const parascope::profiler::TraceData t = index.toTrace(index.beginNs(), index.endNs());
    std::vector<Key> out;
    for (const parascope::profiler::Event& e : t.events) {
      out.emplace_back(e.rank, e.lane, e.startNs, e.endNs, e.name, static_cast<int>(e.kind),
                       e.bytes);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  const parascope::profiler::TraceData file =
      parascope::profiler::importChromeTraces({window.tracePath().toStdString()});
  parascope::profiler::TimelineIndex whole;
  whole.build(file);
  QCOMPARE(view->index().eventCount(), file.events.size());
  QCOMPARE(view->index().eventCount(), whole.eventCount());
  const std::vector<Key> live = keys(view->index());
  QCOMPARE(live.size(), file.events.size());
  QVERIFY(live == keys(whole));
}

// Save checkpoint writes under the directory given (what the dialog returns) at the next step
// boundary; the core's reader opens it. Load starts a new session from it under the panel's
// strategy; a corrupt one is refused with the reader's reason and the running session goes on.
// A trace opened while a session runs gets a tab of its own: the run goes on in its tab (its
// timeline still fed), the views show the current tab's trace, and closing the tab leaves the
// run's.
void TestWorkbenchWindow::traceTabsBesideTheRun() {
  QTemporaryDir dir;
  const QString file = dir.filePath(QStringLiteral("synthetic.json"));
  parascope::profiler::SyntheticOptions options;
  options.events = 5000;
  options.ranks = 2;
  options.stages = 2;
  const parascope::profiler::TraceData synthetic =
      parascope::profiler::syntheticTrainingTrace(options);
  parascope::profiler::exportChromeTrace(synthetic, file.toStdString());
  WorkbenchWindow window;
  window.setDocument(tinyDocument());
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QSignalSpy ended(&window, &WorkbenchWindow::sessionEnded);
  QSignalSpy shown(&window, &WorkbenchWindow::traceShown);
  QTest::keyClick(&window, Qt::Key_F10);  // one step, then paused
  QTRY_COMPARE_WITH_TIMEOUT(window.stepsSeen(), 1, 60000);
  const parascope::ui::TimelineView* run = window.timeline()->view();
  QTRY_VERIFY_WITH_TIMEOUT(run->index().eventCount() > 0, 10000);
  const std::size_t afterOneStep = run->index().eventCount();

  window.showTraces({file});
  QTabWidget* tabs = window.traceTabs();
  QCOMPARE(tabs->count(), 2);
  QCOMPARE(tabs->currentIndex(), 1);
  QCOMPARE(tabs->tabText(0), QStringLiteral("Run"));
  QCOMPARE(tabs->tabText(1), QStringLiteral("synthetic.json"));
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
  QCOMPARE(window.traceTimeline(1)->view()->index().eventCount(),
           parascope::profiler::importChromeTraces({file.toStdString()}).events.size());
  QVERIFY(window.shownAnalysis());
  QCOMPARE(window.shownAnalysis()->files, std::vector<std::string>{file.toStdString()});
  QVERIFY(window.running());

  QTest::keyClick(&window, Qt::Key_F6);  // resume: the run ends in its own tab
  QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 120000);
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 2, 60000);
  QVERIFY(run->index().eventCount() > afterOneStep);
  QCOMPARE(window.timeline()->view(), run);
  // The run's analysis came while the trace's tab was current: the views stayed on the trace.
  QCOMPARE(window.shownAnalysis()->files, std::vector<std::string>{file.toStdString()});
  tabs->setCurrentIndex(0);
  QCOMPARE(window.shownAnalysis()->files,
           std::vector<std::string>{window.tracePath().toStdString()});
  tabs->setCurrentIndex(1);
  QCOMPARE(window.shownAnalysis()->files, std::vector<std::string>{file.toStdString()});
  emit tabs->tabCloseRequested(1);
  QCOMPARE(tabs->count(), 1);
  QCOMPARE(window.shownAnalysis()->files,
           std::vector<std::string>{window.tracePath().toStdString()});
  emit tabs->tabCloseRequested(0);  // the run's tab does not close
  QCOMPARE(tabs->count(), 1);
}

void TestWorkbenchWindow::savesAndLoadsCheckpoints() {
  WorkbenchWindow window;
  nlohmann::json doc = tinyDocument();
  doc["data_parallel_size"] = 2;
  // More steps than the test can see run: the session must still be running when the pause and
  // the refused load arrive, however slowly this machine draws.
  doc["train_iters"] = 100000;
  doc["eval_interval"] = 0;
  window.setDocument(doc);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QTemporaryDir dir;
  QTest::keyClick(&window, Qt::Key_F10);
  QTRY_COMPARE_WITH_TIMEOUT(window.stepsSeen(), 1, 60000);
  window.saveCheckpointTo(dir.path());
  QTest::keyClick(&window, Qt::Key_F10);
  QTRY_VERIFY_WITH_TIMEOUT(!window.lastCheckpoint().isEmpty(), 60000);
  const QString saved = window.lastCheckpoint();
  QVERIFY2(window.statusText().contains(QStringLiteral("Checkpoint saved at step")),
           qPrintable(window.statusText()));

  const parascope::CheckpointReader reader(dir.path().toStdString());
  QCOMPARE(QString::fromStdString(reader.directory()), saved);
  const int step = reader.manifest().counters.step;
  QCOMPARE(saved, dir.filePath(QString::fromStdString(parascope::stepDirectoryName(step))));
  QCOMPARE(step, 1);  // the boundary the paused session stands at
  QCOMPARE(reader.manifest().config["data_parallel_size"].get<int>(), 2);
  QCOMPARE(reader.manifest().files.size(), std::size_t{2});
  reader.verifyChecksums();

  // Loaded under the panel's strategy: a new session that starts after the saved step.
  window.loadCheckpointFrom(dir.path());
  QVERIFY(window.running());
  QTRY_VERIFY_WITH_TIMEOUT(window.stepsSeen() > step, 60000);
  QCOMPARE(window.logModel()->data(window.logModel()->index(0, 0)).toInt(), step + 1);
  QTest::keyClick(&window, Qt::Key_F6);  // pause, so nothing moves while the load is refused

  // A manifest cut short: refused before anything stops.
  const QString manifest = QDir(saved).filePath(QStringLiteral("manifest.json"));
  QFile f(manifest);
  QVERIFY(f.open(QIODevice::ReadWrite));
  QVERIFY(f.resize(f.size() / 2));
  f.close();
  QTest::qWait(300);  // the step under way when F6 was pressed ends
  const int stepsBefore = window.stepsSeen();
  const int rowsBefore = window.logModel()->rowCount();
  window.loadCheckpointFrom(dir.path());
  QVERIFY2(window.errorText().startsWith(QStringLiteral("Cannot load the checkpoint: ")),
           qPrintable(window.errorText()));
  QVERIFY2(window.errorText().contains(QStringLiteral("manifest.json")),
           qPrintable(window.errorText()));
  QVERIFY(window.running());
  QTest::qWait(100);
  QCOMPARE(window.stepsSeen(), stepsBefore);
  QCOMPARE(window.logModel()->rowCount(), rowsBefore);
  QCOMPARE(window.lastCheckpoint(), saved);
}

void TestWorkbenchWindow::corruptTraceChangesNothing() {
  WorkbenchWindow window;
  window.show();
  QTemporaryDir dir;
  const QString bad = dir.filePath(QStringLiteral("bad.json"));
  QFile f(bad);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write("{\"traceEvents\": [ {\"ph\": \"X\", ");
  f.close();
  QSignalSpy shown(&window, &WorkbenchWindow::traceShown);
  window.showTraces({bad});
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 30000);
  QVERIFY2(window.errorText().contains(QStringLiteral("bad.json")), qPrintable(window.errorText()));
  QCOMPARE(window.breakdownModel()->rowCount(), 0);
  QCOMPARE(window.communicationView()->matrixModel()->rowCount(), 0);
}

// Empty tables say why: nothing shown yet, or a trace in which no rank sent anything (one rank).
void TestWorkbenchWindow::communicationViewSaysWhyItIsEmpty() {
  parascope::ui::CommunicationView view;
  QCOMPARE(view.emptyText(),
           QStringLiteral(
               "Run a session or open a trace to see the bytes each rank sends to each other."));
  view.setAnalysis(std::make_shared<const parascope::profiler::TraceAnalysis>());
  QCOMPARE(view.matrixModel()->rowCount(), 0);
  QCOMPARE(view.emptyText(), QStringLiteral("No rank sent anything to another in this trace: a "
                                            "run on one rank has no one to send to."));
}

void TestWorkbenchWindow::pipelineViewShowsTheSchedule() {
  WorkbenchWindow window;
  nlohmann::json doc = tinyDocument();
  doc["pipeline_model_parallel_size"] = 2;
  doc["gradient_accumulation_steps"] = 4;
  doc["train_iters"] = 3;
  window.setDocument(doc);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QVERIFY2(window.panel()->config().has_value(), qPrintable(window.panel()->message()));
  QSignalSpy shown(&window, &WorkbenchWindow::traceShown);
  QTest::keyClick(&window, Qt::Key_F5);
  QTRY_VERIFY_WITH_TIMEOUT(window.stepsSeen() == 3, 60000);
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
  QVERIFY2(window.errorText().isEmpty(), qPrintable(window.errorText()));
  const parascope::ui::PipelineView* view = window.pipelineView();
  QCOMPARE(static_cast<int>(view->rows().size()), 2);
  QVERIFY(view->step() >= 0);
  QCOMPARE(view->idealBubble(), 1.0 / 5.0);  // (p - 1) / (v m + p - 1), p = 2, m = 4
  for (const auto& row : view->rows()) {
    QVERIFY(row.bubble >= 0 && row.bubble < 1);
    // Every micro-batch's forward on each stage.
    int forwards = 0;
    for (const auto& box : row.boxes) forwards += box.kind == 0;
    QCOMPARE(forwards, 4);
  }
  QCOMPARE(view->rows()[1].stage, 1);
  QCOMPARE(view->step(), 3);  // the last step, numbered as the Log numbers it

  // The views of a run are the registered ones, in their order, between the Log and Compare.
  QStringList tabs;
  for (int i = 0; i < window.views()->count(); ++i) tabs << window.views()->tabText(i);
  QCOMPARE(tabs, QStringList({"Log", "Memory", "Pipeline", "Communication", "Breakdown", "Analyses",
                              "Compare", "Prediction", "Planner"}));
  QCOMPARE(window.runViews().size(), parascope::ui::workbenchViews().size());
  QVERIFY(window.breakdownModel()->rowCount() > 0);
  QVERIFY(window.analysisTableModel()->rowCount() > 0);
  QVERIFY(window.communicationView()->matrixModel()->rowCount() > 0);
  QCOMPARE(window.communicationView()->emptyText(), QString());

  // Another run: nothing of the first is shown while it runs (each view was told the session
  // started), and an analysis still in flight for it would be dropped; its own schedule comes
  // when it ends.
  QTest::keyClick(&window, Qt::Key_F5);
  QCOMPARE(window.breakdownModel()->rowCount(), 0);
  QCOMPARE(window.analysisTableModel()->rowCount(), 0);
  QCOMPARE(window.communicationView()->matrixModel()->rowCount(), 0);
  QCOMPARE(window.communicationView()->emptyText(),
           QStringLiteral("The communication of this run is shown when it ends."));
  QVERIFY(view->rows().empty());
  QCOMPARE(view->emptyText(),
           QStringLiteral("The pipeline schedule of this run is shown when it ends."));
  QCOMPARE(window.memoryView()->peakModel()->rowCount(), 0);
  QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 2, 60000);
  QCOMPARE(static_cast<int>(view->rows().size()), 2);
  QVERIFY(window.memoryView()->peakModel()->rowCount() > 0);
}

void TestWorkbenchWindow::compareMarksTheBestSegment() {
  using parascope::ui::SegmentModel;
  SegmentModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  // Two segments: D2 is faster, D1 T2 uses less memory.
  const struct {
    const char* name;
    int ranks;
    double seconds;
    std::int64_t bytes;
  } segments[] = {{"D2", 2, 0.5, 4 << 20}, {"D1 T2", 2, 1.0, 2 << 20}};
  int step = 0;
  for (const auto& seg : segments) {
    model.begin(seg.name, seg.ranks, 1000.0);
    for (int i = 0; i < 3; ++i) {
      parascope::StepReport r;
      r.step = ++step;
      r.loss = 5.0 - 0.1 * step;
      r.seconds = seg.seconds;
      r.tokens = 1000;
      r.exposedCommSeconds = 0.1 * seg.seconds;
      r.peakBytes[0] = seg.bytes;
      for (int rank = 0; rank < seg.ranks; ++rank) model.addRankStep(r);
      model.addStep(r);
    }
  }
  QCOMPARE(model.rowCount(), 2);
  QCOMPARE(model.value(0, SegmentModel::TokensPerSecond), 2000.0);
  QCOMPARE(model.value(1, SegmentModel::TokensPerSecond), 1000.0);
  QVERIFY(model.isBest(0, SegmentModel::TokensPerSecond));
  QVERIFY(!model.isBest(1, SegmentModel::TokensPerSecond));
  QVERIFY(model.isBest(1, SegmentModel::PeakMemory));
  // Both expose 10% of their step (0.05 of 0.5 s, 0.1 of 1 s; equal when shown, not to the last
  // bit): neither is best.
  QCOMPARE(model.data(model.index(0, SegmentModel::ExposedComm)).toString(), QString("10.0%"));
  QCOMPARE(model.data(model.index(1, SegmentModel::ExposedComm)).toString(), QString("10.0%"));
  QVERIFY(!model.isBest(0, SegmentModel::ExposedComm));
  QVERIFY(!model.isBest(1, SegmentModel::ExposedComm));
  QVERIFY(std::abs(model.value(0, SegmentModel::LossTrend) + 0.1) < 1e-9);
  QVERIFY(model.data(model.index(0, SegmentModel::TokensPerSecond)).toString().contains("★"));
  QVERIFY(model.data(model.index(0, SegmentModel::TokensPerSecond), Qt::FontRole)
              .value<QFont>()
              .bold());
  const std::string csv = model.toCsv();
  QVERIFY(csv.rfind("strategy,ranks,steps,tokens_per_s", 0) == 0);
  QVERIFY(csv.find("\"D1 T2\",2,3,1000,") != std::string::npos);
  const auto json = nlohmann::json::parse(model.toJson());
  QCOMPARE(json.size(), std::size_t{2});
  QCOMPARE(json[0]["best"][0].get<std::string>(), std::string("tokens_per_s"));
}

void TestWorkbenchWindow::failedSessionShowsItsReason() {
  WorkbenchWindow window;
  nlohmann::json doc = tinyDocument();
  doc["data"]["path"] = "/nonexistent/parascope-test-corpus";
  window.setDocument(doc);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QSignalSpy ended(&window, &WorkbenchWindow::sessionEnded);
  QTest::keyClick(&window, Qt::Key_F5);
  QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 60000);
  QCOMPARE(ended.at(0).at(0).toBool(), true);
  QVERIFY2(window.errorText().contains(QStringLiteral("parascope-test-corpus")),
           qPrintable(window.errorText()));
  QVERIFY(!window.running());
  // The window lives on and the last config was kept for the next launch.
  QVERIFY(window.action(QStringLiteral("start"))->isEnabled());
  QCOMPARE(WorkbenchWindow::lastDocument()["data"]["path"].get<std::string>(),
           std::string("/nonexistent/parascope-test-corpus"));
}

// D2 -> D2 T2 through the panel's widgets while the session runs: the same global batch on 4
// ranks instead of 2, a marker on every chart, a new Compare segment, and the loss going on.
void TestWorkbenchWindow::switchesThroughThePanel() {
  WorkbenchWindow window;
  nlohmann::json doc = tinyDocument();
  doc["data_parallel_size"] = 2;
  doc["gradient_accumulation_steps"] = 2;
  doc["train_iters"] = 100000;  // still running when the pause lands, however slow the machine
  window.setDocument(doc);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QTest::keyClick(&window, Qt::Key_F5);
  QTRY_VERIFY_WITH_TIMEOUT(window.stepsSeen() >= 2, 60000);
  QTest::keyClick(&window, Qt::Key_F6);  // pause, so the switch lands mid-run
  StrategyPanel* panel = window.panel();
  auto spin = [panel](const char* key) {
    return qobject_cast<QSpinBox*>(panel->field(QString::fromLatin1(key)));
  };
  // The session's own verdict before Apply: an accumulation that would change the global batch
  // (2 x 2 x 2 = 8) is refused in its words; fewer data-parallel ranks keep it by a larger
  // accumulation, which the panel says.
  typeInto(spin("gradient_accumulation_steps"), 3);
  QVERIFY2(panel->message().startsWith(
               QStringLiteral("switch: the global batch would change from 8 to 12")),
           qPrintable(panel->message()));
  QVERIFY(!panel->applyButton()->isEnabled());
  typeInto(spin("gradient_accumulation_steps"), 2);
  typeInto(spin("data_parallel_size"), 1);
  typeInto(spin("world_size"), 1);
  QVERIFY2(panel->config().has_value(), qPrintable(panel->message()));
  QCOMPARE(panel->config()->gradientAccumulation, 4);
  QCOMPARE(panel->config()->globalBatch, 8);
  QVERIFY2(panel->message().contains(QStringLiteral("gradient accumulation 4")),
           qPrintable(panel->message()));
  typeInto(spin("world_size"), 2);
  typeInto(spin("data_parallel_size"), 2);
  // A switch the session refuses (sent past the panel) is shown with its reason until the next
  // accepted switch.
  nlohmann::json refused = doc;
  refused["gradient_accumulation_steps"] = 3;
  emit panel->applied(parascope::parseTrainConfig(refused));
  QVERIFY2(window.errorText().startsWith(QStringLiteral("Cannot switch: ")),
           qPrintable(window.errorText()));

  typeInto(spin("tensor_model_parallel_size"), 2);
  typeInto(spin("world_size"), 4);
  QVERIFY2(panel->applyButton()->isEnabled(), qPrintable(panel->message()));
  QTest::mouseClick(panel->applyButton(), Qt::LeftButton);
  QTest::keyClick(&window, Qt::Key_F6);  // resume
  QTRY_COMPARE_WITH_TIMEOUT(window.charts()->switchCount(), 1, 60000);
  QCOMPARE(window.segmentModel()->rowCount(), 2);
  const int atSwitch = window.stepsSeen();
  QTRY_VERIFY_WITH_TIMEOUT(window.stepsSeen() >= atSwitch + 2, 60000);
  QVERIFY2(window.errorText().isEmpty(), qPrintable(window.errorText()));
  QCOMPARE(window.worldSize(), 4);
  QCOMPARE(window.charts()->pointCount(LiveCharts::Loss), window.stepsSeen());
  QSignalSpy diffed(&window, &WorkbenchWindow::diffShown);
  QTest::keyClick(&window, Qt::Key_F5, Qt::ShiftModifier);  // stop
  QTRY_VERIFY_WITH_TIMEOUT(!window.running(), 60000);

  // Once the run's trace is written, its two segments are the diff's A and B: what diffTraces
  // gives for the steps of each in the same file.
  QTRY_COMPARE_WITH_TIMEOUT(diffed.count(), 1, 60000);
  const int lastStep = window.stepsSeen();
  const int switched = window.charts()->switchSteps().at(0);
  // The memory view compares the 4-rank strategy's predictions with its own peaks.
  QTRY_VERIFY_WITH_TIMEOUT(!window.memoryView()->scopeText().isEmpty(), 60000);
  QCOMPARE(window.memoryView()->scopeText(),
           QStringLiteral("Peaks from step %1 on: the strategy the run ended with, which the "
                          "predictions are for")
               .arg(switched + 1));
  // ... and equal them, every rank's model state, buffers and workspace (the steps' peaks: the
  // switch's rebuilding is before them).
  int compared = 0;
  {
    const parascope::ui::MemoryPeakModel* peaks = window.memoryView()->peakModel();
    for (int row = 0; row < peaks->rowCount(); ++row) {
      using M = parascope::ui::MemoryPeakModel;
      const QString category = peaks->index(row, M::Category).data(Qt::UserRole).toString();
      if (category == QStringLiteral("activation")) continue;
      const double peak =
          static_cast<double>(peaks->index(row, M::PeakBytes).data(Qt::UserRole).toLongLong());
      const double predicted = peaks->index(row, M::Predicted).data(Qt::UserRole).toDouble();
      QVERIFY2(peak == predicted, qPrintable(QStringLiteral("rank %1 %2: peak %3, predicted %4")
                                                 .arg(peaks->index(row, M::Rank).data().toInt())
                                                 .arg(category)
                                                 .arg(peak, 0, 'f', 0)
                                                 .arg(predicted, 0, 'f', 0)));
      ++compared;
    }
  }
  QCOMPARE(compared, 4 * 4);  // parameters, gradients, optimizer state, workspace per rank
  const auto strategy = [&](int row) {
    return window.segmentModel()
        ->index(row, parascope::ui::SegmentModel::Strategy)
        .data()
        .toString();
  };
  QCOMPARE(
      window.diffSources(),
      QStringList({QStringLiteral("Segment 1: %1, steps 1\u2013%2").arg(strategy(0)).arg(switched),
                   QStringLiteral("Segment 2: %1, steps %2\u2013%3")
                       .arg(strategy(1))
                       .arg(switched + 1)
                       .arg(lastStep)}));
  const parascope::profiler::TraceData run =
      parascope::profiler::importChromeTraces({window.tracePath().toStdString()});
  {  // switched from 2 ranks to 4: the file says the most it ran on
    QFile file(window.tracePath());
    QVERIFY(file.open(QIODevice::ReadOnly));
    const auto info = nlohmann::json::parse(file.readAll().toStdString())["distributedInfo"];
    QCOMPARE(info["world_size"].get<int>(), 4);
  }
  const std::vector<parascope::profiler::DiffRow> expected =
      parascope::profiler::diffTraces({&run, 1, switched}, {&run, switched + 1, lastStep});
  const std::vector<parascope::profiler::DiffRow>& rows = window.diffModel()->rows();
  QCOMPARE(rows.size(), expected.size());
  bool allReduceInBoth = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    QCOMPARE(rows[i].name, expected[i].name);
    QCOMPARE(rows[i].communication, expected[i].communication);
    QCOMPARE(rows[i].aNs, expected[i].aNs);
    QCOMPARE(rows[i].bNs, expected[i].bNs);
    if (rows[i].communication && rows[i].name == "allReduce")
      allReduceInBoth = rows[i].aNs > 0 && rows[i].bNs > 0;
  }
  QVERIFY(allReduceInBoth);
  // The analyses and the diffs read the run from memory, not back from its file: they equal
  // what the file gives, and a diff still works once the file is gone.
  const auto fromFile = parascope::profiler::analyzeTraces({window.tracePath().toStdString()});
  QVERIFY(window.shownAnalysis());
  QCOMPARE(window.shownAnalysis()->tables, fromFile->tables);
  QCOMPARE(window.shownAnalysis()->trace->events.size(), run.events.size());
  QVERIFY(QFile::remove(window.tracePath()));
  auto* busy = window.findChild<QProgressBar*>(QStringLiteral("busy"));
  QVERIFY(busy);
  window.compareSources(1, 0);
  QVERIFY(!busy->isHidden());  // a busy sign while it compares
  QCOMPARE(window.findChild<QLabel*>(QStringLiteral("busyLabel"))->text(),
           QStringLiteral("comparing\u2026"));
  QTRY_COMPARE_WITH_TIMEOUT(diffed.count(), 2, 60000);
  QVERIFY(busy->isHidden());
  QVERIFY2(window.errorText().isEmpty(), qPrintable(window.errorText()));
  QCOMPARE(window.diffModel()->rows().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    QCOMPARE(window.diffModel()->rows()[i].aNs, expected[i].bNs);
    QCOMPARE(window.diffModel()->rows()[i].bNs, expected[i].aNs);
  }

  // The same switch headless, at the same step: the losses agree bit for bit.
  const QList<QPointF> gui = window.charts()->points(LiveCharts::Loss);
  const int switchStep = window.charts()->switchSteps().at(0);
  nlohmann::json next = doc;
  next["tensor_model_parallel_size"] = 2;
  struct Losses final : parascope::SessionObserver {
    std::mutex mutex;
    std::vector<double> loss;
    void onStep(const parascope::StepReport& r) override {
      std::lock_guard lock(mutex);
      loss.push_back(r.loss);
    }
    std::size_t count() {
      std::lock_guard lock(mutex);
      return loss.size();
    }
  } reference;
  parascope::Session session(parascope::parseTrainConfig(doc));
  session.addObserver(reference);
  session.start(true);
  for (int i = 1; i <= switchStep; ++i) {
    session.stepOnce();
    QTRY_COMPARE_WITH_TIMEOUT(reference.count(), static_cast<std::size_t>(i), 60000);
  }
  session.switchStrategy(parascope::parseTrainConfig(next));
  session.resume();
  QTRY_VERIFY_WITH_TIMEOUT(reference.count() >= static_cast<std::size_t>(gui.size()), 60000);
  session.stop();
  session.wait();
  for (int i = 0; i < gui.size(); ++i) {
    QVERIFY2(gui[i].y() == reference.loss[static_cast<std::size_t>(i)],
             qPrintable(QStringLiteral("step %1: workbench %2, headless %3")
                            .arg(i + 1)
                            .arg(gui[i].y(), 0, 'g', 17)
                            .arg(reference.loss[static_cast<std::size_t>(i)], 0, 'g', 17)));
  }
}

// The Log scrolls to each new step while it shows the newest; scrolled back, it stays put.
void TestWorkbenchWindow::logFollowsTheNewestStep() {
  WorkbenchWindow window;
  window.resize(1200, 800);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  auto* view = window.findChild<QTableView*>(QStringLiteral("logView"));
  QVERIFY(view != nullptr);
  window.findChild<QTabWidget*>(QStringLiteral("views"))->setCurrentWidget(view);
  auto addSteps = [&](int from, int count) {
    for (int i = from; i < from + count; ++i) {
      parascope::StepReport r;
      r.step = i;
      r.seconds = 0.1;
      window.logModel()->addStep(r);
    }
    QCoreApplication::processEvents();
  };
  addSteps(1, 200);
  QScrollBar* bar = view->verticalScrollBar();
  QVERIFY(bar->maximum() > 0);
  QCOMPARE(bar->value(), bar->maximum());
  bar->setValue(0);
  addSteps(201, 20);
  QCOMPARE(bar->value(), 0);
  bar->setValue(bar->maximum());
  addSteps(221, 20);
  QCOMPARE(bar->value(), bar->maximum());
}

void TestWorkbenchWindow::quitClosesTheWorkbench_data() {
  QTest::addColumn<int>("way");
  QTest::newRow("Ctrl+Q") << 0;
  QTest::newRow("Session menu") << 1;
  QTest::newRow("timeline's File menu") << 2;
}

// Each Quit closes the whole window, never the embedded timeline alone.
void TestWorkbenchWindow::quitClosesTheWorkbench() {
  QFETCH(int, way);
  WorkbenchWindow window;
  window.show();
  window.activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(&window));
  auto* timeline = window.findChild<parascope::ui::TimelineWindow*>();
  QVERIFY(timeline != nullptr);
  auto* timelineQuit = timeline->findChild<QAction*>(QStringLiteral("quit"));
  QVERIFY(timelineQuit != nullptr);
  QVERIFY(timelineQuit->shortcut().isEmpty());  // one Ctrl+Q in the window, not two
  if (way == 0) {
    QTest::keyClick(&window, Qt::Key_Q, Qt::ControlModifier);
  } else if (way == 1) {
    window.action(QStringLiteral("quit"))->trigger();
  } else {
    timelineQuit->trigger();
  }
  QTRY_VERIFY(!window.isVisible());
  QVERIFY(!timeline->isHidden());
}

QTEST_MAIN(TestWorkbenchWindow)
#include "test_workbench_window.moc"
