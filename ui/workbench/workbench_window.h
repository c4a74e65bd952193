// The workbench's main window: the strategy panel (dock), the controls (toolbar and menu, each
// with a shortcut), the live charts above the timeline, and the views as tabs (Log to
// Planner). A session runs on its own threads; its reports cross to the GUI thread through a
// SessionBridge drained by a timer at frame rate; the charts and the timeline show what arrived
// a few times a second, each in one update however much arrived. A failed session shows its
// reason in the window and offers to resume from the last checkpoint. The window layout and the
// last config persist in QSettings. Prediction and calibration are in workbench_prediction.cpp.
#pragma once

#include <QElapsedTimer>
#include <QMainWindow>
#include <QTemporaryDir>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "core/plan/system.h"
#include "core/session/run_metrics.h"
#include "core/session/session.h"
#include "core/session/switch_plan.h"
#include "profiler/analysis/trace_analysis.h"
#include "profiler/analysis/trace_diff.h"
#include "profiler/analysis/trace_run.h"
#include "ui/job_tracker.h"
#include "ui/views/workbench_view.h"
#include "ui/workbench/run_prediction.h"
#include "ui/workbench/session_bridge.h"

class QAction;
class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTableView;
class QTimer;

namespace parascope::profiler {
class LiveTrace;
}  // namespace parascope::profiler

namespace parascope::ui {

class AnalysisTableModel;
class BreakdownModel;
class CommunicationView;
class DiffModel;
class LiveCharts;
class MemoryView;
class PipelineView;
class PlannerView;
class PredictionView;
class SegmentModel;
class StrategyPanel;
class TimelineWindow;
class TrainingLogModel;

class WorkbenchWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit WorkbenchWindow(QWidget* parent = nullptr);
  ~WorkbenchWindow() override;

  // The session to run next (a config file's document with overrides applied).
  void setDocument(const nlohmann::json& document);
  // The config saved by the last session of a previous launch, if any.
  static nlohmann::json lastDocument();
  void restoreLayout();

  StrategyPanel* panel() const { return panel_; }
  LiveCharts* charts() const { return charts_; }
  // The run's timeline: the first of the trace tabs.
  TimelineWindow* timeline() const { return timeline_; }
  // The run's timeline, then one tab per opened trace (closable), each with its own timeline;
  // the views show the analysis of the current tab's trace.
  QTabWidget* traceTabs() const { return traceTabs_; }
  TimelineWindow* traceTimeline(int tab) const;
  TrainingLogModel* logModel() const { return log_; }
  QTabWidget* views() const { return views_; }
  // The views of a run (workbenchViews(), each told of sessions and traces: workbench_view.h).
  const std::vector<WorkbenchView*>& runViews() const { return runViews_; }
  template <typename View>
  View* runView() const {
    for (WorkbenchView* v : runViews_) {
      if (auto* view = dynamic_cast<View*>(v)) return view;
    }
    return nullptr;
  }
  MemoryView* memoryView() const;
  PipelineView* pipelineView() const;
  CommunicationView* communicationView() const;
  BreakdownModel* breakdownModel() const;
  // The Analyses tab: every table of profiler::analysisTables() (the choice) for the trace shown.
  QComboBox* analysisChoice() const;
  AnalysisTableModel* analysisTableModel() const;
  SegmentModel* segmentModel() const { return segments_; }
  // What the views show: the analysis of the ended run (from memory) or of the opened traces.
  std::shared_ptr<const profiler::TraceAnalysis> shownAnalysis() const { return shownAnalysis_; }
  DiffModel* diffModel() const { return diff_; }
  // The Prediction tab: the last ended run's segments predicted against their measurement.
  PredictionView* predictionView() const { return prediction_; }
  // The Planner tab: strategies searched for a model, a system and a GPU count.
  PlannerView* plannerView() const { return planner_; }
  // What the Compare tab says about the diff's sources (empty when two different ones are set).
  QString diffHint() const;
  // What the Compare tab's diff can pick as A and B: each ended run's segments, then each trace
  // opened, in the order they came.
  QStringList diffSources() const;
  // Diffs two of diffSources() off the GUI thread, A and B set to them; diffShown follows,
  // either way. Until then the table is empty and the tab says what is being compared: a
  // result is never shown under labels it does not belong to.
  void compareSources(int a, int b);
  // Opens traces in a tab of their own beside the run's and shows them in the views (analysed
  // off the GUI thread); traceShown follows once both are done, either way. A running session
  // goes on in its own tab.
  void showTraces(const QStringList& files);
  QAction* action(const QString& name) const;
  QString statusText() const;
  QString errorText() const;
  // The last run's trace file (empty before a run ended).
  QString tracePath() const { return QString::fromStdString(tracePath_); }
  int stepsSeen() const { return lastStep_; }
  int worldSize() const { return world_; }
  bool running() const;

