// The workbench's Prediction tab: the last ended run's segments predicted against their
// measurement, per op and whole step (left) and per instruction (right, the largest errors
// first), both sortable by any column; a line above saying what the tables hold or why they are
// empty; and the button that shows the prediction beside the run in the timeline.
#pragma once

#include <QWidget>
#include <vector>

#include "ui/workbench/run_prediction.h"

class QAction;
class QLabel;
class QSplitter;
class QTableView;

namespace parascope::ui {

class PredictionModel;
class PredictionOpModel;

class PredictionView : public QWidget {
  Q_OBJECT
 public:
  // `beside`: the window's "Show prediction beside the run" action.
  explicit PredictionView(QAction* beside, QWidget* parent = nullptr);

  void setHint(const QString& text);
  QString hint() const;
  void setSegments(const std::vector<PredictedSegment>& segments);

  PredictionModel* instructionModel() const { return instructions_; }
  PredictionOpModel* opModel() const { return ops_; }
  QTableView* instructionView() const { return instructionView_; }

 private:
  QLabel* hint_ = nullptr;
  PredictionModel* instructions_ = nullptr;
  PredictionOpModel* ops_ = nullptr;
  QTableView* instructionView_ = nullptr;
  QTableView* opView_ = nullptr;
  QSplitter* tables_ = nullptr;
};

}  // namespace parascope::ui
