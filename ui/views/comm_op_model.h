// Item model over the per-operation communication totals (profiler/analysis/comm_volume.h):
// name, count, bytes sent (in binary units: KiB, MiB, GiB) and summed time as `parascope-cli
// analyze` computes them, and the bandwidth they imply (bytes sent / summed time, GB/s).
// Qt::UserRole holds raw numbers.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "profiler/analysis/comm_volume.h"

namespace parascope::ui {

class CommOpModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Calls, Bytes, TimeMs, Bandwidth, Count };

  explicit CommOpModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setOps(std::vector<profiler::OpTotal> ops);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::vector<profiler::OpTotal> ops_;
};

}  // namespace parascope::ui
