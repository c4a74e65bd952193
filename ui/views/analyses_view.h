// The Analyses tab: every table of profiler::analysisTables() (what `parascope-cli analyze
// --json` prints: stragglers and whatever the profiler's table gains, without a view of its
// own), one at a time, as its rows.
#pragma once

#include <QWidget>
#include <memory>

#include "ui/views/workbench_view.h"

class QComboBox;

namespace parascope::ui {

class AnalysisTableModel;

class AnalysesView : public QWidget, public WorkbenchView {
  Q_OBJECT
 public:
  explicit AnalysesView(QWidget* parent = nullptr);
  QComboBox* choice() const { return choice_; }
  AnalysisTableModel* model() const { return model_; }

  QWidget* tab() override { return this; }
  void sessionStarted(const parascope::TrainConfig& config) override;
  void traceReplaced(const ShownTrace& trace) override;

 private:
  void showTable();

  QComboBox* choice_;
  AnalysisTableModel* model_;
  std::shared_ptr<const profiler::TraceAnalysis> analysis_;
};

}  // namespace parascope::ui
