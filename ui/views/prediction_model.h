// Item models over an ended run's predictions (run_prediction.h): where the model is wrong.
// PredictionModel: one row per instruction of each segment's programs, its measured (median)
// and predicted time and the error, predicted - measured in ms and relative to the measured.
// PredictionOpModel: per segment the whole step, then each op summed over its instructions.
// Qt::UserRole holds each cell's raw value (seconds, counts), so a sort proxy sorts
// numerically: -1 where nothing was measured (for the relative error also where 0 s was), and
// each error's magnitude, so that sorting by it puts the worst first whichever way they are
// wrong.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "ui/workbench/run_prediction.h"

namespace parascope::ui {

class PredictionModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Segment, Rank, Index, Instruction, Measured, Predicted, ErrorTime, Error, Count };

  explicit PredictionModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setSegments(const std::vector<PredictedSegment>& segments);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    int segment = 0;
    QString strategy;
    InstructionError error;
  };
  std::vector<Row> rows_;
};

class PredictionOpModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Segment, Op, Instructions, Measured, Predicted, ErrorTime, Error, Count };

  explicit PredictionOpModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setSegments(const std::vector<PredictedSegment>& segments);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    int segment = 0;
    QString strategy;
    QString op;            // an op's name, or "step" for the whole step
    int instructions = 0;  // 0 for the step
    double measuredSeconds = 0, predictedSeconds = 0;
    bool measured = false;  // one of its instructions (or the step) was
    double error = 0;       // (predicted - measured) / measured
  };
  std::vector<Row> rows_;
};

}  // namespace parascope::ui