  // The directory of the last checkpoint saved or loaded (empty before one).
  QString lastCheckpoint() const { return QString::fromStdString(lastCheckpoint_); }
  // What Save and Load checkpoint do with the directory the user picked: save at the running
  // session's next step boundary; load into a new session under the panel's strategy. A
  // checkpoint that cannot be opened shows why and leaves the running session as it is.
  void saveCheckpointTo(const QString& dir);
  void loadCheckpointFrom(const QString& dir);

  // What the strategy panel's predictions, the Compare tab's predicted sources and the
  // Prediction tab are priced on (this machine's description); none until one is given or
  // calibrated. An ended run not predicted yet is predicted on it.
  void setSystem(std::optional<parascope::SystemDescription> system);
  // Measures this machine (short training runs) for Session > Calibrate this machine, which runs
  // it off the GUI thread while no session runs. Unset: the action is hidden.
  using Calibrator = std::function<parascope::SystemDescription()>;
  void setCalibrator(Calibrator calibrator);
  void calibrate();

  // Sessions started from now on stop at the boundary after this many steps (0: run them out).
  void setStopAfterSteps(int steps) { stopAfter_ = steps; }
  // Live switches for the next session started, each requested right after its step (on the
  // rank's thread, so at the boundary that follows it), as train --switch does.
  void setSwitchPlan(std::vector<parascope::PlannedSwitch> plan) { switchPlan_ = std::move(plan); }

  // The files saveScreenshots writes: window.png, then view-<name>.png for each view tab.
  QStringList screenshotNames() const;
  // Saves the main window and each view tab as PNGs under `dir` (created if missing), each
  // through OutputFile; returns the files written, or throws UserError naming the one that
  // could not be (a link, FIFO or device there is refused).
  QStringList saveScreenshots(const QString& dir);

 public slots:
  void start();
  void togglePause();
  void stepOnce();
  void stop();
  void saveCheckpoint();
  void loadCheckpoint();
  void openTrace();
  void exportTrace();
  // The Compare table as CSV or JSON, by the file's suffix.
  void exportComparison();
  void writeComparison(const QString& path);  // UserError naming the file on failure
  void applyStrategy(const parascope::TrainConfig& config);
  // The GUI thread's frame: drains the bridge and shows what arrived.
  void drain();

