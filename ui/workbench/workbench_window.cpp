#include "ui/workbench/workbench_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <optional>
#include <vector>

#include "core/common/error.h"
#include "core/config/model_kind.h"
#include "core/kernels/sgemm_peak.h"
#include "core/plan/memory_estimate.h"
#include "core/session/run_summary.h"
#include "core/state/checkpoint.h"
#include "profiler/analysis/analysis_table.h"
#include "profiler/analysis/trace_run.h"
#include "profiler/io/chrome_import.h"
#include "profiler/live_trace.h"
#include "ui/adaptive_splitter.h"
#include "ui/gui_output.h"
#include "ui/name_columns.h"
#include "ui/timeline/timeline_window.h"
#include "ui/views/analyses_view.h"
#include "ui/views/analysis_table_model.h"
#include "ui/views/breakdown_model.h"
#include "ui/views/breakdown_view.h"
#include "ui/views/communication_view.h"
#include "ui/views/diff_model.h"
#include "ui/views/memory_peak_model.h"
#include "ui/views/memory_view.h"
#include "ui/views/pipeline_view.h"
#include "ui/views/planner_view.h"
#include "ui/views/prediction_view.h"
#include "ui/views/segment_model.h"
#include "ui/views/training_log_model.h"
#include "ui/workbench/live_charts.h"
#include "ui/workbench/strategy_panel.h"
#include "ui/workbench/workbench_settings.h"

namespace parascope::ui {

namespace {

// Ended runs and opened traces whose events stay in memory for Compare's diffs (each as large
// as its trace's events); older ones are read from their files when picked.
constexpr std::size_t kTracesInMemory = 4;
// From this height on Compare stacks its segments over the diff; below it, side by side.
constexpr int kCompareStackedFrom = 360;

// Reports are drained every 16 ms frame (a rank waiting on a full queue waits one frame at
// most), but what they change is drawn less often: each redraw of the charts or the timeline
// takes CPU time from the rank threads on a machine whose cores they already fill. The charts
// follow steps at up to 10 updates a second, the timeline at 5 (one ~1 ms repaint each).
constexpr qint64 kChartsPeriodMs = 100;
constexpr qint64 kTimelinePeriodMs = 200;

bool due(const QElapsedTimer& since, qint64 periodMs) {
  return !since.isValid() || since.hasExpired(periodMs);
}

template <class... F>
struct Visitor : F... {
  using F::operator()...;
};
template <class... F>
Visitor(F...) -> Visitor<F...>;  // spelled out: clang 14 deduces no aggregate's arguments

}  // namespace

WorkbenchWindow::WorkbenchWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("ParaScope workbench"));
  panel_ = new StrategyPanel;
  auto* scroll = new QScrollArea;
  scroll->setWidget(panel_);
  scroll->setWidgetResizable(true);
  auto* dock = new QDockWidget(tr("Strategy"), this);
  dock->setObjectName(QStringLiteral("strategyDock"));
  dock->setWidget(scroll);
  addDockWidget(Qt::LeftDockWidgetArea, dock);
  connect(panel_, &StrategyPanel::applied, this, &WorkbenchWindow::applyStrategy);
  connect(panel_, &StrategyPanel::validityChanged, this, &WorkbenchWindow::updateActions);

  charts_ = new LiveCharts;
  timeline_ = new TimelineWindow;
  timeline_->setWindowFlags(Qt::Widget);
  traceTabs_ = new QTabWidget;
  traceTabs_->setObjectName(QStringLiteral("traceTabs"));
  traceTabs_->setTabsClosable(true);
  traceTabs_->setDocumentMode(true);
  traceTabs_->addTab(timeline_, tr("Run"));
  traceTabs_->tabBar()->setTabButton(0, QTabBar::RightSide, nullptr);  // the run's stays
  connect(traceTabs_, &QTabWidget::tabCloseRequested, this, &WorkbenchWindow::closeTraceTab);
  connect(traceTabs_, &QTabWidget::currentChanged, this, &WorkbenchWindow::showTabAnalysis);
  connect(timeline_->loader(), &TraceLoader::failed, this,
          [this](const QString& why) { setStatus(tr("Trace not shown: %1").arg(why)); });
  log_ = new TrainingLogModel(this);
  buildViews();

  errorBanner_ = new QWidget;
  errorBanner_->setObjectName(QStringLiteral("errorBanner"));
  errorBanner_->setStyleSheet(QStringLiteral("#errorBanner { background: #fdecea; }"));
  errorLabel_ = new QLabel;
  errorLabel_->setWordWrap(true);
  errorLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  resume_ = new QPushButton(tr("Resume from last checkpoint"));
  resume_->setObjectName(QStringLiteral("resume"));
  auto* bannerLayout = new QHBoxLayout(errorBanner_);
  bannerLayout->addWidget(errorLabel_, 1);
  bannerLayout->addWidget(resume_);
  errorBanner_->hide();
  connect(resume_, &QPushButton::clicked, this, [this] {
    if (panel_->config() && !lastCheckpoint_.empty())
      startSession(*panel_->config(), lastCheckpoint_);
  });

  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->setObjectName(QStringLiteral("centralSplitter"));
  splitter->addWidget(charts_);
  splitter->addWidget(traceTabs_);
  splitter->addWidget(views_);
  splitter->setStretchFactor(0, 2);
  splitter->setStretchFactor(1, 5);
  splitter->setStretchFactor(2, 3);
  splitter->setSizes({200, 500, 300});
  auto* central = new QWidget;
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(errorBanner_);
  layout->addWidget(splitter, 1);
  setCentralWidget(central);

  status_ = new QLabel(tr("Ready: set a strategy and press Start (F5)"));
  statusBar()->addWidget(status_, 1);
  busyLabel_ = new QLabel;
  busyLabel_->setObjectName(QStringLiteral("busyLabel"));
  busy_ = new QProgressBar;
  busy_->setObjectName(QStringLiteral("busy"));
  busy_->setRange(0, 0);  // how long an analysis takes is not known: a busy sign
  busy_->setMaximumWidth(120);
  busy_->setTextVisible(false);
  statusBar()->addPermanentWidget(busyLabel_);
  statusBar()->addPermanentWidget(busy_);
  busyLabel_->hide();
  busy_->hide();
  buildActions();

  // MFU's peak: this machine's cached one, else measured once off the GUI thread, before the
  // user is likely to start a session. MFU has no value until it is known.
  if (const std::optional<double> peak = kernels::SgemmPeakCache::thisMachine().read()) {
    setPeakFlops(*peak);
  } else {
    // A failed probe leaves the peak unknown (no MFU).
    jobs_.start(
        kPeakJob, [](const JobTracker::Job&) { return kernels::sgemmPeak(); },
        [this](double peak) { setPeakFlops(peak); });
  }

  frame_ = new QTimer(this);
  frame_->setInterval(16);  // ~60 frames per second
  connect(frame_, &QTimer::timeout, this, &WorkbenchWindow::drain);
  frame_->start();
  updateActions();
}

