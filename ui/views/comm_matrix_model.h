// Item model over the communication matrix (profiler/analysis/comm_volume.h): rank x rank, row
// = sender, column = receiver, bytes sent in binary units (KiB, MiB, GiB: formatBytes, as the
// strategy panel's memory) with the exact count as tooltip; the background is a heat map scaled
// to the largest cell, Qt::UserRole the raw bytes.
#pragma once

#include <QAbstractTableModel>

#include "profiler/analysis/comm_volume.h"

namespace parascope::ui {

class CommMatrixModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  explicit CommMatrixModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setMatrix(profiler::CommMatrix matrix);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  profiler::CommMatrix matrix_;
  std::int64_t largest_ = 0;
};

}  // namespace parascope::ui