 signals:
  void stepReported(int step);
  void sessionEnded(bool failed);
  // The run's trace is in the timeline and the views, its prediction in the Prediction tab
  // (run true), or an opened trace is in its tab's timeline and was analysed (run false); or
  // they could not be read.
  void traceShown(bool run);
  void diffShown();

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildActions();
  void buildViews();
  void startSession(const parascope::TrainConfig& config, const std::string& load);
  void endSession();
  void handle(const SessionReport& report);
  void showError(const QString& text, bool offerResume);
  void updateActions();
  void showRunningStrategy();
  // One of what `slot`'s traceShown waits for is shown (or failed).
  void shownOne(const QString& slot);
  // ownRun: the workbench's own run (the Run tab), whose strategy is the session's or the
  // panel's; any other trace is predicted by the config it recorded, if any.
  void showAnalysis(const std::shared_ptr<const profiler::TraceAnalysis>& analysis, bool ownRun);
  // Analyses the traces in `files` off the GUI thread, or the run's `trace` in memory when
  // given (then `files` only names it).
  void analyse(const QString& slot, const QStringList& files,
               const std::shared_ptr<const profiler::TraceData>& trace = {});
  void analysed(const QString& slot,
                const std::shared_ptr<const profiler::TraceAnalysis>& analysis);
  // The views follow the current trace tab: its analysis, or nothing while it is computed (the
  // run's tab while its session runs: what a started session shows).
  void showTabAnalysis(int tab);
  void closeTraceTab(int tab);
  // The busy sign in the status bar: shown, saying what runs, while an analysis, a diff or a
  // prediction is being computed.
  void updateBusy();
  void feedTimeline(bool all);
  void setStatus(const QString& text);
  QString checkpointDialogStart() const;
  void setPeakFlops(double peakFlops);
  bool predictEndedRun();
  void showPrediction(std::vector<PredictedSegment> segments, const QString& error);
  void showPredictionHint();
  // Loads the shown run into the timeline with (or without) its prediction beside it.
  void showPredictionBeside(bool beside);

  StrategyPanel* panel_ = nullptr;
  LiveCharts* charts_ = nullptr;
  TimelineWindow* timeline_ = nullptr;
  QTabWidget* traceTabs_ = nullptr;
  // The opened traces' tabs (tab i + 1): their timeline, files, analysis job and analysis.
  struct TraceTab {
    TimelineWindow* timeline = nullptr;
    std::vector<std::string> files;
    QString slot;
    std::shared_ptr<const profiler::TraceAnalysis> analysis;
  };
  std::vector<TraceTab> traceTabList_;
  int traceTabsOpened_ = 0;
  // Opened traces' Compare rows, in the order the traces were opened whatever order their
  // analyses end in: a row waits for the traces opened before it (done: analysed, failed or
  // closed; run: its measures, none for a trace that is not a recorded run).
  struct TraceRow {
    QString slot;
    QString name;
    bool done = false;
    std::optional<profiler::TraceRun> run;
  };
  std::deque<TraceRow> traceRows_;
  void traceRowDone(const QString& slot, const profiler::TraceAnalysis* analysis);
  std::shared_ptr<const profiler::TraceAnalysis> runAnalysis_;  // the ended run's
  TrainingLogModel* log_ = nullptr;
  QTabWidget* views_ = nullptr;
  QTableView* logView_ = nullptr;
  bool logFollows_ = true;
  bool refusalShown_ = false;  // the banner shows a refused switch, which the next one clears  //
                               // the Log was at its newest row when the next one came
  std::vector<WorkbenchView*> runViews_;  // owned by their tabs
  std::shared_ptr<const profiler::TraceAnalysis> shownAnalysis_;
  SegmentModel* segments_ = nullptr;
  // What each source's traceShown still waits for: the run's analysis (and prediction), an
  // opened trace's timeline and analysis.
  std::map<QString, int> pendingShows_;
  QWidget* buildDiff();
  void addDiffSource(const QString& label, const QStringList& files, int firstStep, int lastStep);
  void appendDiffSource(const QString& label, const QStringList& files, int firstStep,
                        int lastStep);
  void pickDiff(int a, int b);
  void showDiff(std::vector<profiler::DiffRow> rows, const QString& error);
  // Keeps the traces of the newest few sources in memory (diffs of them read no file); older
  // ones are read from their files again when picked.
  void releaseOldTraces();
  void updateDiffHint();
  void startDiff(int a, int b);
  struct DiffSource {
    QString label;
    std::vector<std::string> files;
    std::shared_ptr<const profiler::TraceData> trace;  // null: read from `files`
    int firstStep = -1, lastStep = -1;  // event step tags (from 1); -1: the whole trace
  };
  std::vector<DiffSource> diffSources_;
  // The running session's segments (Compare's row, strategy, steps) until its trace is written.
  struct RunSegment {
    int row = 0;
    std::string strategy;
    parascope::TrainConfig config;
    int firstStep = -1, lastStep = -1;
  };
  std::vector<RunSegment> runSegments_;
  DiffModel* diff_ = nullptr;
  QComboBox* diffA_ = nullptr;
  QComboBox* diffB_ = nullptr;
  QLabel* diffHint_ = nullptr;  // why the diff is empty, when it is
  PredictionView* prediction_ = nullptr;
  PlannerView* planner_ = nullptr;
  QAction* beside_ = nullptr;  // View > Show prediction beside the run
  QWidget* errorBanner_ = nullptr;
  QLabel* errorLabel_ = nullptr;
  QPushButton* resume_ = nullptr;
  QLabel* status_ = nullptr;
  QProgressBar* busy_ = nullptr;
  QLabel* busyLabel_ = nullptr;
  QTimer* frame_ = nullptr;
  // Since the charts were redrawn and the timeline fed; invalid before the first time.
  QElapsedTimer chartsClock_, timelineClock_;