WorkbenchWindow::~WorkbenchWindow() {
  endSession();
}

void WorkbenchWindow::buildViews() {
  views_ = new QTabWidget;
  views_->setObjectName(QStringLiteral("views"));
  logView_ = new QTableView;
  logView_->setObjectName(QStringLiteral("logView"));
  logView_->setModel(log_);
  logView_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // Fitted to the rows in view, not the first thousand: a fast run inserts rows faster than the
  // GUI could measure a thousand per insert (its steps then waited on the GUI, and a stop with
  // them, for half a minute).
  logView_->horizontalHeader()->setResizeContentsPrecision(0);
  logView_->verticalHeader()->hide();
  logView_->setWordWrap(false);  // numbers on one line ("1.00e-04" wrapped at its '-')
  // The Log follows the newest step while it shows the newest; scrolled back, it stays there.
  connect(log_, &QAbstractItemModel::rowsAboutToBeInserted, this, [this] {
    const QScrollBar* bar = logView_->verticalScrollBar();
    logFollows_ = bar->value() == bar->maximum();
  });
  connect(log_, &QAbstractItemModel::rowsInserted, this, [this] {
    // Columns fit the rows too, not only the headers they were sized to while the Log was empty
    // (the learning rate showed "1....").
    logView_->resizeColumnsToContents();
    if (logFollows_) logView_->scrollToBottom();
  });
  segments_ = new SegmentModel(this);
  auto* segmentsPage = new QWidget;
  auto* compareView = new QTableView;
  compareView->setObjectName(QStringLiteral("compareView"));
  compareView->setModel(segments_);
  compareView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  auto* exportCompare = new QPushButton(tr("Export as CSV or JSON..."));
  connect(exportCompare, &QPushButton::clicked, this, &WorkbenchWindow::exportComparison);
  auto* compareLayout = new QVBoxLayout(segmentsPage);
  compareLayout->setContentsMargins(0, 0, 0, 0);
  compareLayout->addWidget(new QLabel(
      tr("Each run and each live switch starts a segment; ★ marks the best of a column.")));
  compareLayout->addWidget(compareView, 1);
  compareLayout->addWidget(exportCompare, 0, Qt::AlignRight);
  // The segments beside the diff in a short tab (each keeps the tab's height for its rows),
  // above it in a tall one.
  auto* compare = new AdaptiveSplitter(kCompareStackedFrom, 0.5);
  compare->setObjectName(QStringLiteral("compareSplit"));
  compare->addWidget(segmentsPage);
  compare->addWidget(buildDiff());
  views_->addTab(logView_, tr("Log"));
  for (const ViewRegistration& registration : workbenchViews()) {
    WorkbenchView* view = registration.make();
    runViews_.push_back(view);
    views_->addTab(view->tab(), QCoreApplication::translate("WorkbenchView", registration.title));
  }
  views_->addTab(compare, tr("Compare"));
  beside_ = new QAction(tr("Show prediction &beside the run"), this);
  beside_->setObjectName(QStringLiteral("showPredictionBeside"));
  beside_->setCheckable(true);
  beside_->setToolTip(
      tr("Load the ended run into the timeline with each rank's predicted timeline under it "
         "(\"rank N (predicted)\"); hover an instruction for both times"));
  connect(beside_, &QAction::toggled, this, &WorkbenchWindow::showPredictionBeside);
  prediction_ = new PredictionView(beside_);
  prediction_->setObjectName(QStringLiteral("predictionTab"));
  views_->addTab(prediction_, tr("Prediction"));
  showPredictionHint();
  planner_ = new PlannerView;
  planner_->setObjectName(QStringLiteral("plannerTab"));
  planner_->setPanelDocument([this] { return panel_->document(); });
  connect(planner_, &PlannerView::applyRequested, this, [this](const nlohmann::json& document) {
    // Through the panel, so that it shows what runs and its rules (a switch's) decide.
    panel_->setDocument(document);
    if (!panel_->config()) {
      setStatus(tr("Not applied: %1").arg(panel_->message()));
      return;
    }
    panel_->applyButton()->click();
  });
  views_->addTab(planner_, tr("Planner"));
}

MemoryView* WorkbenchWindow::memoryView() const {
  return runView<MemoryView>();
}

PipelineView* WorkbenchWindow::pipelineView() const {
  return runView<PipelineView>();
}

CommunicationView* WorkbenchWindow::communicationView() const {
  return runView<CommunicationView>();
}

BreakdownModel* WorkbenchWindow::breakdownModel() const {
  return runView<BreakdownView>()->breakdown();
}

QComboBox* WorkbenchWindow::analysisChoice() const {
  return runView<AnalysesView>()->choice();
}

AnalysisTableModel* WorkbenchWindow::analysisTableModel() const {
  return runView<AnalysesView>()->model();
}

QWidget* WorkbenchWindow::buildDiff() {
  diff_ = new DiffModel(this);
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(diff_);
  proxy->setSortRole(Qt::UserRole);
  auto* view = new QTableView;
  view->setObjectName(QStringLiteral("diffView"));
  view->setModel(proxy);
  view->setSortingEnabled(true);
  view->sortByColumn(DiffModel::Delta, Qt::DescendingOrder);
  view->verticalHeader()->hide();
  fitNamesBesideNumbers(view, DiffModel::Name);
  diffA_ = new QComboBox;
  diffA_->setObjectName(QStringLiteral("diffA"));
  diffB_ = new QComboBox;
  diffB_->setObjectName(QStringLiteral("diffB"));
  diffHint_ = new QLabel;
  diffHint_->setObjectName(QStringLiteral("diffHint"));
  diffHint_->setWordWrap(true);
  diffHint_->setStyleSheet(QStringLiteral("color: #8a5a00;"));
  for (QComboBox* box : {diffA_, diffB_}) {
    box->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    connect(box, &QComboBox::currentIndexChanged, this,
            [this] { startDiff(diffA_->currentIndex(), diffB_->currentIndex()); });
  }
  auto* diff = new QWidget;
  auto* pick = new QHBoxLayout;
  pick->addWidget(
      new QLabel(tr("Diff per kernel and operation, ms per rank that ran it and per step: A")));
  pick->addWidget(diffA_);
  pick->addWidget(new QLabel(tr("B")));
  pick->addWidget(diffB_);
  pick->addStretch(1);
  auto* layout = new QVBoxLayout(diff);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(pick);
  layout->addWidget(diffHint_);
  layout->addWidget(view, 1);
  updateDiffHint();
  return diff;
}

