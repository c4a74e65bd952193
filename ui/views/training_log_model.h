// Item model over a training run's progress: one row per reported optimizer step (step, loss,
// learning rate, gradient norm, throughput, fp16 loss scale and whether the step was skipped on
// a gradient overflow) with the latest validation loss at or before it.
// Filled on the GUI thread from reports the session hands over; views only read it.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "core/train/step_report.h"

namespace parascope::ui {

class TrainingLogModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Step,
    Loss,
    ValidationLoss,
    LearningRate,
    GradNorm,
    Throughput,
    LossScale,
    ColumnCount
  };

  explicit TrainingLogModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

  // What the run's model counts in a step's throughput, plural ("tokens", "images"; the model
  // kind's target): the column is headed "Tokens/s", "Images/s".
  void setTarget(const QString& plural);
  void addStep(const parascope::StepReport& r);
  void addEval(const parascope::EvalReport& r);
  void clear();

 private:
  struct Row {
    parascope::StepReport step;
    double validationLoss = -1;  // < 0: none yet
  };
  std::vector<Row> rows_;
  double lastValidation_ = -1;
  QString throughputHeader_ = tr("Tokens/s");
};

}  // namespace parascope::ui
