// Item model over the step breakdown (profiler/analysis/breakdown.h): one row per rank and step,
// the columns of `parascope-cli analyze` (milliseconds; overlap in percent). Qt::UserRole holds
// the raw number of each cell, so a sort proxy sorts numerically.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "profiler/analysis/breakdown.h"

namespace parascope::ui {

class BreakdownModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Rank, Step, Device, Window, Compute, Comm, Exposed, Other, Idle, Overlap, Count };

  explicit BreakdownModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setRows(std::vector<profiler::StepBreakdown> rows);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::vector<profiler::StepBreakdown> rows_;
};

}  // namespace parascope::ui