// Why the diff table is empty when it has to be: a diff of a source with itself shows nothing.
void WorkbenchWindow::updateDiffHint() {
  QString hint;
  if (diffSources_.empty()) {
    hint =
        tr("Nothing to compare yet: each ended run's segments and each opened trace can be "
           "picked as A and B.");
  } else if (diffSources_.size() == 1) {
    hint = tr("Only one source so far (%1): a diff needs two. Switch the strategy during a run, "
              "run again or open a trace.")
               .arg(diffSources_.front().label);
  } else if (diffA_->currentIndex() == diffB_->currentIndex()) {
    hint = tr("A and B are the same source: pick two different ones.");
  }
  diffHint_->setText(hint);
  diffHint_->setHidden(hint.isEmpty());
}

QString WorkbenchWindow::diffHint() const {
  return diffHint_->isHidden() ? QString() : diffHint_->text();
}

QStringList WorkbenchWindow::diffSources() const {
  QStringList labels;
  for (const DiffSource& s : diffSources_) labels << s.label;
  return labels;
}

void WorkbenchWindow::addDiffSource(const QString& label, const QStringList& files, int firstStep,
                                    int lastStep) {
  appendDiffSource(label, files, firstStep, lastStep);
  // The newest source becomes B and the one before it A: the comparison just made possible.
  const int last = diffB_->count() - 1;
  pickDiff(std::max(0, last - 1), last);
}

void WorkbenchWindow::appendDiffSource(const QString& label, const QStringList& files,
                                       int firstStep, int lastStep) {
  DiffSource source{label, {}, nullptr, firstStep, lastStep};
  for (const QString& f : files) source.files.push_back(f.toStdString());
  diffSources_.push_back(std::move(source));
  const QSignalBlocker blockA(diffA_), blockB(diffB_);
  diffA_->addItem(label);
  diffB_->addItem(label);
}

void WorkbenchWindow::pickDiff(int a, int b) {
  {
    const QSignalBlocker blockA(diffA_), blockB(diffB_);
    diffA_->setCurrentIndex(a);
    diffB_->setCurrentIndex(b);
  }
  if (a != b) {
    startDiff(a, b);
  } else {
    updateDiffHint();
  }
}

void WorkbenchWindow::compareSources(int a, int b) {
  const int n = static_cast<int>(diffSources_.size());
  if (a < 0 || b < 0 || a >= n || b >= n) return;
  {
    const QSignalBlocker blockA(diffA_), blockB(diffB_);
    diffA_->setCurrentIndex(a);
    diffB_->setCurrentIndex(b);
  }
  startDiff(a, b);
}

void WorkbenchWindow::startDiff(int a, int b) {
  const int n = static_cast<int>(diffSources_.size());
  updateDiffHint();
  if (a < 0 || b < 0 || a >= n || b >= n) {
    jobs_.cancel(kDiffJob);
    updateBusy();
    return;
  }
  const DiffSource sa = diffSources_[static_cast<std::size_t>(a)];
  const DiffSource sb = diffSources_[static_cast<std::size_t>(b)];
  // The previous pair's rows go at once (and a diff of it still running is dropped); the tab
  // says what it is comparing meanwhile.
  diff_->setRows({});
  if (diffHint_->isHidden()) {
    diffHint_->setText(tr("Comparing %1 (A) with %2 (B)\u2026").arg(sa.label, sb.label));
    diffHint_->show();
  }
  jobs_.start(
      kDiffJob,
      [sa, sb](const JobTracker::Job&) {
        // A source in memory is read from nowhere; two segments of one run read its file once.
        std::shared_ptr<const profiler::TraceData> ta = sa.trace, tb = sb.trace;
        if (!ta)
          ta = std::make_shared<const profiler::TraceData>(profiler::importChromeTraces(sa.files));
        if (!tb)
          tb = sa.files == sb.files ? ta
                                    : std::make_shared<const profiler::TraceData>(
                                          profiler::importChromeTraces(sb.files));
        return profiler::diffTraces({ta.get(), sa.firstStep, sa.lastStep},
                                    {tb.get(), sb.firstStep, sb.lastStep});
      },
      [this](std::vector<profiler::DiffRow> rows) { showDiff(std::move(rows), {}); },
      [this](const QString& error) { showDiff({}, error); });
  updateBusy();
}

void WorkbenchWindow::showDiff(std::vector<profiler::DiffRow> rows, const QString& error) {
  updateDiffHint();  // no longer comparing
  updateBusy();
  if (error.isEmpty()) {
    diff_->setRows(std::move(rows));
  } else {
    showError(tr("Cannot compare: %1").arg(error), false);
  }
  emit diffShown();
}

void WorkbenchWindow::releaseOldTraces() {
  std::vector<const profiler::TraceData*> kept;
  for (auto s = diffSources_.rbegin(); s != diffSources_.rend(); ++s) {
    if (!s->trace) continue;
    if (std::find(kept.begin(), kept.end(), s->trace.get()) != kept.end()) continue;
    if (kept.size() < kTracesInMemory) {
      kept.push_back(s->trace.get());
    } else {
      s->trace.reset();
    }
  }
  // Segments of one run share its trace: a later segment kept it, so all of them do.
  for (DiffSource& s : diffSources_) {
    if (s.trace && std::find(kept.begin(), kept.end(), s.trace.get()) == kept.end())
      s.trace.reset();
  }
}

