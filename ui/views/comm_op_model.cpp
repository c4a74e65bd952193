#include "ui/views/comm_op_model.h"

#include "core/plan/memory_estimate.h"

namespace parascope::ui {

void CommOpModel::setOps(std::vector<profiler::OpTotal> ops) {
  beginResetModel();
  ops_ = std::move(ops);
  endResetModel();
}

int CommOpModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(ops_.size());
}

int CommOpModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : Count;
}

QVariant CommOpModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= Count) return {};
  const profiler::OpTotal& op = ops_[static_cast<std::size_t>(index.row())];
  // In the binary units of the bytes beside it (and of the strategy panel's memory), so that
  // bytes / time read off the table is the figure shown.
  const double gibps = op.timeNs > 0 ? static_cast<double>(op.bytes) /
                                           (static_cast<double>(op.timeNs) * 1e-9) / (1 << 30)
                                     : 0;
  if (role == Qt::UserRole) {
    switch (index.column()) {
      case Name: return QString::fromStdString(op.name);
      case Calls: return QVariant::fromValue<qint64>(op.count);
      case Bytes: return QVariant::fromValue<qint64>(op.bytes);
      case TimeMs: return QVariant::fromValue<qint64>(op.timeNs);
      case Bandwidth: return gibps;
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Name: return QString::fromStdString(op.name);
    case Calls: return QString::number(op.count);
    case Bytes: return QString::fromStdString(formatBytes(static_cast<double>(op.bytes)));
    case TimeMs: return QString::number(static_cast<double>(op.timeNs) / 1e6, 'f', 3);
    case Bandwidth: return QString::number(gibps, 'f', 3);
    default: return {};
  }
}

QVariant CommOpModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[Count] = {"Operation", "Count", "Bytes sent", "Time ms",
                                     "GiB/s (bytes / time)"};
  return section >= 0 && section < Count ? QString::fromLatin1(names[section]) : QVariant();
}

}  // namespace parascope::ui