  // Declared before the session: the session (destroyed first) reports into it until it ends.
  std::unique_ptr<SessionBridge> bridge_;
  std::unique_ptr<parascope::Session> session_;
  // The running (or last) session's recorder, feeding the timeline every frame; null once the
  // timeline shows something else.
  std::shared_ptr<profiler::LiveTrace> liveTrace_;
  QTemporaryDir runDir_;  // the runs' traces (Export run trace copies one out)
  // The last ended run, what the Prediction tab predicts: its trace, its segments and each
  // segment's index in diffSources_.
  struct EndedRun {
    std::string tracePath;
    std::shared_ptr<const profiler::TraceData> trace;  // the file's content, kept in memory
    std::vector<SegmentToPredict> segments;
    std::vector<int> diffSources;
    bool predicted = false;  // a prediction was started (there was a description)
  };
  EndedRun endedRun_;
  std::vector<PredictedSegment> predictions_;  // the ended run's, once predicted
  bool predictionCounted_ = false;             // the prediction is one of pendingShows_
  bool runShown_ = false;                      // the timeline shows the ended run
  int runs_ = 0;
  int world_ = 0;
  int lastStep_ = 0;
  int stopAfter_ = 0;
  std::vector<parascope::PlannedSwitch> switchPlan_;
  std::unique_ptr<parascope::Switcher> switcher_;
  bool paused_ = false;
  double flopsPerToken_ = 0;
  double peakFlops_ = 0;        // one rank's sgemm peak, FLOP/s, for MFU; 0 until known
  double devicePeakFlops_ = 0;  // the running session's GPU's (StartReport); 0 on the CPU
  std::optional<parascope::SystemDescription> system_;
  Calibrator calibrator_;
  bool calibrating_ = false;
  int predicted_ = 0;                  // predicted traces written to runDir_
  parascope::RunMetrics stepMetrics_;  // the rank reports of the step being reported
  std::string lastCheckpoint_;
  std::string tracePath_;
  // The window's background jobs (JobTracker slots).
  static inline const QString kPeakJob = QStringLiteral("peak");
  static inline const QString kCalibrationJob = QStringLiteral("calibration");
  static inline const QString kAnalysisJob = QStringLiteral("analysis:run");
  static inline const QString kDiffJob = QStringLiteral("diff");
  static inline const QString kPredictionJob = QStringLiteral("prediction");
  // Last: its jobs (which write predicted traces into runDir_) end before anything they use.
  JobTracker jobs_;
};

}  // namespace parascope::ui