void WorkbenchWindow::showTraces(const QStringList& files) {
  if (files.isEmpty()) return;
  QStringList names;
  for (const QString& f : files) names << QFileInfo(f).fileName();
  addDiffSource(tr("Trace %1").arg(names.join(QStringLiteral(", "))), files, -1, -1);
  TraceTab tab;
  tab.timeline = new TimelineWindow;
  tab.timeline->setWindowFlags(Qt::Widget);
  if (auto* quit = tab.timeline->findChild<QAction*>(QStringLiteral("quit")))
    quit->setShortcut({});  // the window's Ctrl+Q, as for the run's timeline
  for (const QString& f : files) tab.files.push_back(f.toStdString());
  tab.slot = QStringLiteral("analysis:trace-%1").arg(++traceTabsOpened_);
  pendingShows_[tab.slot] = 2;  // the tab's timeline and the analysis
  connect(tab.timeline->loader(), &TraceLoader::loaded, this,
          [this, slot = tab.slot] { shownOne(slot); });
  connect(tab.timeline->loader(), &TraceLoader::failed, this,
          [this, slot = tab.slot](const QString& why) {
            setStatus(tr("Trace not shown: %1").arg(why));
            shownOne(slot);
          });
  traceTabList_.push_back(tab);
  traceRows_.push_back({tab.slot, names.join(QStringLiteral(", ")), false, std::nullopt});
  const int index = traceTabs_->addTab(tab.timeline, names.join(QStringLiteral(", ")));
  traceTabs_->setTabToolTip(index, files.join(QLatin1Char('\n')));
  traceTabs_->setCurrentIndex(index);
  tab.timeline->openFiles(files);
  analyse(tab.slot, files);
}

TimelineWindow* WorkbenchWindow::traceTimeline(int tab) const {
  if (tab == 0) return timeline_;
  if (tab < 1 || tab > static_cast<int>(traceTabList_.size())) return nullptr;
  return traceTabList_[static_cast<std::size_t>(tab - 1)].timeline;
}

void WorkbenchWindow::closeTraceTab(int tab) {
  if (tab < 1 || tab > static_cast<int>(traceTabList_.size())) return;
  const TraceTab closed = traceTabList_[static_cast<std::size_t>(tab - 1)];
  jobs_.cancel(closed.slot);
  traceRowDone(closed.slot, nullptr);  // a row still waiting for its analysis never comes
  traceTabList_.erase(traceTabList_.begin() + tab - 1);
  pendingShows_.erase(closed.slot);
  traceTabs_->removeTab(tab);  // the current tab's views follow (currentChanged)
  closed.timeline->deleteLater();
  updateBusy();
}

void WorkbenchWindow::showTabAnalysis(int tab) {
  if (tab == 0 && running()) {
    shownAnalysis_.reset();
    for (WorkbenchView* view : runViews_) view->sessionStarted(session_->config());
    return;
  }
  std::shared_ptr<const profiler::TraceAnalysis> analysis =
      tab == 0 ? runAnalysis_
               : (tab <= static_cast<int>(traceTabList_.size())
                      ? traceTabList_[static_cast<std::size_t>(tab - 1)].analysis
                      : nullptr);
  showAnalysis(analysis ? analysis : std::make_shared<const profiler::TraceAnalysis>(), tab == 0);
}

void WorkbenchWindow::analyse(const QString& slot, const QStringList& files,
                              const std::shared_ptr<const profiler::TraceData>& trace) {
  std::vector<std::string> paths;
  for (const QString& f : files) paths.push_back(f.toStdString());
  jobs_.start(
      slot,
      [paths, trace](const JobTracker::Job&) {
        return trace ? profiler::analyzeTrace(trace, paths) : profiler::analyzeTraces(paths);
      },
      [this, slot](const std::shared_ptr<const profiler::TraceAnalysis>& analysis) {
        analysed(slot, analysis);
      },
      [this, slot](const QString& error) {
        updateBusy();
        showError(tr("Cannot analyse the trace: %1").arg(error), false);
        traceRowDone(slot, nullptr);
        shownOne(slot);
      });
  updateBusy();
}

void WorkbenchWindow::analysed(const QString& slot,
                               const std::shared_ptr<const profiler::TraceAnalysis>& analysis) {
  updateBusy();
  // Opened traces: the diff reads them from memory from now on.
  for (DiffSource& s : diffSources_) {
    if (!s.trace && !analysis->files.empty() && s.files == analysis->files)
      s.trace = analysis->trace;
  }
  releaseOldTraces();
  int tab = 0;
  if (slot == kAnalysisJob) {
    runAnalysis_ = analysis;
  } else {
    for (std::size_t i = 0; i < traceTabList_.size(); ++i) {
      if (traceTabList_[i].slot != slot) continue;
      traceTabList_[i].analysis = analysis;
      tab = static_cast<int>(i) + 1;
      traceRowDone(slot, analysis.get());
    }
  }
  if (traceTabs_->currentIndex() == tab) showAnalysis(analysis, tab == 0);
  shownOne(slot);
}

// A recorded run opened as a trace is a row of the Compare table beside the sessions' segments,
// measured from the trace as they are from step reports (profiler/analysis/trace_run.h). Rows go
// in as the traces were opened: a row whose analysis ended waits for the ones before it.
void WorkbenchWindow::traceRowDone(const QString& slot, const profiler::TraceAnalysis* analysis) {
  for (TraceRow& row : traceRows_) {
    if (row.slot != slot || row.done) continue;
    row.done = true;
    if (analysis != nullptr) row.run = profiler::traceRun(*analysis);
  }
  while (!traceRows_.empty() && traceRows_.front().done) {
    const TraceRow& row = traceRows_.front();
    if (row.run) {
      segments_->addFinished(
          tr("Trace %1: %2").arg(row.name, QString::fromStdString(row.run->strategy)).toStdString(),
          row.run->ranks, row.run->flopsPerToken, row.run->rankSteps, row.run->steps);
    }
    traceRows_.pop_front();
  }
}

void WorkbenchWindow::updateBusy() {
  QStringList what;
  const bool analysing =
      jobs_.running(kAnalysisJob) ||
      std::any_of(traceTabList_.begin(), traceTabList_.end(),
                  [this](const TraceTab& tab) { return jobs_.running(tab.slot); });
  if (analysing) what << tr("analysing the trace");
  if (jobs_.running(kDiffJob)) what << tr("comparing");
  if (jobs_.running(kPredictionJob)) what << tr("predicting the run");
  if (jobs_.running(kCalibrationJob)) what << tr("calibrating");
  busyLabel_->setText(what.join(QStringLiteral(", ")) + QStringLiteral("\u2026"));
  busyLabel_->setVisible(!what.isEmpty());
  busy_->setVisible(!what.isEmpty());
}

