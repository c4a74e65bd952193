// Item model over a box selection's per-name statistics (selection_stats.h): one row per span
// name with count, total, mean, min, max and share of the selection's span time. Replaced whole on
// each selection; views only read it.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "profiler/timeline/selection_stats.h"

namespace parascope::ui {

class SelectionStatsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Count, Total, Mean, Min, Max, Share, ColumnCount };
  // Qt::UserRole gives the raw number (ns, count or fraction) for sorting and tests.
  explicit SelectionStatsModel(QObject* parent = nullptr);

  void setStats(std::vector<profiler::NameStats> stats);
  const std::vector<profiler::NameStats>& stats() const { return stats_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::vector<profiler::NameStats> stats_;
};

}  // namespace parascope::ui
