// The Communication view: the rank x rank byte matrix as a heat map, filtered by operation, and
// the per-operation totals with the bandwidth they imply; both from the trace's analysis.
#pragma once

#include <QWidget>
#include <memory>

#include "profiler/analysis/trace_analysis.h"
#include "ui/views/workbench_view.h"

class QComboBox;
class QLabel;
class QTableView;

namespace parascope::ui {

class CommMatrixModel;
class CommOpModel;

class CommunicationView : public QWidget, public WorkbenchView {
  Q_OBJECT
 public:
  explicit CommunicationView(QWidget* parent = nullptr);
  void setAnalysis(std::shared_ptr<const profiler::TraceAnalysis> analysis);

  QWidget* tab() override { return this; }
  void sessionStarted(const parascope::TrainConfig& config) override;
  void traceReplaced(const ShownTrace& trace) override;
  // "" for all operations.
  void setOperation(const QString& op);

  CommMatrixModel* matrixModel() const { return matrix_; }
  CommOpModel* opModel() const { return ops_; }
  QComboBox* operationFilter() const { return filter_; }
  // Why the view shows nothing (no trace yet, or one without communication); empty when it
  // shows a trace's communication.
  QString emptyText() const;

 private:
  std::shared_ptr<const profiler::TraceAnalysis> analysis_;
  QComboBox* filter_;
  CommMatrixModel* matrix_;
  CommOpModel* ops_;
  QTableView* matrixView_;
  QLabel* empty_;

  void showEmpty(const QString& why);
};

}  // namespace parascope::ui
