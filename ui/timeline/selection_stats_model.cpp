// SelectionStatsModel; see selection_stats_model.h.
#include "ui/timeline/selection_stats_model.h"

#include "profiler/timeline/timeline_lod.h"

namespace parascope::ui {

SelectionStatsModel::SelectionStatsModel(QObject* parent) : QAbstractTableModel(parent) {}

void SelectionStatsModel::setStats(std::vector<profiler::NameStats> stats) {
  beginResetModel();
  stats_ = std::move(stats);
  endResetModel();
}

int SelectionStatsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(stats_.size());
}

int SelectionStatsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant SelectionStatsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const profiler::NameStats& s = stats_[static_cast<std::size_t>(index.row())];
  if (role == Qt::TextAlignmentRole && index.column() != Name) {
    return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
  }
  // A name elided in its column reads whole on hover.
  if (role == Qt::ToolTipRole && index.column() == Name) return QString::fromStdString(s.name);
  if (role != Qt::DisplayRole && role != Qt::UserRole) return {};
  const bool raw = role == Qt::UserRole;
  auto duration = [&](double ns) -> QVariant {
    if (raw) return ns;
    return QString::fromStdString(
        profiler::formatDuration(static_cast<std::int64_t>(std::llround(ns))));
  };
  switch (index.column()) {
    case Name: return QString::fromStdString(s.name);
    case Count: return static_cast<qlonglong>(s.count);
    case Total: return duration(static_cast<double>(s.totalNs));
    case Mean: return duration(s.meanNs);
    case Min: return duration(static_cast<double>(s.minNs));
    case Max: return duration(static_cast<double>(s.maxNs));
    case Share:
      return raw ? QVariant(s.share) : QVariant(QString::number(s.share * 100, 'f', 1) + "%");
    default: return {};
  }
}

QVariant SelectionStatsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[] = {"Name", "Count", "Total", "Mean", "Min", "Max", "Share"};
  return section >= 0 && section < ColumnCount ? QString(kNames[section]) : QVariant();
}

}  // namespace parascope::ui
