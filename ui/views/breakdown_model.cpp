#include "ui/views/breakdown_model.h"

namespace parascope::ui {

void BreakdownModel::setRows(std::vector<profiler::StepBreakdown> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int BreakdownModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int BreakdownModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : Count;
}

QVariant BreakdownModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= Count) return {};
  if (role != Qt::DisplayRole && role != Qt::UserRole && role != Qt::TextAlignmentRole) return {};
  if (role == Qt::TextAlignmentRole) {
    return QVariant::fromValue(index.column() == Device ? Qt::AlignLeft | Qt::AlignVCenter
                                                        : Qt::AlignRight | Qt::AlignVCenter);
  }
  const profiler::StepBreakdown& b = rows_[static_cast<std::size_t>(index.row())];
  const auto ns = [](std::int64_t v) { return static_cast<double>(v); };
  double value = 0;
  switch (index.column()) {
    case Rank: return b.rank;
    case Step: return b.step;
    case Device: return b.gpu ? QStringLiteral("gpu") : QStringLiteral("host");
    case Window: value = ns(b.windowNs()); break;
    case Compute: value = ns(b.computeNs); break;
    case Comm: value = ns(b.communicationNs); break;
    case Exposed: value = ns(b.exposedCommunicationNs); break;
    case Other: value = ns(b.otherNs); break;
    case Idle: value = ns(b.idleNs); break;
    case Overlap:
      return role == Qt::UserRole ? QVariant(b.overlapRatio)
                                  : QVariant(QString::number(100 * b.overlapRatio, 'f', 1) + '%');
    default: return {};
  }
  return role == Qt::UserRole ? QVariant(value) : QVariant(QString::number(value / 1e6, 'f', 3));
}

QVariant BreakdownModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[Count] = {"Rank",    "Step",       "Device",   "Window ms", "Compute ms",
                                     "Comm ms", "Exposed ms", "Other ms", "Idle ms",   "Overlap"};
  return section >= 0 && section < Count ? QString::fromLatin1(names[section]) : QVariant();
}

}  // namespace parascope::ui
