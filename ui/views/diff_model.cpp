#include "ui/views/diff_model.h"

#include <cmath>

namespace parascope::ui {

void DiffModel::setRows(std::vector<profiler::DiffRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int DiffModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DiffModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : Count;
}

QVariant DiffModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= Count) return {};
  if (role == Qt::ToolTipRole && index.column() == Name)
    return QString::fromStdString(rows_[static_cast<std::size_t>(index.row())].name);
  if (role == Qt::ToolTipRole && index.column() == Ranks) {
    return QStringLiteral("The ranks that ran it in A and in B: its times are per such rank");
  }
  if (role != Qt::DisplayRole && role != Qt::UserRole && role != Qt::TextAlignmentRole) return {};
  const bool text = index.column() == Kind || index.column() == Name;
  if (role == Qt::TextAlignmentRole) {
    return QVariant::fromValue(text ? Qt::AlignLeft | Qt::AlignVCenter
                                    : Qt::AlignRight | Qt::AlignVCenter);
  }
  const profiler::DiffRow& r = rows_[static_cast<std::size_t>(index.row())];
  double value = 0;
  switch (index.column()) {
    case Kind: return r.communication ? QStringLiteral("operation") : QStringLiteral("span");
    case Name: return QString::fromStdString(r.name);
    case TimeA: value = r.aNs; break;
    case TimeB: value = r.bNs; break;
    case Delta: value = r.deltaNs(); break;
    case Ratio: {
      const double ratio = r.ratio();
      if (role == Qt::UserRole) return ratio;
      return std::isnan(ratio) ? QStringLiteral("—") : QString::number(ratio, 'f', 2) + u'×';
    }
    case Ranks:
      if (role == Qt::UserRole) return r.aRanks;
      return QStringLiteral("%1 / %2").arg(r.aRanks).arg(r.bRanks);
    default: return {};
  }
  return role == Qt::UserRole ? QVariant(value) : QVariant(QString::number(value / 1e6, 'f', 3));
}

QVariant DiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[Count] = {"Kind",     "Name",  "A ms",       "B ms",
                                     "B − A ms", "B / A", "Ranks A / B"};
  return section >= 0 && section < Count ? QString::fromUtf8(names[section]) : QVariant();
}

}  // namespace parascope::ui
