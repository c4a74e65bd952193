// WorkbenchWindow: this machine's description and what is predicted on it. Calibration measures
// the description off the GUI thread; when a run ends its segments are planned, simulated and
// compared with the run's trace off the GUI thread too (run_prediction.h), which fills the
// Prediction tab, adds each segment's predicted trace to Compare and lets the timeline show it
// beside the run. The rest of the window is in workbench_window.cpp.
#include <QAction>

#include "profiler/io/chrome_import.h"
#include "profiler/timeline/timeline_prediction.h"
#include "ui/timeline/timeline_window.h"
#include "ui/views/planner_view.h"
#include "ui/views/prediction_view.h"
#include "ui/workbench/strategy_panel.h"
#include "ui/workbench/workbench_window.h"

namespace parascope::ui {

void WorkbenchWindow::setSystem(std::optional<SystemDescription> system) {
  system_ = std::move(system);
  panel_->setSystem(system_);
  planner_->setThisMachine(system_);
  // A run that ended before there was a description is predicted now.
  if (!endedRun_.predicted) predictEndedRun();
}

void WorkbenchWindow::setCalibrator(Calibrator calibrator) {
  calibrator_ = std::move(calibrator);
  action(QStringLiteral("calibrate"))->setVisible(static_cast<bool>(calibrator_));
  updateActions();
}

void WorkbenchWindow::calibrate() {
  if (!calibrator_ || calibrating_ || running()) return;
  calibrating_ = true;
  setStatus(tr("Calibrating this machine: short training runs, about a minute..."));
  jobs_.start(
      kCalibrationJob, [calibrator = calibrator_](const JobTracker::Job&) { return calibrator(); },
      [this](const SystemDescription& system) {
        calibrating_ = false;
        updateBusy();
        setSystem(system);
        setStatus(tr("Calibrated: the strategy panel predicts on this machine's description"));
        updateActions();
      },
      [this](const QString& error) {
        calibrating_ = false;
        updateBusy();
        showError(tr("Cannot calibrate this machine: %1").arg(error), false);
        updateActions();
      });
  updateBusy();
  updateActions();
}

// What the Prediction tab holds, or why it holds nothing.
void WorkbenchWindow::showPredictionHint() {
  if (!system_) {
    prediction_->setHint(
        tr("Nothing is predicted without a description of this machine: Session > Calibrate "
           "this machine measures one (short training runs, about a minute), and the last run "
           "is then predicted here."));
    return;
  }
  const QString system = QString::fromStdString(system_->name);
  if (endedRun_.segments.empty()) {
    prediction_->setHint(tr("When a run ends, each of its segments is predicted on '%1' and "
                            "compared here with what it measured, instruction by instruction.")
                             .arg(system));
    return;
  }
  if (predictions_.empty()) {
    prediction_->setHint(tr("Predicting the last run on '%1'...").arg(system));
    return;
  }
  QString hint =
      tr("The last run measured against its prediction on '%1', ms per step: per op and the "
         "whole step (left); per instruction (right), measured as the median over the traced "
         "steps and the data- and tensor-parallel ranks, the most time mispredicted first.")
          .arg(system);
  for (const PredictedSegment& p : predictions_) {
    if (p.failure.empty()) continue;
    hint += QStringLiteral("\n") +
            tr("Segment %1 (%2) is not predicted: %3")
                .arg(p.segment.segment)
                .arg(QString::fromStdString(p.segment.strategy), QString::fromStdString(p.failure));
  }
  // Calibrated on a quiet machine, a step is predicted within a few percent; off by more than
  // half, the description itself is the likelier culprit than the strategy.
  if (const PredictedSegment* worst = mostMispredicted(predictions_, kStaleDescriptionError)) {
    const PredictionError& c = worst->comparison;
    hint += QStringLiteral("\n") +
            tr("Segment %1's step is predicted %2% off (%3 ms against %4 ms measured): a "
               "description of this machine measured while other work held its cores "
               "mispredicts every step so. Session > Calibrate this machine measures it again; "
               "let nothing else run meanwhile.")
                .arg(worst->segment.segment)
                .arg(QString::asprintf("%+.0f", 100 * c.stepError()))
                .arg(1e3 * c.predictedStepSeconds, 0, 'f', 1)
                .arg(1e3 * c.measuredStepSeconds, 0, 'f', 1);
  }
  prediction_->setHint(hint);
}

// Starts predicting the ended run's segments off the GUI thread; false when there is no
// description or nothing to predict.
bool WorkbenchWindow::predictEndedRun() {
  predictions_.clear();
  prediction_->setSegments({});
  if (!system_ || endedRun_.segments.empty()) {
    showPredictionHint();
    return false;
  }
  endedRun_.predicted = true;
  for (SegmentToPredict& s : endedRun_.segments) {
    s.predictedTrace =
        runDir_.filePath(QStringLiteral("predicted-%1.json").arg(++predicted_)).toStdString();
  }
  jobs_.start(
      kPredictionJob,
      [system = *system_, trace = endedRun_.trace, path = endedRun_.tracePath,
       segments = endedRun_.segments](const JobTracker::Job&) {
        // The run's trace in memory; the file only when the feed had failed to keep it.
        if (trace) return predictRun(system, *trace, segments);
        return predictRun(system, profiler::importChromeTraces({path}), segments);
      },
      [this](std::vector<PredictedSegment> segments) { showPrediction(std::move(segments), {}); },
      [this](const QString& error) { showPrediction({}, error); });
  updateBusy();
  showPredictionHint();
  return true;
}

// Shows a finished prediction and adds each segment's predicted trace to Compare, whose diff
// then shows the last segment against its prediction.
void WorkbenchWindow::showPrediction(std::vector<PredictedSegment> segments, const QString& error) {
  updateBusy();
  predictions_ = std::move(segments);
  prediction_->setSegments(predictions_);
  if (!error.isEmpty()) {
    prediction_->setHint(tr("Cannot predict the last run: %1").arg(error));
  } else {
    showPredictionHint();
    int measured = -1, predicted = -1;
    for (std::size_t i = 0; i < predictions_.size(); ++i) {
      const PredictedSegment& p = predictions_[i];
      if (!p.failure.empty()) continue;
      appendDiffSource(tr("Predicted: %1, %2 steps")
                           .arg(QString::fromStdString(p.segment.strategy))
                           .arg(p.segment.lastStep - p.segment.firstStep + 1),
                       {QString::fromStdString(p.segment.predictedTrace)}, -1, -1);
      measured = endedRun_.diffSources[i];
      predicted = static_cast<int>(diffSources_.size()) - 1;
    }
    if (predicted >= 0) pickDiff(measured, predicted);
  }
  updateActions();
  if (predictionCounted_) {
    predictionCounted_ = false;
    shownOne(kAnalysisJob);
  }
}

void WorkbenchWindow::showPredictionBeside(bool beside) {
  if (!runShown_) return;
  if (!beside) {
    timeline_->openFiles({QString::fromStdString(tracePath_)});
    return;
  }
  const std::shared_ptr<const profiler::TraceData> run = endedRun_.trace;
  std::vector<std::pair<std::string, int>> parts;  // (predicted trace, its first measured step)
  for (const PredictedSegment& p : predictions_) {
    if (p.failure.empty()) parts.emplace_back(p.segment.predictedTrace, p.segment.firstStep);
  }
  timeline_->loader()->load(tr("the run and its prediction"), [run, path = tracePath_, parts] {
    std::vector<profiler::TraceData> predicted;
    for (const auto& part : parts) predicted.push_back(profiler::importChromeTraces({part.first}));
    std::vector<profiler::PredictedPart> beside;
    for (std::size_t i = 0; i < parts.size(); ++i)
      beside.push_back({&predicted[i], parts[i].second});
    profiler::TraceData measured;
    if (run) {
      measured.merge(*run);
    } else {
      measured = profiler::importChromeTraces({path});
    }
    return profiler::withPredictionBeside(std::move(measured), beside);
  });
}

}  // namespace parascope::ui