// On the frame timer, a few times a second: what the ranks recorded since the last feed goes
// into the timeline. The recorder's thread did the collecting; this only indexes the new events.
// A timeline nobody can see (the window minimised) is not fed until it can be or `all` says so
// (the run ended): the events wait in the recorder's batch, none is dropped.
void WorkbenchWindow::feedTimeline(bool all) {
  if (!liveTrace_) return;
  timelineClock_.start();
  if (!all && (isMinimized() || !timeline_->isVisible())) return;
  const profiler::TraceData part = liveTrace_->take();
  TimelineView* view = timeline_->view();
  if (const std::string why = liveTrace_->failure(); !why.empty()) {
    const QString text = tr("The live timeline stopped: %1").arg(QString::fromStdString(why));
    if (view->message() != text) view->setMessage(text);
  }
  view->appendEvents(part.events);
  // Until the user zooms or pans, the whole run so far: a live window of one feed's width
  // would show a fraction of a step.
  if (!part.events.empty() && view->followsLive()) view->fitAll();
}

void WorkbenchWindow::shownOne(const QString& slot) {
  const auto it = pendingShows_.find(slot);
  if (it == pendingShows_.end()) return;
  if (--it->second > 0) return;
  pendingShows_.erase(it);
  emit traceShown(slot == kAnalysisJob);
}

void WorkbenchWindow::showAnalysis(const std::shared_ptr<const profiler::TraceAnalysis>& analysis,
                                   bool ownRun) {
  ShownTrace shown;
  shown.analysis = analysis;
  // The ended run switched live: the prediction is the last layout's, so are the peaks beside it.
  if (endedRun_.segments.size() > 1 && analysis->files.size() == 1 &&
      analysis->files.front() == endedRun_.tracePath) {
    shown.fromStep = endedRun_.segments.back().firstStep;
    for (const profiler::Event& e : analysis->trace->events) {
      if (e.category == profiler::Category::Step && e.kind == profiler::EventKind::Span &&
          e.step == shown.fromStep)
        shown.fromNs = shown.fromNs == INT64_MIN ? e.startNs : std::min(shown.fromNs, e.startNs);
    }
  }
  // The strategy the trace ran last: for the workbench's own run the session's, else the panel's;
  // for an opened trace the config it recorded (a trace without one is predicted by none, never
  // by whatever the panel holds). Each rank is predicted by its pipeline stage's estimate
  // (stages hold different layers); the peaks from a switch on by the steps' alone (the
  // switch's rebuilding is before them).
  if (ownRun) {
    shown.config = session_ ? std::optional(session_->config()) : panel_->config();
  } else if (analysis->trace) {
    shown.config = profiler::recordedTrainConfig(*analysis->trace);
  }
  if (shown.config) {
    const int ranks = shown.config->parallel.worldSize();
    const std::vector<MemoryEstimate> stages =
        estimateRankMemory(*shown.config, dataBytesInMemory(shown.config->data), ranks);
    const int perStage = ranks / static_cast<int>(stages.size());
    for (int r = 0; r < ranks; ++r) {
      const MemoryEstimate& stage = stages[static_cast<std::size_t>(r / perStage)];
      for (const MemoryItem& item : stage.items)
        shown.predictedMemory[r][item.name] = shown.fromStep >= 0 ? item.stepBytes : item.bytes;
      if (stage.swapBytes > 0)
        shown.predictedMemory[r][MemoryPeakModel::kSwapItemName] = stage.swapBytes;
    }
  }
  shownAnalysis_ = analysis;
  for (WorkbenchView* view : runViews_) view->traceReplaced(shown);
}

void WorkbenchWindow::buildActions() {
  struct Spec {
    const char* name;
    QString text;
    QKeySequence key;
    void (WorkbenchWindow::*slot)();
  };
  const Spec specs[] = {
      {"start", tr("&Start"), QKeySequence(Qt::Key_F5), &WorkbenchWindow::start},
      {"pause", tr("&Pause / resume"), QKeySequence(Qt::Key_F6), &WorkbenchWindow::togglePause},
      {"step", tr("Single s&tep"), QKeySequence(Qt::Key_F10), &WorkbenchWindow::stepOnce},
      {"stop", tr("St&op"), QKeySequence(Qt::SHIFT | Qt::Key_F5), &WorkbenchWindow::stop},
      {"saveCheckpoint", tr("Save &checkpoint"), QKeySequence(Qt::CTRL | Qt::Key_S),
       &WorkbenchWindow::saveCheckpoint},
      {"loadCheckpoint", tr("&Load checkpoint..."), QKeySequence(Qt::CTRL | Qt::Key_L),
       &WorkbenchWindow::loadCheckpoint},
      {"openTrace", tr("&Open trace..."), QKeySequence(Qt::CTRL | Qt::Key_O),
       &WorkbenchWindow::openTrace},
      {"export", tr("&Export run trace..."), QKeySequence(Qt::CTRL | Qt::Key_E),
       &WorkbenchWindow::exportTrace},
  };
  auto* bar = addToolBar(tr("Controls"));
  bar->setObjectName(QStringLiteral("controls"));
  QMenu* menu = menuBar()->addMenu(tr("&Session"));
  for (const Spec& s : specs) {
    auto* a = new QAction(s.text, this);
    a->setObjectName(QString::fromLatin1(s.name));
    a->setShortcut(s.key);
    a->setToolTip(QStringLiteral("%1 (%2)").arg(QString(s.text).remove(QLatin1Char('&')),
                                                s.key.toString(QKeySequence::NativeText)));
    connect(a, &QAction::triggered, this, s.slot);
    bar->addAction(a);
    menu->addAction(a);
  }
  auto* apply = new QAction(tr("&Apply strategy"), this);
  apply->setObjectName(QStringLiteral("applyStrategy"));
  apply->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
  connect(apply, &QAction::triggered, panel_->applyButton(), &QPushButton::click);
  connect(panel_, &StrategyPanel::validityChanged, apply, &QAction::setEnabled);
  apply->setEnabled(panel_->config().has_value());
  menu->addAction(apply);
  addAction(apply);
  menu->addSeparator();
  auto* calibrate = new QAction(tr("Ca&librate this machine"), this);
  calibrate->setObjectName(QStringLiteral("calibrate"));
  calibrate->setToolTip(
      tr("Measure this machine with short training runs (about a minute) so "
         "that the strategy panel can predict step times"));
  calibrate->setVisible(false);
  connect(calibrate, &QAction::triggered, this, &WorkbenchWindow::calibrate);
  menu->addAction(calibrate);
  menu->addSeparator();
  // One Ctrl+Q for the window: the embedded timeline's File ▸ Quit quits it too, without a
  // shortcut of its own, which would make Ctrl+Q ambiguous (and then do nothing). Ctrl+Q, not
  // QKeySequence::Quit, which some platforms (Windows' key scheme, the offscreen one) leave empty.
  auto* quit = new QAction(tr("&Quit"), this);
  quit->setObjectName(QStringLiteral("quit"));
  quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
  connect(quit, &QAction::triggered, this, &QWidget::close);
  menu->addAction(quit);
  addAction(quit);
  if (auto* timelineQuit = timeline_->findChild<QAction*>(QStringLiteral("quit")))
    timelineQuit->setShortcut({});
  menuBar()->addMenu(tr("&View"))->addAction(beside_);
}

