// The Breakdown tab: per rank and step, where the time went (profiler::computeBreakdown, as
// `parascope-cli analyze` prints it), sortable by any column.
#pragma once

#include <QTableView>

#include "ui/views/workbench_view.h"

namespace parascope::ui {

class BreakdownModel;

class BreakdownView : public QTableView, public WorkbenchView {
  Q_OBJECT
 public:
  explicit BreakdownView(QWidget* parent = nullptr);
  BreakdownModel* breakdown() const { return model_; }

  QWidget* tab() override { return this; }
  void sessionStarted(const parascope::TrainConfig& config) override;
  void traceReplaced(const ShownTrace& trace) override;

 private:
  BreakdownModel* model_;
};

}  // namespace parascope::ui
