#include "ui/views/comm_matrix_model.h"

#include <QColor>
#include <algorithm>

#include "core/plan/memory_estimate.h"

namespace parascope::ui {

void CommMatrixModel::setMatrix(profiler::CommMatrix matrix) {
  beginResetModel();
  matrix_ = std::move(matrix);
  largest_ = 0;
  for (const auto& [pair, bytes] : matrix_.cells) largest_ = std::max(largest_, bytes);
  endResetModel();
}

int CommMatrixModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(matrix_.ranks.size());
}

int CommMatrixModel::columnCount(const QModelIndex& parent) const {
  return rowCount(parent);
}

QVariant CommMatrixModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const std::int64_t bytes = matrix_.at(matrix_.ranks[static_cast<std::size_t>(index.row())],
                                        matrix_.ranks[static_cast<std::size_t>(index.column())]);
  switch (role) {
    case Qt::DisplayRole: return QString::fromStdString(formatBytes(static_cast<double>(bytes)));
    case Qt::ToolTipRole: return tr("%1 bytes").arg(bytes);
    case Qt::UserRole: return QVariant::fromValue<qint64>(bytes);
    case Qt::TextAlignmentRole: return QVariant::fromValue(Qt::AlignCenter);
    case Qt::BackgroundRole: {
      if (largest_ <= 0 || bytes <= 0) return QColor(Qt::white);
      // White to deep blue with the share of the largest cell.
      const double t = static_cast<double>(bytes) / static_cast<double>(largest_);
      return QColor::fromRgbF(static_cast<float>(1 - 0.85 * t), static_cast<float>(1 - 0.6 * t),
                              1.0f);
    }
    case Qt::ForegroundRole: {
      const double t =
          largest_ > 0 ? static_cast<double>(bytes) / static_cast<double>(largest_) : 0;
      return QColor(t > 0.6 ? Qt::white : Qt::black);
    }
    default: return {};
  }
}

QVariant CommMatrixModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || section < 0 || section >= rowCount()) return {};
  const int rank = matrix_.ranks[static_cast<std::size_t>(section)];
  return orientation == Qt::Horizontal ? tr("to %1").arg(rank) : tr("from %1").arg(rank);
}

}  // namespace parascope::ui