QAction* WorkbenchWindow::action(const QString& name) const {
  return findChild<QAction*>(name);
}

void WorkbenchWindow::setDocument(const nlohmann::json& document) {
  panel_->setDocument(document);
}

nlohmann::json WorkbenchWindow::lastDocument() {
  return readLastDocument();
}

void WorkbenchWindow::restoreLayout() {
  const std::unique_ptr<QSettings> s = openSettings();
  if (!s) return;
  // Qt checks the blobs it wrote (a marker and a version) and refuses anything else; a refused
  // one is dropped, so that the next start does not meet it again.
  auto restore = [&s](const QString& key, const char* what, auto&& apply) {
    if (!s->contains(key) || apply(s->value(key).toByteArray())) return;
    sayDropped(std::string("the saved window ") + what + " in '" + s->fileName().toStdString() +
               "' cannot be restored; dropped");
    s->remove(key);
  };
  restore(QStringLiteral("window/geometry"), "geometry",
          [this](const QByteArray& b) { return restoreGeometry(b); });
  restore(QStringLiteral("window/state"), "state",
          [this](const QByteArray& b) { return restoreState(b); });
}

void WorkbenchWindow::closeEvent(QCloseEvent* event) {
  if (const std::unique_ptr<QSettings> s = openSettings()) {
    s->setValue(QStringLiteral("window/geometry"), saveGeometry());
    s->setValue(QStringLiteral("window/state"), saveState());
  }
  endSession();
  event->accept();
}

bool WorkbenchWindow::running() const {
  if (!session_) return false;
  const SessionState s = session_->state();
  return s == SessionState::Running || s == SessionState::Paused || s == SessionState::Idle;
}

QString WorkbenchWindow::statusText() const {
  return status_->text();
}
QString WorkbenchWindow::errorText() const {
  return errorBanner_->isHidden() ? QString() : errorLabel_->text();
}

void WorkbenchWindow::setStatus(const QString& text) {
  status_->setText(text);
}

// While a session runs the panel validates each edit as a switch of it (the session's rule and
// refusals); otherwise as a new run.
void WorkbenchWindow::showRunningStrategy() {
  if (!running()) {
    panel_->setRunning(std::nullopt, {});
    return;
  }
  Session* session = session_.get();
  panel_->setRunning(session->config(), [session](const nlohmann::json& doc, bool batchNamed) {
    return session->resolveSwitch(doc, batchNamed);
  });
}

void WorkbenchWindow::updateActions() {
  const bool live = running();
  action(QStringLiteral("start"))->setEnabled(!live && panel_->config().has_value());
  action(QStringLiteral("pause"))->setEnabled(live);
  action(QStringLiteral("stop"))->setEnabled(live);
  action(QStringLiteral("saveCheckpoint"))->setEnabled(live);
  action(QStringLiteral("export"))->setEnabled(!live && !tracePath_.empty());
  resume_->setEnabled(!lastCheckpoint_.empty() && !live);
  // Calibration trains on this machine: it would measure the session's load, not the machine.
  action(QStringLiteral("calibrate"))->setEnabled(!live && !calibrating_);
  beside_->setEnabled(!live && runShown_ &&
                      std::any_of(predictions_.begin(), predictions_.end(),
                                  [](const PredictedSegment& p) { return p.failure.empty(); }));
}

void WorkbenchWindow::start() {
  if (running()) return;
  if (!panel_->config()) {
    setStatus(tr("Not started: %1").arg(panel_->message()));
    return;
  }
  startSession(*panel_->config(), {});
}

void WorkbenchWindow::startSession(const TrainConfig& config, const std::string& load) {
  endSession();
  errorBanner_->hide();
  log_->clear();
  log_->setTarget(QString::fromUtf8(config.model.kind->target()));
  charts_->clear();
  lastStep_ = 0;
  paused_ = false;
  stepMetrics_ = {};
  writeLastDocument(panel_->document());
  SessionOptions options;
  tracePath_ =
      QDir(runDir_.path()).filePath(QStringLiteral("run-%1.json").arg(++runs_)).toStdString();
  liveTrace_ = std::make_shared<profiler::LiveTrace>(tracePath_);
  options.recorder = liveTrace_;
  timeline_->loader()->cancel();  // a trace still loading must not replace the run
  runShown_ = false;
  beside_->setChecked(false);
  timeline_->view()->setMessage({});
  timeline_->view()->setIndex(std::make_shared<profiler::TimelineIndex>());
  // The views of analyses show nothing of the previous run or trace while this one runs, and
  // an analysis or a prediction of them still running is dropped.
  jobs_.cancel(kAnalysisJob);
  jobs_.cancel(kPredictionJob);
  updateBusy();
  pendingShows_.erase(kAnalysisJob);
  runAnalysis_.reset();
  shownAnalysis_.reset();
  traceTabs_->setCurrentIndex(0);  // the run is what a user starting one wants to see
  for (WorkbenchView* view : runViews_) view->sessionStarted(config);
  options.load = load;
  bridge_ = std::make_unique<SessionBridge>();
  try {
    session_ = std::make_unique<Session>(config, options);
    session_->addObserver(*bridge_);
    switcher_.reset();
    if (!switchPlan_.empty()) {
      for (const PlannedSwitch& p : switchPlan_) session_->checkSwitch(p.config);
      switcher_ = std::make_unique<Switcher>(*session_, std::exchange(switchPlan_, {}));
      session_->addObserver(*switcher_);
    }
    if (stopAfter_ > 0) bridge_->stopAfter(stopAfter_, [s = session_.get()] { s->stop(); });
    session_->start(false);
    showRunningStrategy();
    world_ = config.parallel.worldSize();
    setStatus(tr("Running %1 on %2 ranks")
                  .arg(QString::fromStdString(describeStrategy(config)))
                  .arg(world_));
  } catch (const std::exception& e) {
    session_.reset();
    showError(tr("The session could not start: %1").arg(QString::fromUtf8(e.what())), false);
  }
  updateActions();
}

void WorkbenchWindow::endSession() {
  if (!session_) return;
  // Ranks blocked on a full queue must not wait for a drain that will not come.
  bridge_->close();
  session_->stop();
  panel_->setRunning(std::nullopt, {});  // its resolver asks the session
  session_.reset();
  drain();
}

