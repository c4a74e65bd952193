// The Memory view: one rank's live bytes by category over time as stacked areas (step functions
// of the trace's memory counters), its swap files' bytes on a disk (the "nvme" counter) as a
// dashed line beside them, not stacked in, and every rank's peaks next to the strategy's
// predicted bytes (the memory estimate of core/plan/memory_estimate.h, the one the Strategy
// panel shows).
#pragma once

#include <QWidget>
#include <map>
#include <memory>
#include <string>

#include "profiler/analysis/trace_analysis.h"
#include "ui/views/workbench_view.h"

class QChart;
class QComboBox;
class QLabel;

namespace parascope::ui {

class MemoryPeakModel;

class MemoryView : public QWidget, public WorkbenchView {
  Q_OBJECT
 public:
  explicit MemoryView(QWidget* parent = nullptr);
  // predicted: bytes by rank, then by the estimate's item name (MemoryPeakModel::Predictions).
  // peaksFromStep (with the time it began, fromNs): the first step of the strategy the run ended
  // with, when it switched live; its peaks are compared with the predictions.
  void setAnalysis(std::shared_ptr<const profiler::TraceAnalysis> analysis,
                   std::map<int, std::map<std::string, double>> predicted, int peaksFromStep = -1,
                   std::int64_t fromNs = INT64_MIN);
  QString scopeText() const;

  QWidget* tab() override { return this; }
  void sessionStarted(const parascope::TrainConfig& config) override;
  void traceReplaced(const ShownTrace& trace) override;
  void showRank(int rank);

  MemoryPeakModel* peakModel() const { return peaks_; }
  QChart* chart() const { return chart_; }

 private:
  std::shared_ptr<const profiler::TraceAnalysis> analysis_;
  QComboBox* rank_;
  QChart* chart_;
  MemoryPeakModel* peaks_;
  QLabel* scope_;
};

}  // namespace parascope::ui
