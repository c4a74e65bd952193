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
#include <functional>
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
#include "ui/background_job.h"
#include "ui/workbench/run_prediction.h"
#include "ui/workbench/session_bridge.h"

class QAction;
class QComboBox;
class QLabel;
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
  TimelineWindow* timeline() const { return timeline_; }
  TrainingLogModel* logModel() const { return log_; }
  QTabWidget* views() const { return views_; }
  MemoryView* memoryView() const { return memory_; }
  PipelineView* pipelineView() const { return pipeline_; }
  CommunicationView* communicationView() const { return communication_; }
  BreakdownModel* breakdownModel() const { return breakdown_; }
  // The Analyses tab: every table of profiler::analysisTables() (the choice) for the trace shown.
  QComboBox* analysisChoice() const { return analysisChoice_; }
  AnalysisTableModel* analysisTableModel() const { return analysisTable_; }
  SegmentModel* segmentModel() const { return segments_; }
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
  // Shows traces in the timeline and the views (analysed off the GUI thread); traceShown
  // follows once both are done, either way.
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
  // The run's trace is in the timeline and the views, its prediction in the Prediction tab (or
  // they could not be read).
  void traceShown();
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
  void shownOne();
  void showAnalysis(const std::shared_ptr<const profiler::TraceAnalysis>& analysis);
  void analyse(const QStringList& files);
  void feedTimeline(bool all);
  void setStatus(const QString& text);
  QString checkpointDialogStart() const;
  void setPeakFlops(double peakFlops);
  void collectPeak();
  void collectCalibration();
  bool predictEndedRun();
  void collectPrediction();
  void showPredictionHint();
  // Loads the shown run into the timeline with (or without) its prediction beside it.
  void showPredictionBeside(bool beside);

  StrategyPanel* panel_ = nullptr;
  LiveCharts* charts_ = nullptr;
  TimelineWindow* timeline_ = nullptr;
  TrainingLogModel* log_ = nullptr;
  QTabWidget* views_ = nullptr;
  QTableView* logView_ = nullptr;
  bool logFollows_ = true;
  bool refusalShown_ = false;  // the banner shows a refused switch, which the next one clears  //
                               // the Log was at its newest row when the next one came
  MemoryView* memory_ = nullptr;
  PipelineView* pipeline_ = nullptr;
  CommunicationView* communication_ = nullptr;
  BreakdownModel* breakdown_ = nullptr;
  QComboBox* analysisChoice_ = nullptr;
  AnalysisTableModel* analysisTable_ = nullptr;
  std::shared_ptr<const profiler::TraceAnalysis> shownAnalysis_;  // what the Analyses tab reads
  SegmentModel* segments_ = nullptr;
  int pendingShows_ = 0;  // of the timeline and the analysis, for traceShown
  BackgroundJob<std::shared_ptr<const profiler::TraceAnalysis>> analysis_;
  // Runs started so far, and the one the analysis in flight was begun under: an analysis of an
  // earlier run or trace that ends after a new run started is not shown over it.
  int runsStarted_ = 0;
  int analysisRun_ = 0;
  void collectAnalysis();
  QWidget* buildDiff();
  QWidget* buildAnalyses();
  void showAnalysisTable();
  void addDiffSource(const QString& label, const QStringList& files, int firstStep, int lastStep);
  void appendDiffSource(const QString& label, const QStringList& files, int firstStep,
                        int lastStep);
  void pickDiff(int a, int b);
  void collectDiff();
  void updateDiffHint();
  void startDiff(int a, int b);
  struct DiffSource {
    QString label;
    std::vector<std::string> files;
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
  BackgroundJob<std::vector<profiler::DiffRow>> diffJob_;
  PredictionView* prediction_ = nullptr;
  PlannerView* planner_ = nullptr;
  QAction* beside_ = nullptr;  // View > Show prediction beside the run
  QWidget* errorBanner_ = nullptr;
  QLabel* errorLabel_ = nullptr;
  QPushButton* resume_ = nullptr;
  QLabel* status_ = nullptr;
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
    std::vector<SegmentToPredict> segments;
    std::vector<int> diffSources;
    bool predicted = false;  // a prediction was started (there was a description)
  };
  EndedRun endedRun_;
  // Declared after runDir_, which it writes predicted traces into: destroyed (joined) first.
  BackgroundJob<std::vector<PredictedSegment>> predictionJob_;
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
  double peakFlops_ = 0;           // one rank's sgemm peak, FLOP/s, for MFU; 0 until known
  BackgroundJob<double> peakJob_;  // measures it when this machine has none cached
  std::optional<parascope::SystemDescription> system_;
  Calibrator calibrator_;
  BackgroundJob<parascope::SystemDescription> calibrationJob_;
  bool calibrating_ = false;
  int predicted_ = 0;                  // predicted traces written to runDir_
  parascope::RunMetrics stepMetrics_;  // the rank reports of the step being reported
  std::string lastCheckpoint_;
  std::string tracePath_;
};

}  // namespace parascope::ui