void WorkbenchWindow::togglePause() {
  if (!session_) return;
  paused_ = !paused_;
  if (paused_) {
    session_->pause();
  } else {
    session_->resume();
  }
  setStatus(paused_ ? tr("Paused after step %1").arg(lastStep_) : tr("Running"));
}

void WorkbenchWindow::stepOnce() {
  if (!running()) {
    if (!panel_->config()) return;
    startSession(*panel_->config(), {});
    if (!session_) return;
    session_->pause();
    paused_ = true;
  }
  session_->stepOnce();
}

void WorkbenchWindow::stop() {
  if (session_) session_->stop();
}

void WorkbenchWindow::saveCheckpoint() {
  if (!running()) return;
  const QString dir =
      QFileDialog::getExistingDirectory(this, tr("Save checkpoint under"), checkpointDialogStart());
  if (!dir.isEmpty()) saveCheckpointTo(dir);
}

void WorkbenchWindow::saveCheckpointTo(const QString& dir) {
  if (!running()) return;
  session_->saveCheckpoint(dir.toStdString());
  setStatus(tr("Checkpoint requested at the next step boundary under %1").arg(dir));
}

void WorkbenchWindow::loadCheckpoint() {
  const QString dir =
      QFileDialog::getExistingDirectory(this, tr("Load checkpoint"), checkpointDialogStart());
  if (!dir.isEmpty()) loadCheckpointFrom(dir);
}

void WorkbenchWindow::loadCheckpointFrom(const QString& dir) {
  if (!panel_->config()) {
    setStatus(tr("Not loaded: %1").arg(panel_->message()));
    return;
  }
  // Opening validates the manifest and every file's presence and size, so a corrupt checkpoint
  // is refused here, before the running session is stopped for it.
  try {
    CheckpointReader reader(dir.toStdString());
  } catch (const std::exception& e) {
    showError(tr("Cannot load the checkpoint: %1").arg(QString::fromUtf8(e.what())), false);
    return;
  }
  startSession(*panel_->config(), dir.toStdString());
}

// The last checkpoint's parent (where its step directories are), else the home directory.
QString WorkbenchWindow::checkpointDialogStart() const {
  if (lastCheckpoint_.empty()) return QDir::homePath();
  return QFileInfo(QString::fromStdString(lastCheckpoint_)).absolutePath();
}

void WorkbenchWindow::openTrace() {
  const QStringList files = QFileDialog::getOpenFileNames(
      this, tr("Open traces"), {}, tr("Traces (*.json *.json.gz);;All files (*)"));
  showTraces(files);
}

void WorkbenchWindow::exportTrace() {
  if (tracePath_.empty()) return;
  const QString to =
      QFileDialog::getSaveFileName(this, tr("Export run trace"), {}, tr("Chrome trace (*.json)"));
  if (to.isEmpty()) return;
  try {
    copyToOutput(tracePath_, to.toStdString(), "run trace");
  } catch (const UserError& e) {
    showError(QString::fromUtf8(e.what()), false);
  }
}

void WorkbenchWindow::exportComparison() {
  const QString to = QFileDialog::getSaveFileName(this, tr("Export comparison"), {},
                                                  tr("CSV (*.csv);;JSON (*.json)"));
  if (to.isEmpty()) return;
  try {
    writeComparison(to);
  } catch (const UserError& e) {
    showError(QString::fromUtf8(e.what()), false);
  }
}

void WorkbenchWindow::writeComparison(const QString& path) {
  const bool json = path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive);
  writeOutput(path.toStdString(), "comparison", json ? segments_->toJson() : segments_->toCsv());
}

void WorkbenchWindow::applyStrategy(const TrainConfig& config) {
  if (!running()) {
    setStatus(tr("Strategy set: %1; press Start (F5) to run it")
                  .arg(QString::fromStdString(describeStrategy(config))));
    return;
  }
  try {
    session_->switchStrategy(config);
    if (refusalShown_) errorBanner_->hide();  // an earlier refusal no longer holds
    refusalShown_ = false;
    setStatus(tr("Switching to %1 at the next step boundary")
                  .arg(QString::fromStdString(describeStrategy(config))));
  } catch (const UserError& e) {
    showError(tr("Cannot switch: %1").arg(QString::fromUtf8(e.what())), false);
    refusalShown_ = true;
  }
}

void WorkbenchWindow::showError(const QString& text, bool offerResume) {
  refusalShown_ = false;
  errorLabel_->setText(text);
  resume_->setVisible(offerResume);
  errorBanner_->show();
  setStatus(text);
}

void WorkbenchWindow::setPeakFlops(double peakFlops) {
  peakFlops_ = peakFlops;
  segments_->setPeakFlops(peakFlops);
}

void WorkbenchWindow::drain() {
  const std::vector<SessionReport> reports =
      bridge_ ? bridge_->drain() : std::vector<SessionReport>{};
  const bool finished = std::any_of(reports.begin(), reports.end(), [](const SessionReport& r) {
    return std::holds_alternative<FinishedReport>(r);
  });
  // Before the finish is handled: the recorder publishes its last events before the session
  // reports that it finished, so the timeline is complete when the finish is handled.
  if (finished || due(timelineClock_, kTimelinePeriodMs)) feedTimeline(finished);
  const int before = lastStep_;
  for (const SessionReport& r : reports) handle(r);
  if (charts_->stale() && (finished || due(chartsClock_, kChartsPeriodMs))) {
    charts_->refresh();  // one redraw, however many steps arrived since the last
    chartsClock_.start();
  }
  if (reports.empty()) return;
  if (lastStep_ != before) emit stepReported(lastStep_);
  updateActions();
}

