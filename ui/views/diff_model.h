// Item model over a diff of two traces or segments (trace_diff.h): one row per kernel or span
// name and per communication operation with its time in A and in B (ms per rank that ran it and
// per step), the delta B - A, the ratio B / A and the ranks that ran it on each side. Qt::UserRole
// holds the raw number of each cell (ns, ratio, A's ranks), so a sort proxy sorts numerically.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "profiler/analysis/trace_diff.h"

namespace parascope::ui {

class DiffModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Kind, Name, TimeA, TimeB, Delta, Ratio, Ranks, Count };

  explicit DiffModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setRows(std::vector<profiler::DiffRow> rows);
  const std::vector<profiler::DiffRow>& rows() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::vector<profiler::DiffRow> rows_;
};

}  // namespace parascope::ui
