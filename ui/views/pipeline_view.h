// The Pipeline view: one step of the schedule as each rank ran it, its measured compute
// instructions (F, B, W, ... per micro-batch) as boxes on a row per rank with the idle time
// shaded, and per rank the measured bubble (profiler/analysis/bubbles.h, as `analyze` prints it)
// next to the ideal one of the schedule (its ScheduleInfo's formula at the trace's measured
// instruction durations). The boxes are prepared when the analysis arrives; painting only scales
// them.
#pragma once

#include <QString>
#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

#include "core/config/config.h"
#include "profiler/analysis/trace_analysis.h"
#include "ui/views/workbench_view.h"

class QScrollArea;

namespace parascope::ui {

class PipelineView : public QWidget, public WorkbenchView {
  Q_OBJECT
 public:
  explicit PipelineView(QWidget* parent = nullptr);
  // config: the strategy the trace ran under, for the ideal bubble (none: not shown).
  void setAnalysis(const profiler::TraceAnalysis& analysis,
                   const std::optional<TrainConfig>& config);

  struct Box {
    double start, end;  // ns from the step window's start
    QString label;
    int kind;  // 0 forward, 1 backward (B, Bi, W), 2 other (optimizer step)
  };
  struct Row {
    int rank = 0;
    int stage = 0;
    std::vector<Box> boxes;
    double bubble = -1;  // measured fraction; < 0: none
  };
  int step() const { return step_; }
  // Nothing drawn until the next analysis, and why.
  void showPending(const QString& why);

  // A scroll area around the view: a schedule of many ranks is taller than the tab.
  QWidget* tab() override;
  void sessionStarted(const parascope::TrainConfig& config) override;
  void traceReplaced(const ShownTrace& trace) override;
  // Why no schedule is drawn (no pipeline at all, or not in the run's last steps); empty when
  // one is.
  QString emptyText() const { return emptyText_; }
  const std::vector<Row>& rows() const { return rows_; }
  double idealBubble() const { return ideal_; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  std::vector<Row> rows_;
  int step_ = -1;
  double windowNs_ = 0;
  double ideal_ = -1;
  QString emptyText_;
  QScrollArea* scroll_ = nullptr;  // owns this view once made
};

}  // namespace parascope::ui