void WorkbenchWindow::handle(const SessionReport& report) {
  std::visit(
      Visitor{
          [this](const StartReport& r) {
            world_ = r.worldSize;
            flopsPerToken_ = r.flopsPerToken;
            devicePeakFlops_ = r.devicePeakFlops;
            segments_->begin(describeStrategy(r.config), r.worldSize, r.flopsPerToken,
                             r.devicePeakFlops);
            runSegments_ = {{segments_->rowCount(), describeStrategy(r.config), r.config}};
            setStatus(tr("Running %1: %2 on %3 ranks")
                          .arg(QString::fromStdString(r.model),
                               QString::fromStdString(describeStrategy(r.config)))
                          .arg(r.worldSize));
          },
          [this](const RankStepReport& r) {
            segments_->addRankStep(r.step);
            stepMetrics_.addRankStep(r.step);
          },
          [this](const StepReport& r) {
            lastStep_ = r.step;
            log_->addStep(r);
            segments_->addStep(r);
            if (!runSegments_.empty()) {
              // Reports and the trace's step tags both count steps from 1.
              RunSegment& segment = runSegments_.back();
              if (segment.firstStep < 0) segment.firstStep = r.step;
              segment.lastStep = r.step;
            }
            stepMetrics_.addStep(r);
            const double rate = stepMetrics_.tokensPerSecond();
            // A GPU run's MFU is against its own peak, measured as it started; only a CPU run's
            // rate can tell that the CPU's cached peak is stale.
            const bool onGpu = devicePeakFlops_ > 0;
            double mfu =
                stepMetrics_.mfu(flopsPerToken_, onGpu ? devicePeakFlops_ : peakFlops_, world_);
            if (mfu > 1 && !onGpu) {
              // The cached peak is stale (measured while the machine was busy): a peak is a
              // maximum, so what a rank achieved raises it, here and in the cache.
              setPeakFlops(kernels::SgemmPeakCache::thisMachine().raise(
                  modelFlopsPerSecond(rate, flopsPerToken_) / world_));
              mfu = stepMetrics_.mfu(flopsPerToken_, peakFlops_, world_);
            }
            charts_->addStep(r.step, r.loss, rate, mfu, stepMetrics_.exposedCommFraction(),
                             r.lossScale);
            double peak = 0;
            for (std::int64_t bytes : r.peakBytes) peak += static_cast<double>(bytes);
            const double span = r.pipelineBusySeconds + r.pipelineIdleSeconds;
            panel_->setMeasured(StrategyPanel::Measured{
                r.seconds, rate, span > 0 ? r.pipelineIdleSeconds / span : -1, peak});
            stepMetrics_ = {};
          },
          [this](const EvalReport& r) {
            log_->addEval(r);
            charts_->addValidation(r.step, r.loss);
          },
          [this](const SwitchReport& r) {
            // The panel shows what runs now, whoever asked for the switch (the panel, the
            // Planner or a planned --switch).
            panel_->setDocument(r.to.document);
            showRunningStrategy();
            world_ = r.worldAfter;
            segments_->begin(r.after, r.worldAfter, flopsPerToken_);
            runSegments_.push_back({segments_->rowCount(), r.after, r.to});
            charts_->addSwitch(r.step, QString::fromStdString(r.before + " \u2192 " + r.after));
            for (WorkbenchView* view : runViews_) view->strategySwitched(r.to, r.step);
            setStatus(tr("Switched at step %1: %2 \u2192 %3 (%4 ranks, %5 ms)")
                          .arg(r.step)
                          .arg(QString::fromStdString(r.before), QString::fromStdString(r.after))
                          .arg(r.worldAfter)
                          .arg(r.milliseconds, 0, 'f', 1));
          },
          [this](const CheckpointReport& r) {
            lastCheckpoint_ = r.path;
            setStatus(tr("Checkpoint %1 at step %2: %3")
                          .arg(r.loaded ? tr("loaded") : tr("saved"))
                          .arg(r.step)
                          .arg(QString::fromStdString(r.path)));
          },
          [this](const ErrorReport& r) {
            showError(tr("The session failed on rank %1: %2")
                          .arg(r.rank)
                          .arg(QString::fromStdString(r.reason)),
                      !lastCheckpoint_.empty());
          },
          [this](const FinishedReport& r) {
            for (WorkbenchView* view : runViews_) view->sessionStopped(r.failed);
            showRunningStrategy();
            if (refusalShown_) errorBanner_->hide();  // it refused a switch of the ended run
            refusalShown_ = false;
            if (!r.failed) {
              setStatus(tr("%1 after %2 steps%3")
                            .arg(r.stopped ? tr("Stopped") : tr("Finished"))
                            .arg(r.steps)
                            .arg(r.lastEval.targets > 0
                                     ? tr(", validation loss %1").arg(r.lastEval.loss, 0, 'f', 4)
                                     : QString()));
            }
            if (!r.tracePath.empty()) {
              // The timeline already holds the whole run; only the views need the file.
              tracePath_ = r.tracePath;
              std::shared_ptr<const profiler::TraceData> trace =
                  liveTrace_ ? liveTrace_->trace() : nullptr;
              liveTrace_.reset();
              runShown_ = true;
              endedRun_ = {r.tracePath, trace, {}, {}, false};
              for (const RunSegment& segment : runSegments_) {
                if (segment.firstStep < 0) continue;  // switched again before a step
                addDiffSource(tr("Segment %1: %2, steps %3\u2013%4")
                                  .arg(segment.row)
                                  .arg(QString::fromStdString(segment.strategy))
                                  .arg(segment.firstStep)
                                  .arg(segment.lastStep),
                              {QString::fromStdString(r.tracePath)}, segment.firstStep,
                              segment.lastStep);
                diffSources_.back().trace = trace;
                endedRun_.segments.push_back({segment.row,
                                              segment.strategy,
                                              segment.config,
                                              segment.firstStep,
                                              segment.lastStep,
                                              {}});
                endedRun_.diffSources.push_back(static_cast<int>(diffSources_.size()) - 1);
              }
              releaseOldTraces();
              analyse(kAnalysisJob, {QString::fromStdString(r.tracePath)}, trace);
              predictionCounted_ = predictEndedRun();
              pendingShows_[kAnalysisJob] = predictionCounted_ ? 2 : 1;
            }
            runSegments_.clear();
            emit sessionEnded(r.failed);
          },
      },
      report);
}

QStringList WorkbenchWindow::screenshotNames() const {
  QStringList names{QStringLiteral("window.png")};
  for (int i = 0; i < views_->count(); ++i)
    names << QStringLiteral("view-%1.png").arg(views_->tabText(i).toLower());
  return names;
}

QStringList WorkbenchWindow::saveScreenshots(const QString& dir) {
  QDir().mkpath(dir);
  const QStringList names = screenshotNames();
  QStringList written;
  auto save = [&](const QString& name) {
    const QString path = QDir(dir).filePath(name);
    writePng(grab().toImage(), path.toStdString(), "screenshot");
    written << path;
  };
  save(names.front());
  const int current = views_->currentIndex();
  for (int i = 0; i < views_->count(); ++i) {
    views_->setCurrentIndex(i);
    QApplication::processEvents();
    save(names[i + 1]);
  }
  views_->setCurrentIndex(current);
  return written;
}

}  // namespace parascope::ui
